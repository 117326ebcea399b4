import Crypto
import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

/// Two orchestrators and two notifiers while one of each is killed with SIGKILL and restarted with an empty data
/// directory, several times: every partition that moves is restored from its changelog (docs/partitions.md).
@Suite("State that survives a move", .timeLimit(.minutes(8)))
struct StateMoveTests {
    static let users = 3_000
    /// The keyed topics' partitions: 16, or `HERALD_BENCH_PARTITIONS` for a benchmark that tries another count.
    static let partitions = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PARTITIONS"] ?? "") ?? 16

    /// More environment for the services a benchmark starts, `NAME=value,NAME=value` (`HERALD_BENCH_SERVICE_ENV`): to
    /// try a setting.
    static let benchEnvironment: [String: String] = Dictionary(
        (ProcessInfo.processInfo.environment["HERALD_BENCH_SERVICE_ENV"] ?? "").split(separator: ",").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1)
            return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
        }) { $1 }

    /// The project `demo` and its iOS app `demo-ios`, as configuration text.
    static let projectAndApp = """
        kind: project
        id: demo
        default_language: en
        ---
        kind: app
        id: demo-ios
        project: demo
        platform: ios

        """

    /// A push template, a segment entered by `tier = gold` with a `reeligibility: once` campaign on its entry, and,
    /// with `broadcastAt`, a scheduled broadcast then to every reachable profile.
    static func configuration(broadcastAt: Date?) -> String {
        let broadcast = broadcastAt.map { at in
            """
            ---
            kind: campaign
            id: broadcast
            project: demo
            type: transactional
            trigger:
              schedule:
                at: \(WireTime.format(at).replacingOccurrences(of: ".000Z", with: "Z"))
            audience: reachable
            reeligibility: always
            messages: [{channel: push, template: hello, app: demo-ios}]
            """
        }
        return Self.projectAndApp + """
            ---
            kind: template
            id: hello
            project: demo
            channel: push
            variants:
              default:
                title: Hello
                body: 'Hi {{ c.first_name | "there" }}'
            ---
            kind: segment
            id: gold
            project: demo
            condition: c.tier = "gold"
            ---
            kind: segment
            id: reachable
            project: demo
            condition: push.reachable = true
            ---
            kind: campaign
            id: welcome-gold
            project: demo
            type: transactional
            trigger: {segment_entry: gold}
            reeligibility: once
            messages: [{channel: push, template: hello, app: demo-ios}]

            """ + (broadcast ?? "")
    }

    /// The feed, in two phases: each user's installation (notifications allowed), push token, first name and `tier = gold` (entering the
    /// segment) and a TAP; then `tier = silver`, `tier = gold` again (a second entry, which the once campaign ignores)
    /// and another TAP. Fixed ids and times, so that a second run reads the same writes; `only` some of the users (a
    /// profile's state depends on its own writes alone).
    static func feed(phase: Int, only chosen: [Int]? = nil) -> [KafkaOutgoingRecord] {
        let start = Date(timeIntervalSince1970: 1_795_000_000 + Double(phase) * 100_000)
        var records: [KafkaOutgoingRecord] = []
        func add(_ op: IngestOp, _ user: Int, _ step: Int, app: Bool = false, _ fields: [JSONMember] = []) {
            let record = IngestRecord(
                op: op, id: "p\(phase)-u\(user)-\(step)", project: "demo",
                source: app ? .app(id: "demo-ios", dev: false) : .server, customID: "u\(user)",
                installationID: app ? "I-\(user)" : nil, receivedAt: start + Double(user) + Double(step) / 10, fields: fields)
            records.append(KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: record.key, value: record.value))
        }
        func profile(_ attributes: [String: String]) -> [JSONMember] {
            [JSONMember("profile", .object([JSONMember(
                "custom_attributes", .object(attributes.sorted { $0.key < $1.key }.map { JSONMember("\($0.key).s", .string($0.value)) }))]))]
        }
        let tap = [JSONMember("event", .object([JSONMember("name", .string("TAP")), JSONMember("attributes", .object([]))]))]
        for user in chosen ?? Array(0..<users) {
            if phase == 1 {
                add(.identify, user, 0, app: true)
                let push = JSONValue.object([
                    JSONMember("token", .string(String(format: "%064x", user))), JSONMember("environment", .string("production")),
                ])
                add(.pushToken, user, 1, app: true, [JSONMember("push", push)])
                add(.installation, user, 4, app: true, [JSONMember(
                    "installation", .object([JSONMember("notification_permission", .string("allowed"))]))])
                add(.profileUpdate, user, 2, profile(["first_name": "U\(user)", "tier": "gold"]))
                add(.event, user, 3, tap)
            } else {
                add(.profileUpdate, user, 0, profile(["tier": "silver"]))
                add(.profileUpdate, user, 1, profile(["tier": "gold"]))
                add(.event, user, 2, tap)
            }
        }
        return records
    }

    final class Stack: Sendable {
        let cluster: EmbeddedKafkaCluster
        let work: String
        let apnsURL: String
        let producer: KafkaProducer

        init(cluster: EmbeddedKafkaCluster, work: String, apnsURL: String) throws {
            self.cluster = cluster
            self.work = work
            self.apnsURL = apnsURL
            producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(
                    client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "state-move-test"),
                logger: quietLogger)
        }

        func orchestrator(
            _ name: String, environment extra: [String: String] = [:], keep: @escaping @Sendable (String) -> Bool = { _ in true }
        ) throws -> ChildProcess {
            try ChildProcess(
                "herald-orchestrator",
                environment: [
                    "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1",
                    "HERALD_HTTP_PORT": "0", "HERALD_TOPIC_PARTITIONS": "\(StateMoveTests.partitions)",
                    "HERALD_DATA_DIR": "\(work)/\(name)", "HERALD_SESSION_TIMEOUT_MS": "3000", "HERALD_INSTANCE_ID": name,
                ].merging(extra) { $1 }, keep: keep)
        }

        func notifier(
            _ name: String, environment extra: [String: String] = [:], keep: @escaping @Sendable (String) -> Bool = { _ in true }
        ) throws -> ChildProcess {
            try ChildProcess(
                "herald-notifier",
                environment: [
                    "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1", "HERALD_HTTP_PORT": "0",
                    "HERALD_TOPIC_PARTITIONS": "\(StateMoveTests.partitions)", "HERALD_DATA_DIR": "\(work)/\(name)",
                    "HERALD_SESSION_TIMEOUT_MS": "3000", "HERALD_INSTANCE_ID": name,
                    "HERALD_APNS_KEY_FILE": work + "/apns.p8", "HERALD_APNS_KEY_ID": "KEY1234567",
                    "HERALD_APNS_TEAM_ID": "TEAM123456", "HERALD_APNS_URL": apnsURL, "HERALD_APNS_SANDBOX_URL": apnsURL,
                    "HERALD_PROVIDER_CA_FILE": work + "/ca.pem",
                ].merging(sampleApps) { $1 }.merging(extra) { $1 }, keep: keep)
        }

        func ingest(environment extra: [String: String] = [:]) throws -> ChildProcess {
            try ChildProcess(
                "herald-ingest",
                environment: [
                    "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1",
                    "HERALD_HTTP_PORT": "0", "HERALD_TOPIC_PARTITIONS": "\(StateMoveTests.partitions)",
                ].merging(sampleApps) { $1 }.merging(extra) { $1 })
        }

        func applyConfiguration(_ text: String) async throws {
            let directory = work + "/config"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try text.write(toFile: directory + "/all.yaml", atomically: true, encoding: .utf8)
            let herald = binDirectory.appendingPathComponent("herald").path
            let (status, output) = try await runCommand(herald, ["config", "apply", directory, "--bootstrap", cluster.bootstrapServers])
            guard status == 0 else { throw TimedOut(what: "herald config apply: \(output)") }
        }

        func produce(_ records: [KafkaOutgoingRecord]) async throws {
            for chunk in stride(from: 0, to: records.count, by: 2000) {
                _ = try await producer.send(Array(records[chunk..<min(chunk + 2000, records.count)]))
            }
        }

        func shutdown() async {
            await producer.shutdown()
            await cluster.shutdown()
        }
    }

    /// The embedded broker with the topics, and the APNs simulator keeping the last `keep` requests.
    static func makeStack(keep: Int = users * 4) async throws -> (Stack, SimulatorState, APNsSimulator) {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: Int32(partitions)))
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-move-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let simulators = SimulatorState(keep: keep)
        let tls = try await SimulatorTLS.selfSigned(openssl: testOpenSSL)
        try tls.writeCertificate(to: work + "/ca.pem")
        let apns = try await APNsSimulator.start(state: simulators, tls: tls)
        try P256.Signing.PrivateKey().pemRepresentation.write(toFile: work + "/apns.p8", atomically: true, encoding: .utf8)
        return (try Stack(cluster: cluster, work: work, apnsURL: apns.url), simulators, apns)
    }

    /// What a profile holds that the feed decides: custom attributes, event counts, segments.
    static func view(_ port: Int, user: Int) async throws -> String? {
        let (status, body) = try await httpGet("http://127.0.0.1:\(port)/v1/profiles/demo/u\(user)")
        guard status == 200 else { return nil }
        let profile = try JSONParser.parse(Array(body.utf8))
        let (_, segments) = try await httpGet("http://127.0.0.1:\(port)/v1/profiles/demo/u\(user)/segments")
        var counts: [String] = []
        if case .object(let events)? = profile["events"] {
            counts = events.map { "\($0.key)=\($0.value["count"].map { String(decoding: $0.serialized, as: UTF8.self) } ?? "")" }
        }
        return [
            String(decoding: (profile["custom"] ?? .null).serialized, as: UTF8.self), counts.sorted().joined(separator: ","),
            segments,
        ].joined(separator: " | ")
    }

    /// The sample's views once each shows the feed's second phase, from whichever orchestrator holds the profile.
    static func views(_ ports: [Int], _ sample: [Int], timeout: Duration = .seconds(120)) async throws -> [Int: String] {
        var found: [Int: String] = [:]
        let deadline = ContinuousClock.now + timeout
        while true {
            for user in sample where found[user] == nil {
                for port in ports {
                    if let view = try? await view(port, user: user), view.contains("e.TAP=2") { found[user] = view }
                }
            }
            if found.count == sample.count { return found }
            guard ContinuousClock.now < deadline else {
                throw TimedOut(what: "the sample's profiles (\(found.count) of \(sample.count))")
            }
            try await Task.sleep(for: .milliseconds(500))
        }
    }

    static func port(_ process: ChildProcess) async throws -> Int {
        try await waitUntil("\(process.name) to listen") { !process.logs("http listening").isEmpty || process.exitCode != nil }
        return try #require(process.logs("http listening").last?["port"] as? Int, "\(process.output.suffix(5))")
    }

    @Test("SIGKILL and an empty data directory, three times, for one orchestrator and one notifier: every push once, the same profiles, no second welcome")
    func killAndRestartEmpty() async throws {
        let (stack, simulators, apns) = try await Self.makeStack()
        defer { try? FileManager.default.removeItem(atPath: stack.work) }
        try await stack.applyConfiguration(Self.configuration(broadcastAt: nil))

        let o1 = try stack.orchestrator("o1")
        let n1 = try stack.notifier("n1")
        var o2 = try stack.orchestrator("o2")
        var n2 = try stack.notifier("n2")
        let o1Port = try await Self.port(o1)
        let firstMembers = [o1, n1, o2, n2]
        try await waitUntil("every member to own partitions", timeout: .seconds(90)) {
            firstMembers.allSatisfy { !$0.logs("partitions assigned").isEmpty || $0.exitCode != nil }
        }
        try await stack.produce(Self.feed(phase: 1))

        // The kill points, as pushes answered: each kill falls in the middle of a phase's pushes (phase 1's welcomes,
        // then the broadcast), however fast or slow the machine; the notifier's with more in flight than the
        // orchestrator's.
        let users = Self.users
        let orchestratorKills = [users / 10, users * 6 / 10, users + users / 2]
        let notifierKills = [users * 3 / 10, users + users / 5, users + users * 8 / 10]
        @Sendable func answered(_ count: Int) -> Bool { simulators.count("apns") >= count }
        // A member killed once it has opened partitions (restored from their changelogs when it is a restarted one):
        // each kill moves state.
        @Sendable func holds(_ member: ChildProcess) -> Bool {
            member.logs("partition databases open").contains { !($0["partitions"] as? String ?? "").isEmpty }
        }
        func killPoint(_ member: ChildProcess, _ what: String, answered count: Int) async throws {
            do {
                try await waitUntil("\(what) to hold partitions, \(count) pushes answered", timeout: .seconds(120)) {
                    holds(member) && answered(count)
                }
            } catch {
                Issue.record("\(simulators.count("apns")) pushes answered; \(what) said last: \(member.output.suffix(15).joined(separator: "\n"))")
                throw error
            }
        }
        var killed: [ChildProcess] = []
        var notifiersKilledAt: [Date] = []
        for round in 1...3 {
            try await killPoint(o2, "o2 #\(round)", answered: orchestratorKills[round - 1])
            o2.signal(SIGKILL)
            _ = try await o2.waitForExit()
            killed.append(o2)
            try FileManager.default.removeItem(atPath: stack.work + "/o2")
            o2 = try stack.orchestrator("o2")
            if round == 2 {
                // The broadcast goes to the members of its audience when it runs: once every user is reachable (their
                // welcome went out), so that it reaches every user however slowly the first phase was applied.
                do {
                    try await waitUntil("every welcome delivered", timeout: .seconds(120)) { simulators.count("apns") >= Self.users }
                } catch {
                    let reached = Set(simulators.received("apns").map(\.target))
                    let missing = (0..<Self.users).filter { !reached.contains(String(format: "%064x", $0)) }
                    Issue.record("no welcome reached APNs for \(missing.count) users: \(missing.prefix(20).map { "u\($0)" })")
                    throw error
                }
                try await stack.applyConfiguration(Self.configuration(broadcastAt: Date() + 8))
                try await stack.produce(Self.feed(phase: 2))
            }
            try await killPoint(n2, "n2 #\(round)", answered: notifierKills[round - 1])
            n2.signal(SIGKILL)
            _ = try await n2.waitForExit()
            // Taken once its exit is seen: the process may still have run (and logged answers) for a moment after the
            // signal was sent, on two loaded cores, but never after this.
            notifiersKilledAt.append(Date())
            killed.append(n2)
            try FileManager.default.removeItem(atPath: stack.work + "/n2")
            n2 = try stack.notifier("n2")
        }
        let members = [o1, o2, n1, n2]

        let expected = Self.users * 2
        // Distinct pushes: a push made twice (in flight at a kill) must not stand for one not made yet.
        @Sendable func distinct() -> Int { Set(simulators.received("apns").compactMap { $0.headers["apns-id"] }).count }
        do {
            try await waitUntil("every push delivered", timeout: .seconds(180)) { distinct() >= expected }
        } catch {
            Issue.record("APNs received \(distinct()) distinct pushes of \(expected) (\(simulators.count("apns")) requests)")
            throw error
        }
        // A push sent twice would come from a partition whose new owner attempts it again: give it time to show.
        try await Task.sleep(for: .seconds(5))
        let received = simulators.received("apns")
        let ids = received.compactMap { $0.headers["apns-id"] }
        #expect(Set(ids).count == expected, "\(Set(ids).count) distinct pushes for \(expected) sends")
        // A push is made again only when the notifier that made it was killed before its outcome left the process (the
        // provider had answered, the report and the ledger's change were not produced yet, or not even that): the new
        // owner attempts it again, with the same apns-id. Any other copy is a fault of the handover.
        let copies = Dictionary(grouping: received, by: { $0.headers["apns-id"] ?? "" }).values.filter { $0.count > 1 }
        let lags = copies.map { copies -> Double in
            let first = copies.map(\.at).min()!
            return notifiersKilledAt.map { abs($0.timeIntervalSince(first)) }.min() ?? .infinity
        }
        let sortedLags = lags.sorted()
        print("state-move: \(received.count) pushes, \(copies.count) twice; first copy from the nearest kill (s): median \(sortedLags.isEmpty ? "-" : String(format: "%.2f", sortedLags[sortedLags.count / 2])), max \(sortedLags.last.map { String(format: "%.2f", $0) } ?? "-")")
        // Each kill adds at most one copy of a push: the one its notifier had in flight.
        #expect(
            copies.allSatisfy { $0.count <= notifiersKilledAt.count + 1 },
            "pushes made more than once per kill: \(copies.filter { $0.count > notifiersKilledAt.count + 1 }.map { copies in copies.map { "\($0.headers["apns-id"] ?? "") at \(WireTime.format($0.at))" } })")
        // Which copies a kill explains, from the notifiers' own logs (each logs `delivery` with the apns-id when APNs
        // answers): a copy nobody logged was made by a notifier killed before the answer; one logged by a notifier
        // killed within 5 s after it was answered before its report left the process (a killed process logs nothing
        // after its exit, which is when its kill time is taken). Every answer but the last must be one of those: an
        // answer logged by a notifier that lived on finished the push, and a copy after it is a fault of the handover.
        // (The simulator's own clock cannot tell: on 2 loaded cores it records requests sent before a kill up to
        // seconds after it.)
        let killedNotifiers = Array(zip(killed.filter { $0.name == "herald-notifier" }.map(ObjectIdentifier.init), notifiersKilledAt))
        var notifierNames = [ObjectIdentifier(n1): "n1, which lived on", ObjectIdentifier(n2): "the last n2, which lived on"]
        for (index, kill) in killedNotifiers.enumerated() {
            notifierNames[kill.0] = "n2 #\(index + 1), killed (its exit seen at \(WireTime.format(kill.1)))"
        }
        var answered: [String: [(at: Date, process: ObjectIdentifier, sendID: String)]] = [:]
        for process in killed + members where process.name == "herald-notifier" {
            for line in process.logs("delivery") {
                guard let id = line["provider_message_id"] as? String, let ts = line["ts"] as? String, let at = WireTime.parse(ts)
                else { continue }
                answered[id, default: []].append((at, ObjectIdentifier(process), line["send_id"] as? String ?? ""))
            }
        }
        let unexplained = copies.filter { copies in
            let last = copies.map(\.at).max()!
            // The answers to every copy but the last (whose answer comes after it was sent).
            let earlier = answered[copies.first?.headers["apns-id"] ?? "", default: []].filter { $0.at < last }
            return !earlier.allSatisfy { answer in
                killedNotifiers.contains { $0.0 == answer.process && $0.1 >= answer.at && $0.1.timeIntervalSince(answer.at) < 5 }
            }
        }
        // Who answered each copy, with the rebalances of every notifier: what a failure here needs to be read.
        let answers = unexplained.map { copies in
            let id = copies.first?.headers["apns-id"] ?? ""
            return "\(id): copies at \(copies.map { WireTime.format($0.at) }); answers \(answered[id, default: []].map { "\(WireTime.format($0.at)) by \(notifierNames[$0.process] ?? "?") send \($0.sendID)" })"
        }
        let rebalances = unexplained.isEmpty ? [] : (killed + members).filter { $0.name == "herald-notifier" }.flatMap { process in
            process.output.filter { line in
                ["partitions assigned", "partitions revoked", "partition drained", "partition released", "results for a partition not open", "attempts in flight"]
                    .contains { line.contains("\"msg\":\"\($0)") }
            }.map { $0.prefix(400) }
        }
        #expect(unexplained.isEmpty, "pushes made again after a notifier that lived on was answered: \(answers); kills at \(notifiersKilledAt.map(WireTime.format)); rebalances: \(rebalances)")

        // The members restored what moved to them from the changelogs (the killed ones and the survivors).
        let restores = (members + killed).flatMap { $0.logs("partition restored") }
        #expect(restores.filter { Int($0["records"] as? String ?? "") ?? 0 > 0 }.count >= 6, "\(restores.count) restores")
        #expect((members + killed).allSatisfy { $0.logs("changelog does not start at offset 0 (its beginning was deleted): rebuilding the partition from its input topics instead of restoring it; keep changelog topics compacted, never time-limited").isEmpty })

        // The once campaign fired once per user, although each entered the segment twice.
        let sends = try await readTopic(HeraldTopic.sendsPush.name, bootstrap: stack.cluster.bootstrapServers, logger: quietLogger) {
            $0.count >= expected
        }
        let welcomes = Set(try sends.compactMap { record -> String? in
            let send = try Wire.decode(SendRequest.self, from: try #require(record.value))
            return send.campaign == "welcome-gold" ? send.profileKey : nil
        })
        #expect(welcomes.count == Self.users)
        let welcomeIDs = Set(try sends.compactMap { record -> String? in
            let send = try Wire.decode(SendRequest.self, from: try #require(record.value))
            return send.campaign == "welcome-gold" ? send.sendID : nil
        })
        #expect(welcomeIDs.count == Self.users, "\(welcomeIDs.count - Self.users) welcomes decided again")

        // A sample of profiles, as the two orchestrators hold them now.
        let o2Port = try await Self.port(o2)
        let sample = stride(from: 0, to: Self.users, by: 97).map { $0 }
        let afterMoves = try await Self.views([o1Port, o2Port], sample)
        // The last o2 restored its partitions: the restore is on its /metrics.
        let (_, metrics) = try await httpGet("http://127.0.0.1:\(o2Port)/metrics")
        #expect(metrics.contains("herald_restore_records_total{partition="), "\(metrics.prefix(300))")
        for member in members { member.signal(SIGTERM) }
        for member in members { #expect(try await member.waitForExit(timeout: .seconds(60)) == 0) }
        await stack.shutdown()
        await apns.stop()

        // The same feed for the sample, one orchestrator, nothing killed.
        let (reference, _, referenceAPNs) = try await Self.makeStack()
        defer { try? FileManager.default.removeItem(atPath: reference.work) }
        try await reference.applyConfiguration(Self.configuration(broadcastAt: nil))
        try await reference.produce(Self.feed(phase: 1, only: sample) + Self.feed(phase: 2, only: sample))
        let single = try reference.orchestrator("single")
        let singlePort = try await Self.port(single)
        let alone = try await Self.views([singlePort], sample)
        for user in sample { #expect(afterMoves[user] == alone[user], "u\(user)") }
        single.signal(SIGTERM)
        #expect(try await single.waitForExit(timeout: .seconds(60)) == 0)
        await reference.shutdown()
        await referenceAPNs.stop()
    }
}
