import Crypto
import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

/// Journeys under SIGKILL (issue 59, item 2): 10,000 entries walk a 6-node journey (a message, a wait for an event, a
/// one-minute delay, a split, a message, the exit) while one of two orchestrators is killed three times at random
/// points (once restarted with an empty data directory: its partitions restored from their changelogs). What APNs
/// received is compared with what a calm run sends, which the feed decides: each user's welcome, and the gold users'
/// last message, each exactly once.
@Suite("Journeys under SIGKILL", .timeLimit(.minutes(10)))
struct JourneyKillTests {
    static let users = Int(ProcessInfo.processInfo.environment["HERALD_JOURNEY_KILL_USERS"] ?? "") ?? 10_000

    static let configuration = StateMoveTests.projectAndApp + """
        ---
        kind: template
        id: hello
        project: demo
        channel: push
        variants: {default: {title: Hello, body: 'hello {{ entry.n }}'}}
        ---
        kind: template
        id: last
        project: demo
        channel: push
        variants: {default: {title: Gold, body: 'last {{ entry.n }}'}}
        ---
        kind: journey
        id: walk
        project: demo
        type: transactional
        entry: {event: SIGNUP}
        start: hello
        nodes:
          hello: {message: {channel: push, template: hello, app: demo-ios}, next: wait-tap}
          wait-tap:
            wait:
              branches: [{event: TAP, where: event.n = entry.n, next: pause}]
              timeout: {after: 1d, next: done}
          pause: {delay: 60s, next: gold}
          gold:
            split:
              branches: [{condition: 'c.tier = "gold"', next: last}]
              else: done
          last: {message: {channel: push, template: last, app: demo-ios}, next: done}
          done: {exit: {}}

        """

