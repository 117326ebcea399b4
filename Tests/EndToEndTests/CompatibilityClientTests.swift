import Foundation
import HeraldTestSupport
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The vendors' own client libraries, unmodified, against a running ingest and orchestrator (issue 22, item 3):
/// braze-client's `/users/track`, Segment's analytics-python and RudderStack's rudder-sdk-python (gzip bodies), driven
/// by `scripts/compat-clients` from `.venv` (scripts/setup.sh), then the profiles read back from the orchestrator.
@Suite("Braze, Segment and RudderStack clients end to end", .serialized, .timeLimit(.minutes(5)))
struct CompatibilityClientTests {
    static let python = repositoryFile(".venv/bin/python")
    static let driver = repositoryFile("scripts/compat-clients")

    /// A profile (or an alias's home) as the orchestrator answers it, once `ready` says it is complete.
    static func profile(_ port: Int, _ path: String, until ready: @escaping @Sendable (JSONValue) -> Bool) async throws -> JSONValue {
        let last = Locked<JSONValue?>(nil)
        do {
            try await waitUntil("\(path) to be applied") {
                guard let (status, body) = try? await httpGet("http://127.0.0.1:\(port)/v1/\(path)"), status == 200,
                    let json = try? JSONParser.parse(Array(body.utf8))
                else { return false }
                last.withLock { $0 = json }
                return ready(json)
            }
        } catch {
            Issue.record("\(path): \(last.withLock { $0 }.map { String(decoding: $0.serialized, as: UTF8.self) } ?? "absent")")
            throw error
        }
        return last.withLock { $0 }!
    }

    static func count(_ profile: JSONValue, _ event: String) -> Int? {
        if case .number(let text)? = profile["events"]?["e.\(event)"]?["count"] { Int(text) } else { nil }
    }

    static func installations(_ profile: JSONValue) -> [String] {
        guard case .array(let items)? = profile["installations"] else { return [] }
        return items.compactMap { $0["installation_id"]?.stringValue }
    }

    @Test("each library's users, attributes, events, purchases and aliases arrive as it sent them")
    func clients() async throws {
        #expect(FileManager.default.isExecutableFile(atPath: Self.python), "run scripts/setup.sh: \(Self.python) is missing")
        let (cluster, ingest, ingestPort) = try await startIngest()
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-compat-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (orchestrator, port) = try await OrchestratorEndToEndTests.start(cluster, data: data)
        for library in ["braze", "segment", "rudder"] {
            let (status, output) = try await runCommand(Self.python, [Self.driver, library, "http://127.0.0.1:\(ingestPort)"])
            #expect(status == 0, "\(library): \(output)")
        }

        // braze-client: attributes with Braze's standard names, increments across two calls, an array edit, events,
        // a purchase counted three times with its revenue in USD at the project's rate, an alias-only user.
        let ann = try await Self.profile(port, "profiles/demo/bz-1") {
            $0["custom"]?["c.visits"] == .number("3") && Self.count($0, "SONG_PLAYED") == 2 && Self.count($0, "PURCHASE") == 3
                && $0["custom"]?["c.favorite_colors"] == .array([.string("blue"), .string("green")])
        }
        #expect(ann["email"]?["address"] == .string("ann@example.com") && ann["email"]?["marketing"] == .string("subscribed"))
        #expect(ann["custom"]?["c.first_name"] == .string("Ann") && ann["custom"]?["c.home_city"] == .string("Lyon"))
        #expect(ann["purchases"]?["sku-1"]?["count"] == .number("3") && ann["purchases"]?["sku-1"]?["revenue_usd"] == .number("32.4"))
        #expect(ann["events"]?["e.SONG_PLAYED"]?["attributes"]?["genre.s"] == .string("rock"))
        let lead = try await Self.profile(port, "aliases/demo/crm/lead-7") { Self.count($0, "LEAD_SCORED") == 1 }
        #expect(lead["custom"]?["c.plan"] == .string("trial") && lead["events"]?["e.LEAD_SCORED"]?["attributes"]?["score.i"] == .number("42"))

        // Segment's and RudderStack's libraries: traits mapped, events named, Order Completed as purchases, anonymous
        // history merged into a new user on identify, and an anonymous id aliased to a user.
        for prefix in ["sg", "rd"] {
            let sam = try await Self.profile(port, "profiles/demo/\(prefix)-1") {
                Self.count($0, "SONG_PLAYED") == 2 && Self.count($0, "PURCHASE") == 3
            }
            #expect(sam["email"]?["address"] == .string("\(prefix)@example.com"))
            #expect(sam["custom"]?["c.first_name"] == .string("Sam") && sam["custom"]?["c.address_city"] == .string("Paris"))
            #expect(sam["native"]?["b.language"] == .string("fr") && sam["native"]?["b.region"] == .string("FR"))
            #expect(sam["purchases"]?["p-1"]?["count"] == .number("2") && sam["purchases"]?["p-2"]?["revenue_usd"] == .number("7.5"))
            let merged = try await Self.profile(port, "profiles/demo/\(prefix)-2") {
                Self.count($0, "VIEWED_PRICING") == 1 && Self.count($0, "PAGE_VIEWED") == 1 && $0["custom"]?["c.plan"] == .string("pro")
            }
            #expect(Self.installations(merged) == ["\(prefix)-anon"])
            let aliased = try await Self.profile(port, "profiles/demo/\(prefix)-3") { Self.count($0, "VIEWED_PRICING") == 1 }
            #expect(Self.installations(aliased) == ["\(prefix)-anon-b"])
            // The website's public key: the signed messages arrive, the unsigned one and the email do not.
            let web = try await Self.profile(port, "profiles/demo/\(prefix)-web") {
                Self.count($0, "SIGNED_IN") == 1 && $0["custom"]?["c.plan"] == .string("web")
            }
            #expect(Self.count(web, "FORGED") == nil && web["email"]?["address"] != .string("evil@example.com"))
        }
        // The anonymous profiles are gone once merged.
        #expect(try await httpGet("http://127.0.0.1:\(port)/v1/installations/demo/sg-anon").0 == 404)

        ingest.signal(SIGTERM)
        orchestrator.signal(SIGTERM)
        #expect(try await ingest.waitForExit() == 0)
        #expect(try await orchestrator.waitForExit() == 0)
        await cluster.shutdown()
    }
}
