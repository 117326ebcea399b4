import Foundation
import HeraldTestSupport
import Shared
import Testing

/// A journey through the processes (issue 59, items 3 and 6): users entered through the ingest, two orchestrators, and
/// `herald journey show` counting them per node and paging those at a node over every partition, from either instance;
/// a journey's first message rendered with the address the previous request set; and a journey entered by the API
/// whose update node's write goes round through the broker before its email renders.
@Suite("Journey show", .timeLimit(.minutes(5)))
struct JourneyShowTests {
    static let users = (0..<24).map { "j\($0)" }

    static func configDirectory() throws -> String {
        let directory = try scratchDirectory("herald-journey-config")
        let text = StateMoveTests.projectAndApp + """
            ---
            kind: template
            id: hello
            project: demo
            channel: push
            variants: {default: {body: 'Hello {{ entry.plan | default: "there" }}'}}
            ---
            kind: journey
            id: welcome
            project: demo
            entry: {event: signup}
            start: hello
            nodes:
              hello: {message: {channel: push, template: hello}, next: wait-buy}
              wait-buy:
                wait:
                  branches: [{event: bought, next: done}]
                  timeout: {after: 1d, next: done}
              done: {exit: {}}
            ---
            kind: template
            id: mail-hello
            project: demo
            channel: email
            variants: {default: {subject: Welcome, text: 'Hello {{${email_address}}}'}}
            ---
            kind: journey
            id: joined
            project: demo
            type: transactional
            entry: {event: joined}
            start: mail
            nodes:
              mail: {message: {channel: email, template: mail-hello}, next: done}
              done: {exit: {}}
            ---
            kind: template
            id: mail-plan
            project: demo
            channel: email
            variants: {default: {subject: Trial, text: 'Plan {{ c.plan }}, code {{ entry.code }}'}}
            ---
            kind: journey
            id: trial
            project: demo
            type: transactional
            entry: {api: true}
            start: upgrade
            nodes:
              upgrade: {update: {attributes: {plan: gold}}, next: mail}
              mail: {message: {channel: email, template: mail-plan}, next: done}
              done: {exit: {}}
            """
        try text.write(toFile: directory + "/demo.yaml", atomically: true, encoding: .utf8)
        return directory
    }

