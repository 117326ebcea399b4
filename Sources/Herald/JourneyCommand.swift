import ArgumentParser
import Foundation
import Shared

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `herald journey show`: who is where in a journey (docs/journeys.md, "Who is where"), from an orchestrator, over
/// every partition.
struct JourneyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "journey", abstract: "Show who is where in a journey.", subcommands: [Show.self])

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print how many profiles wait at each node of a journey, or list those at one node a page at a time.",
            discussion: """
                Asks an orchestrator (--orchestrator; HERALD_OPERATOR_TOKEN when the services have one), which asks the \
                owners of the partitions it does not run. Without --node: one line per version and node with the \
                profiles in flight there. With --node: the profiles at that node (of every version), by profile key, \
                --limit at a time (1 to 1000); the last line says how to ask for the next page (--after).
                """)

        @Argument(help: "PROJECT/JOURNEY, such as demo/welcome-series.")
        var journey: String

        @Option(help: "List the profiles at this node.")
        var node: String?

        @Option(help: "With --node: the page after this profile key.")
        var after: String?

        @Option(help: "With --node: how many profiles per page (1 to 1000).")
        var limit = 100

        @Option(help: "An orchestrator's address.")
        var orchestrator = "http://127.0.0.1:8081"

        @Flag(help: "The orchestrator's JSON answer instead of text.")
        var json = false

        func validate() throws {
            guard journey.split(separator: "/").count == 2 else { throw ValidationError("expected PROJECT/JOURNEY, found \(journey)") }
            guard (1...1000).contains(limit) else { throw ValidationError("--limit: 1 to 1000") }
            if node == nil, after != nil { throw ValidationError("--after pages the profiles of a --node") }
        }

        /// A number's text as the answer wrote it.
        static func number(_ value: JSONValue?) -> String {
            if case .number(let text)? = value { text } else { "0" }
        }

        func run() async throws {
            let parts = journey.split(separator: "/").map { String($0).addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "" }
            let base = orchestrator.hasSuffix("/") ? String(orchestrator.dropLast()) : orchestrator
            var address = "\(base)/v1/journeys/\(parts[0])/\(parts[1])"
            if let node {
                var query = URLComponents()
                query.queryItems = [URLQueryItem(name: "limit", value: String(limit))] + (after.map { [URLQueryItem(name: "after", value: $0)] } ?? [])
                address += "/nodes/\(node.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? "")?\(query.percentEncodedQuery ?? "")"
            }
            guard let url = URL(string: address) else { throw ValidationError("--orchestrator: not a URL: \(orchestrator)") }
            var request = URLRequest(url: url, timeoutInterval: 30)
            if let token = ProcessInfo.processInfo.environment["HERALD_OPERATOR_TOKEN"], !token.isEmpty {
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
            }
            let (data, response) = try await URLSession.shared.data(for: request)
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            guard status == 200 else { throw ValidationError("the orchestrator answered \(status): \(String(decoding: data, as: UTF8.self))") }
            if json {
                print(String(decoding: data, as: UTF8.self))
                return
            }
            let answer = try JSONParser.parse(Array(data))
            if node == nil {
                print("\(journey)  version \(answer["version"]?.stringValue ?? "?")  \(Self.number(answer["waiting"])) in flight")
                if case .array(let nodes)? = answer["nodes"] {
                    for item in nodes {
                        print("  \(item["version"]?.stringValue ?? "")  \((item["node"]?.stringValue ?? "").padding(toLength: 24, withPad: " ", startingAt: 0)) \(Self.number(item["count"]))")
                    }
                }
                return
            }
            if case .array(let instances)? = answer["instances"] {
                for item in instances {
                    print(
                        "\(item["profile_key"]?.stringValue ?? "")  version \(item["version"]?.stringValue ?? "")  since \(item["since"]?.stringValue ?? "")  entered \(item["entered_at"]?.stringValue ?? "")"
                    )
                }
            }
            if let next = answer["next"]?.stringValue {
                print("next page: herald journey show \(journey) --node \(node ?? "") --after \(next) --limit \(limit)")
            }
        }
    }
}