    /// Each user's installation (notifications allowed), push token, tier (gold for the even ones), SIGNUP (the
    /// entry), and TAP with the same `n` (out of the wait). Fixed ids: a record applied again is the same record.
    static func feed() -> [KafkaOutgoingRecord] {
        let start = Date(timeIntervalSince1970: 1_795_000_000)
        var records: [KafkaOutgoingRecord] = []
        for user in 0..<users {
            func add(_ op: IngestOp, _ step: Int, app: Bool = false, _ fields: [JSONMember] = []) {
                let record = IngestRecord(
                    op: op, id: "j-u\(user)-\(step)", project: "demo", source: app ? .app(id: "demo-ios", dev: false) : .server,
                    customID: "u\(user)", installationID: app ? "I-\(user)" : nil, receivedAt: start + Double(user) / 100 + Double(step) / 1000,
                    fields: fields)
                records.append(KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: record.key, value: record.value))
            }
            func event(_ name: String) -> [JSONMember] {
                [JSONMember("event", .object([
                    JSONMember("name", .string(name)), JSONMember("attributes", .object([JSONMember("n.s", .string("n\(user)"))])),
                ]))]
            }
            add(.identify, 0, app: true)
            add(.pushToken, 1, app: true, [JSONMember("push", .object([
                JSONMember("token", .string(String(format: "%064x", user))), JSONMember("environment", .string("production")),
            ]))])
            add(.installation, 2, app: true, [JSONMember("installation", .object([JSONMember("notification_permission", .string("allowed"))]))])
            add(.profileUpdate, 3, [JSONMember("profile", .object([JSONMember(
                "custom_attributes", .object([JSONMember("tier.s", .string(user % 2 == 0 ? "gold" : "silver"))]))]))])
            add(.event, 4, event("SIGNUP"))
            add(.event, 5, event("TAP"))
        }
        return records
    }

    @Test("10,000 entries through a 6-node journey while an orchestrator is killed three times: each message once, none lost")
    func killedWhileWalking() async throws {
        let (stack, simulators, apns) = try await StateMoveTests.makeStack(keep: Self.users * 3)
        defer { try? FileManager.default.removeItem(atPath: stack.work) }
        try await stack.applyConfiguration(Self.configuration)
        let o1 = try stack.orchestrator("o1")
        var o2 = try stack.orchestrator("o2")
        let n1 = try stack.notifier("n1")
        let first = [o1, o2, n1]
        try await waitUntil("every member to own partitions", timeout: .seconds(90)) {
            first.allSatisfy { !$0.logs("partitions assigned").isEmpty || $0.exitCode != nil }
        }
        try await stack.produce(Self.feed())

        // What a calm run sends: every user's welcome, and the gold (even) users' last message.
        let users = Self.users
        let expected = Set((0..<users).flatMap { user in ["hello n\(user)"] + (user % 2 == 0 ? ["last n\(user)"] : []) })
        // Kill points, as pushes answered, each with a random part: o2 is killed mid-welcomes, mid-delays and mid-last
        // messages; the second restart starts from an empty data directory.
        var generator = SystemRandomNumberGenerator()
        let kills = [
            Int.random(in: users / 10...users / 2, using: &generator),
            Int.random(in: users * 7 / 10...users * 9 / 10, using: &generator),
            Int.random(in: users + users / 10...users + users * 3 / 10, using: &generator),
        ]
        var killed: [ChildProcess] = []
        for (round, point) in kills.enumerated() {
            let member = o2
            try await waitUntil("\(point) pushes answered before kill #\(round + 1)", timeout: .seconds(240)) {
                simulators.count("apns") >= point && !member.logs("partition databases open").isEmpty
            }
            o2.signal(SIGKILL)
            _ = try await o2.waitForExit()
            killed.append(o2)
            if round == 1 { try FileManager.default.removeItem(atPath: stack.work + "/o2") }
            o2 = try stack.orchestrator("o2")
        }

        @Sendable func bodies() -> [String] { simulators.received("apns").compactMap { Self.body($0.body) } }
        do {
            try await waitUntil("every message of a calm run", timeout: .seconds(300)) { Set(bodies()).count >= expected.count }
        } catch {
            let missing = expected.subtracting(bodies())
            Issue.record("\(missing.count) messages never sent: \(missing.sorted().prefix(20)); kills at \(kills)")
            throw error
        }
        // A message decided twice would come from a restarted partition deciding it again: give it time to show.
        try await Task.sleep(for: .seconds(5))
        let received = bodies()
        #expect(Set(received) == expected)
        let twice = Dictionary(grouping: received, by: { $0 }).filter { $0.value.count > 1 }.keys.sorted()
        #expect(twice.isEmpty, "\(twice.count) messages sent twice: \(twice.prefix(20)); kills at \(kills)")
        // The decisions themselves: one send id per user and node, however many times a batch was applied again.
        let sends = try await readTopic(HeraldTopic.sendsPush.name, bootstrap: stack.cluster.bootstrapServers, logger: quietLogger) {
            $0.count >= expected.count
        }
        var ids: [String: Set<String>] = [:]
        for record in sends {
            let send = try Wire.decode(SendRequest.self, from: try #require(record.value))
            ids["\(send.profileKey) \(send.campaign)", default: []].insert(send.sendID)
        }
        #expect(ids.count == expected.count && ids.values.allSatisfy { $0.count == 1 }, "\(ids.filter { $0.value.count > 1 }.prefix(5))")
        let restores = (killed + [o1, o2]).flatMap { $0.logs("partition restored") }
        #expect(restores.contains { Int($0["records"] as? String ?? "") ?? 0 > 0 }, "the empty restart restored partitions")
        print("journey-kill: \(received.count) pushes for \(expected.count) messages; kills at \(kills) pushes answered")

        for process in [o1, o2, n1] { process.signal(SIGTERM) }
        for process in [o1, o2, n1] { _ = try await process.waitForExit() }
        await apns.stop()
        await stack.shutdown()
    }

    /// The push's `body` (APNs payload `aps.alert.body`), or nil.
    static func body(_ payload: String) -> String? {
        guard let json = try? JSONParser.parse(Array(payload.utf8)) else { return nil }
        return json["aps"]?["alert"]?["body"]?.stringValue
    }
}