    @Test("two orchestrators: the profiles waiting at each node, counted and paged over every partition, from either instance")
    func twoInstances() async throws {
        let config = try Self.configDirectory()
        defer { try? FileManager.default.removeItem(atPath: config) }
        let (cluster, ingest, ingestPort) = try await startIngest(config: config)
        let (orchestrators, directories) = try await OrchestratorEndToEndTests.startTwo(cluster, prefix: "herald-journey")
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        // Every user signs up; one in three buys afterwards (a request of its own: out of the wait at once).
        var waiting: Set<String> = []
        for (index, user) in Self.users.enumerated() {
            let (status, body) = try await httpPost(
                "http://127.0.0.1:\(ingestPort)/v1/app/events", headers: signedAppHeaders(user),
                body: #"{"installation_id":"I-\#(user)","custom_id":"\#(user)","events":[{"name":"signup","id":"s-\#(user)"}]}"#)
            #expect(status == 200, "\(body)")
            if index % 3 == 0 {
                let (status, body) = try await httpPost(
                    "http://127.0.0.1:\(ingestPort)/v1/app/events", headers: signedAppHeaders(user),
                    body: #"{"installation_id":"I-\#(user)","custom_id":"\#(user)","events":[{"name":"bought","id":"b-\#(user)"}]}"#)
                #expect(status == 200, "\(body)")
            } else {
                waiting.insert("demo/\(user)")
            }
        }
        let herald = binDirectory.appendingPathComponent("herald").path
        @Sendable func show(_ port: Int, _ extra: [String] = []) async throws -> JSONValue? {
            let (status, output) = try await runCommand(
                herald, ["journey", "show", "demo/welcome", "--orchestrator", "http://127.0.0.1:\(port)", "--json"] + extra)
            return status == 0 ? try? JSONParser.parse(Array(output.utf8)) : nil
        }
        let ports = orchestrators.map(\.1)
        let expected = waiting.count
        try await waitUntil("both instances to count every user waiting", timeout: .seconds(60)) {
            for port in ports {
                let answer = try await show(port)
                guard answer?["waiting"] == .number(String(expected)), answer?["nodes"]?[0]?["node"] == .string("wait-buy") else { return false }
            }
            return true
        }
        // The gauge, each instance its own partitions' share: the two add up to every user waiting, at that node.
        try await waitUntil("herald_journey_waiting of both instances to add up", timeout: .seconds(60)) {
            var sum = 0.0
            for port in ports { sum += await MemoryBenchmark.counter(port, "herald_journey_waiting", #"node="wait-buy""#) }
            return sum == Double(expected)
        }
        // Pages of 5 from the other instance, following `next`: each waiting user once, in key order.
        var listed: [String] = []
        var after: String?
        for _ in 0..<10 {
            let page = try #require(try await show(ports[1], ["--node", "wait-buy", "--limit", "5"] + (after.map { ["--after", $0] } ?? [])))
            guard case .array(let instances)? = page["instances"] else { break }
            listed += instances.compactMap { $0["profile_key"]?.stringValue }
            after = page["next"]?.stringValue
            if after == nil { break }
        }
        #expect(listed == waiting.sorted())
        // The text form, and a node nobody is at.
        let (status, text) = try await runCommand(herald, ["journey", "show", "demo/welcome", "--orchestrator", "http://127.0.0.1:\(ports[0])"])
        #expect(status == 0 && text.contains("wait-buy") && text.contains("\(expected) in flight"), "\(text)")
        let empty = try await show(ports[0], ["--node", "hello"])
        #expect(empty?["instances"] == .array([]) && empty?["next"] == nil, "\(String(describing: empty))")
        let (missingStatus, missing) = try await runCommand(
            herald, ["journey", "show", "demo/nope", "--orchestrator", "http://127.0.0.1:\(ports[0])"])
        #expect(missingStatus != 0 && missing.contains("404"), "\(missing)")

        // The status board's journey table (one instance's counters: the entries its partitions applied).
        let (_, board) = try await runCommand(
            herald, ["status", "--orchestrator", "http://127.0.0.1:\(ports[0])", "--ingest", "http://127.0.0.1:\(ingestPort)", "--notifier", "http://127.0.0.1:1"])
        #expect(board.contains("JOURNEY") && board.contains("demo/welcome  entered") && board.contains("hello "), "\(board)")
        #expect(board.contains("waiting now: wait-buy "), "\(board)")
        // Read-your-writes at entry (item 3): the address set by one request, the entry event sent by the next; the
        // first message renders with it (strict: without it, it would be a dead letter, never a send).
        let rest = ["Authorization": "Bearer rest_demo_0123456789abcdef"]
        for index in 0..<6 {
            let (set, setBody) = try await httpPost(
                "http://127.0.0.1:\(ingestPort)/v1/profiles/update", headers: rest,
                body: #"[{"identifiers":{"custom_id":"m\#(index)"},"attributes":{"$email_address":"m\#(index)@example.com"}}]"#)
            #expect(set == 200, "\(setBody)")
            let (joined, joinedBody) = try await httpPost(
                "http://127.0.0.1:\(ingestPort)/v1/profiles/update", headers: rest,
                body: #"[{"identifiers":{"custom_id":"m\#(index)"},"events":[{"name":"joined"}]}]"#)
            #expect(joined == 200, "\(joinedBody)")
        }
        // Entered by the API (issue 59, item 1): the update node's write goes through herald.ingest and back to the
        // profile's partition, and only then the email renders, with the plan it set and the call's entry property.
        let (entered, enteredBody) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/journeys/trigger", headers: rest,
            body: #"{"journey_id":"trial","entry_properties":{"code":"T-1"},"recipients":[{"custom_id":"m0"},{"custom_id":"m1","entry_properties":{"code":"T-2"}}]}"#)
        #expect(entered == 200, "\(enteredBody)")
        let mails = try await readTopic(HeraldTopic.sendsEmail.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { $0.count >= 8 }
        let texts = try Set(mails.map { try Wire.decode(SendRequest.self, from: try #require($0.value)).content["text"] ?? "" })
        #expect(texts == Set((0..<6).map { "Hello m\($0)@example.com" } + ["Plan gold, code T-1", "Plan gold, code T-2"]))

        for (process, _) in orchestrators { process.signal(SIGTERM) }
        for (process, _) in orchestrators { _ = try await process.waitForExit() }
        ingest.signal(SIGTERM)
        _ = try await ingest.waitForExit()
        await cluster.shutdown()
    }
}
