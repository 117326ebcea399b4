import ServiceSupport
import Shared

@main
enum NotifierMain {
    static func main() async {
        await ServiceMain.run(
            service: "notifier", parse: NotifierConfig.fromEnvironment, common: \.common, build: Notifier.buildServices)
    }
}
