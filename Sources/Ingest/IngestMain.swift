import ServiceSupport
import Shared

@main
enum IngestMain {
    static func main() async {
        await ServiceMain.run(
            service: "ingest", parse: IngestConfig.fromEnvironment, common: \.common, build: Ingest.buildServices)
    }
}
