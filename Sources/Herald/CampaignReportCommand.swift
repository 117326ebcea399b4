import ArgumentParser
import Foundation
import OrchestratorDomain
import Shared

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald campaign report`: a campaign's experiment, per variant and for the control group (docs/measurement.md,
/// "The report"), from the orchestrator's figures summed over every partition.
struct CampaignReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Print a campaign's experiment: assigned, converted, revenue, and each variant's uplift against the control group.",
        discussion: """
            Asks an orchestrator (--orchestrator; HERALD_OPERATOR_TOKEN when the services have one) for the campaign's \
            figures over every partition, and prints, for the running experiment version (or --version): per arm, the \
            profiles assigned, converted (the first conversion) and the rate, the revenue; per variant, the difference \
            of its rate and the control's with a 95 % interval and the p-value, Holm-corrected across the variants; and \
            the sample-ratio check of the split against the weights. --json prints the same as JSON, --html as one \
            self-contained page with a chart per figure (redirect it to a file).
            """)

    @Argument(help: "The project id.")
    var project: String

    @Argument(help: "The campaign id.")
    var campaign: String

    @Option(help: "An orchestrator's address.")
    var orchestrator = "http://127.0.0.1:8081"

    @Option(help: "The experiment version (default: the running one).")
    var version: String?

    @Flag(help: "JSON instead of text.")
    var json = false

    @Flag(help: "A self-contained HTML page instead of text: a chart per figure, each arm with its 95 % interval.")
    var html = false

    func validate() throws {
        if json && html { throw ValidationError("--json and --html: choose one") }
    }

    func run() async throws {
        let base = orchestrator.hasSuffix("/") ? String(orchestrator.dropLast()) : orchestrator
        guard let url = URL(string: "\(base)/v1/campaigns/\(project)/\(campaign)/experiment") else {
            throw ValidationError("--orchestrator: not a URL: \(orchestrator)")
        }
        var request = URLRequest(url: url, timeoutInterval: 10)
        if let token = ProcessInfo.processInfo.environment["HERALD_OPERATOR_TOKEN"], !token.isEmpty {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        guard status == 200 else {
            throw ValidationError("the orchestrator answered \(status): \(String(decoding: data, as: UTF8.self))")
        }
        let report = try CampaignReport(answer: try ExperimentAnswer.decode(Array(data)), version: version)
        if html {
            print(CampaignReportPage(report: report).html, terminator: "")
        } else {
            print(json ? String(decoding: report.json.serialized, as: UTF8.self) : report.text)
        }
    }
}
