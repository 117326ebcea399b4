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
        abstract: "Print everything the services hold of a person, as NDJSON (one line per stored row).",
        discussion: """
            Finds the person by custom ID, email address, phone number, installation or Braze alias: every profile \
            the identifier reaches (two users may share an address; an installation's anonymous profile and an \
            alias-only one count). Asks every instance of the orchestrator that owns partitions (as herald.owners \
            announces them, or the URLs given) for those profiles' rows (GET /v1/export/{project}?…, an operator \
            endpoint: HERALD_OPERATOR_TOKEN is sent when set), then every notifier for the same profiles, and prints \
            their lines: {"service", "partition", "profile_key", "table", "row"}. Push tokens are masked to their \
            last 6 characters unless --tokens. Exit status 1 when no instance holds anything of the person.
            """)

    @OptionGroup var cluster: ClusterOptions

    @Argument(help: "The project id.")
    var project: String

    @Argument(help: "The custom user ID (or name the person with one of the options).")
    var customID: String?

    @Option(help: "The person's email address.")
    var email: String?

    @Option(help: "The person's phone number (E.164).")
    var phone: String?

    @Option(help: "An installation id: the profiles that hold it, and its anonymous profile.")
    var installation: String?

    @Option(help: "A Braze alias, as LABEL:NAME.")
    var alias: String?

    @Flag(help: "Print push tokens whole.")
    var tokens = false

    @Option(help: "An orchestrator's URL, instead of those herald.owners announces (repeat for several).")
    var orchestrator: [String] = []

    @Option(help: "A notifier's URL, instead of those herald.owners announces (repeat for several).")
    var notifier: [String] = []

    func validate() throws {
        let named = [customID, email, phone, installation, alias].compactMap { $0 }
        guard named.count == 1 else { throw ValidationError("name the person once: a custom ID, --email, --phone, --installation or --alias") }
        if let alias, alias.split(separator: ":", maxSplits: 1).count != 2 { throw ValidationError("--alias is LABEL:NAME, found \"\(alias)\"") }
    }

    /// The identifier as the orchestrator's export takes it.
    var identifierQuery: [(String, String)] {
        if let customID { return [("custom_id", customID)] }
        if let email { return [("email", email)] }
        if let phone { return [("phone", phone)] }
        if let installation { return [("installation_id", installation)] }
        let parts = (alias ?? "").split(separator: ":", maxSplits: 1).map(String.init)
        return [("alias_label", parts[0]), ("alias_name", parts[1])]
    }

    func run() async throws {
        var instances: [(service: String, url: String)] = orchestrator.map { ("orchestrator", $0) } + notifier.map { ("notifier", $0) }
        if instances.isEmpty {
            let announced = try await CompactedTopicReader.latest(.owners, client: try cluster.client())
                .compactMap { try? Wire.decode(OwnerAnnouncement.self, from: $0.value) }
            instances = Set(announced.map { "\($0.service) \($0.url)" }).sorted().map { line in
                let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
                return (parts[0], parts[1])
            }
            guard !instances.isEmpty else { throw fail("no instance announced on herald.owners: name them with --orchestrator and --notifier") }
        }
        let extra = tokens ? [("tokens", "true")] : []
        var lines: [String] = []
        for (service, base) in instances where service == "orchestrator" {
            lines += try await Self.export(service: service, base: base, project: project, query: identifierQuery + extra)
        }
        // The notifiers, for the profiles the orchestrators found (and the address or number, which their contacts hold).
        let keys = Set(lines.compactMap { try? JSONParser.parse(Array($0.utf8))["profile_key"]?.stringValue })
        var notifierQuery = keys.sorted().map { ("profile_key", $0) }
        if let email { notifierQuery.append(("email", email)) }
        if let phone { notifierQuery.append(("phone", phone)) }
        if !notifierQuery.isEmpty {
            for (service, base) in instances where service == "notifier" {
                lines += try await Self.export(service: service, base: base, project: project, query: notifierQuery + extra)
            }
        }
        guard !lines.isEmpty else { throw fail("no instance holds anything of \(identifierQuery.map { "\($0.0)=\($0.1)" }.joined(separator: " ")) in \(project)") }
        for line in lines { print(line) }
    }

    /// The lines one instance answers (none on 404).
    static func export(service: String, base: String, project: String, query: [(String, String)]) async throws -> [String] {
        var components = URLComponents(string: base.trimmingCharacters(in: CharacterSet(charactersIn: "/")))
        components?.percentEncodedPath = "/v1/export/" + (project.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? project)
        components?.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) }
        // `+` is a space to many servers' query parsers: spelled out (a phone number starts with one).
        let encoded = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        components?.percentEncodedQuery = encoded
        guard let url = components?.url else { throw fail("\(service) \(base): not a URL") }
        var request = URLRequest(url: url)
        if let token = ProcessInfo.processInfo.environment["HERALD_OPERATOR_TOKEN"], !token.isEmpty {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        if status == 404 { return [] }
        guard status == 200 else { throw fail("\(service) \(base) answered \(status): \(String(decoding: data.prefix(300), as: UTF8.self))") }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
    }
}
