import ServiceSupport
import Shared

@main
enum NotifierMain {
    static func main() async {
        await ServiceMain.run(
            service: "notifier", parse: NotifierSettings.fromEnvironment, common: \.service.common,
            // A stop waits for the provider calls out (the drain), then hands the partitions over.
            shutdownFloor: { $0.drainTimeout + .seconds(10) }, build: Notifier.buildServices)
    }
}
