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
            alias-only one count). Asks one instance of the orchestrator (as herald.owners announces them, or the \
            URL given) its operator endpoint GET /v1/export/{project}?…, which answers for every partition of both \
            services (HERALD_OPERATOR_TOKEN is sent when set), and prints its lines: {"service", "partition", \
            "profile_key", "table", "row"}. Push tokens are masked to their last 6 characters unless --tokens. Asked \
            again while a partition is not answered (503), up to --timeout. Exit status 1 when Herald holds nothing \
            of the person.
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

    @Option(help: "Seconds to keep asking while a partition is not answered.")
    var timeout: Double = 30

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
        var urls = orchestrator
        if urls.isEmpty {
            let announced = try await CompactedTopicReader.latest(.owners, client: try cluster.client())
                .compactMap { try? Wire.decode(OwnerAnnouncement.self, from: $0.value) }
            urls = Set(announced.filter { $0.service == "orchestrator" }.map(\.url)).sorted()
            guard !urls.isEmpty else { throw fail("no orchestrator announced on herald.owners: name one with --orchestrator") }
        }
        let extra = tokens ? [("tokens", "true")] : []
        let deadline = Date().addingTimeInterval(timeout)
        var attempt = 0
        while true {
            let url = urls[attempt % urls.count]
            attempt += 1
            switch try await Self.export(base: url, project: project, query: identifierQuery + extra) {
            case .lines(let lines):
                for line in lines { print(line) }
                return
            case .nothing:
                throw fail("Herald holds nothing of \(identifierQuery.map { "\($0.0)=\($0.1)" }.joined(separator: " ")) in \(project)")
            case .unavailable(let reason):
                guard Date() < deadline else { throw fail("not answered within \(timeout) s: \(reason)") }
                FileHandle.standardError.write(Data("\(url): \(reason); asked again\n".utf8))
                try await Task.sleep(for: .seconds(1))
            }
        }
    }

    enum Answer {
        case lines([String])
        case nothing
        case unavailable(String)
    }

    /// What the orchestrator at `base` answers: the lines, nothing (404), or not now (503, or no answer).
    static func export(base: String, project: String, query: [(String, String)]) async throws -> Answer {
        var components = URLComponents(string: base.trimmingCharacters(in: CharacterSet(charactersIn: "/")))
        components?.percentEncodedPath = "/v1/export/" + (project.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? project)
        components?.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) }
        // `+` is a space to many servers' query parsers: spelled out (a phone number starts with one).
        let encoded = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        components?.percentEncodedQuery = encoded
        guard let url = components?.url else { throw fail("\(base): not a URL") }
        var request = URLRequest(url: url)
        if let token = ProcessInfo.processInfo.environment["HERALD_OPERATOR_TOKEN"], !token.isEmpty {
            request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
        }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await URLSession.shared.data(for: request)
        } catch {
            return .unavailable("no answer (\(error.localizedDescription))")
        }
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let text = String(decoding: data, as: UTF8.self)
        switch status {
        case 200: return .lines(text.split(separator: "\n").map(String.init).filter { !$0.isEmpty })
        case 404: return .nothing
        case 503: return .unavailable(String(text.prefix(300)))
        default: throw fail("\(base) answered \(status): \(text.prefix(300))")
        }
    }
}
