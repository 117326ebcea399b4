import ServiceSupport
import Shared

@main
enum OrchestratorMain {
    static func main() async {
        await ServiceMain.run(
            service: "orchestrator", parse: OrchestratorConfig.fromEnvironment, common: \.service.common,
            build: Orchestrator.buildServices)
    }
}
