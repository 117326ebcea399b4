import ServiceSupport
import Shared

@main
enum NotifierMain {
    static func main() async {
        await ServiceMain.run(
            service: "notifier", parse: NotifierSettings.fromEnvironment, common: \.service.common, build: Notifier.buildServices)
    }
}
