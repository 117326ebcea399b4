import ArgumentParser
import Foundation
import Shared

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald profile export PROJECT CUSTOM_ID`: everything both services hold of a person, as NDJSON (docs/data-rights.md,
/// "Export").
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Print everything the services hold of a profile, as NDJSON (one line per stored row).",
        discussion: """
            Asks every instance of the orchestrator and the notifier that owns a partition (as herald.owners \
            announces them, or the URLs given) for the rows its partitions hold of the profile \
            (GET /v1/profiles/{project}/{custom_id}/export, an operator endpoint: HERALD_OPERATOR_TOKEN is sent \
            when set) and prints their lines: {"service", "partition", "table", "row"}. Push tokens are masked to \
            their last 6 characters unless --tokens. Exit status 1 when no instance holds the profile.
            """)

    @OptionGroup var cluster: ClusterOptions
    @OptionGroup var person: PersonArguments

    @Flag(help: "Print push tokens whole.")
    var tokens = false

    @Option(help: "An orchestrator's URL, instead of those herald.owners announces (repeat for several).")
    var orchestrator: [String] = []

    @Option(help: "A notifier's URL, instead of those herald.owners announces (repeat for several).")
    var notifier: [String] = []

    func run() async throws {
        var instances = orchestrator.map { ("orchestrator", $0) } + notifier.map { ("notifier", $0) }
        if instances.isEmpty {
            let announced = try await CompactedTopicReader.latest(.owners, client: try cluster.client())
                .compactMap { try? Wire.decode(OwnerAnnouncement.self, from: $0.value) }
            instances = Set(announced.map { "\($0.service) \($0.url)" }).sorted().map { line in
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                return (parts[0], parts[1])
            }
            guard !instances.isEmpty else { throw fail("no instance announced on herald.owners: name them with --orchestrator and --notifier") }
        }
        let (project, customID) = (person.project, person.customID)
        let path = "/v1/profiles/\(Self.encoded(project))/\(Self.encoded(customID))/export" + (tokens ? "?tokens=true" : "")
        var found = 0
        for (service, base) in instances {
            guard let url = URL(string: base.trimmingCharacters(in: CharacterSet(charactersIn: "/")) + path) else {
                throw fail("\(service) \(base): not a URL")
            }
            var request = URLRequest(url: url)
            if let token = ProcessInfo.processInfo.environment["HERALD_OPERATOR_TOKEN"], !token.isEmpty {
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            if status == 404 { continue }
            guard status == 200 else { throw fail("\(service) \(base) answered \(status): \(String(decoding: data.prefix(300), as: UTF8.self))") }
            let text = String(decoding: data, as: UTF8.self)
            for line in text.split(separator: "\n") where !line.isEmpty {
                print(line)
                found += 1
            }
        }
        guard found > 0 else { throw fail("no instance holds \(ProfileKey.profile(project, customID))") }
    }

    static func encoded(_ part: String) -> String {
        part.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? part
    }
}
