import Foundation
import HeraldTestSupport
import Shared
import Testing

/// A rate-limited broadcast through the orchestrator process, killed with SIGKILL while it spreads (issue 21).
@Suite("Broadcast end to end", .timeLimit(.minutes(5)))
struct BroadcastEndToEndTests {
    static let members = 120

    static func write(_ files: [String: String], to directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        for (name, text) in files {
            try text.write(toFile: (directory as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
    }

    @Test("a rate-limited broadcast killed with SIGKILL mid-spread resumes at its rate and sends each member once")
    func rateLimitedAfterSIGKILL() async throws {
        let (cluster, producer) = try OrchestratorEndToEndTests.clusterAndProducer()
        let herald = binDirectory.appendingPathComponent("herald").path
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("herald-config-\(UUID().uuidString)").path
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-orch-e2e-\(UUID().uuidString)").path
        defer {
            try? FileManager.default.removeItem(atPath: config)
            try? FileManager.default.removeItem(atPath: data)
        }
        try Self.write(
            [
                "project.yaml": """
                    kind: project
                    id: demo
                    ---
                    kind: segment
                    id: members
                    project: demo
                    condition: c.member = true
                    ---
                    kind: template
                    id: sale
                    project: demo
                    channel: sms
                    variants:
                      default: {text: The sale starts now}
                    """
            ], to: config)
        let (applied, plan) = try await runCommand(herald, ["config", "apply", config, "--bootstrap", cluster.bootstrapServers])
        #expect(applied == 0, "\(plan)")
        let (first, port) = try await OrchestratorEndToEndTests.start(cluster, data: data)

        // The audience first: 120 members over the 4 partitions, each applied before the broadcast starts.
        let member = try JSONParser.parse(Array(#"{"custom_attributes":{"member.b":true}}"#.utf8))
        _ = try await producer.send((0..<Self.members).map { index in
            let record = IngestRecord(
                op: .profileUpdate, id: "m-\(index)", project: "demo", source: .server, customID: "user-\(index)",
                installationID: nil, receivedAt: Date(), fields: [JSONMember("profile", member)])
            return KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: record.key, value: record.value)
        })
        let pending = Locked(Set(0..<Self.members))
        try await waitUntil("every member in the audience", timeout: .seconds(60)) {
            for index in pending.withLock({ $0 }) {
                let (status, body) = try await httpGet("http://127.0.0.1:\(port)/v1/profiles/demo/user-\(index)/segments")
                if status == 200, body.contains("demo/members") { _ = pending.withLock { $0.remove(index) } }
            }
            return pending.withLock { $0.isEmpty }
        }

        // 600 messages a minute over 4 partitions: 3 members every 1.2 s in each, about 12 s in all.
        let now = WireTime.format(Date())
        try Self.write(
            [
                "broadcast.yaml": """
                    kind: campaign
                    id: sale
                    project: demo
                    type: transactional
                    trigger:
                      schedule: {at: "\(now)"}
                    audience: members
                    rate_limit: {max: 600, per: 1m}
                    messages: [{channel: sms, template: sale}]
                    """
            ], to: config)
        let (reapplied, replan) = try await runCommand(herald, ["config", "apply", config, "--bootstrap", cluster.bootstrapServers])
        #expect(reapplied == 0, "\(replan)")
        try await waitUntil("part of the broadcast decided", timeout: .seconds(60)) { first.logs("send decided").count >= 20 }
        first.signal(SIGKILL)
        _ = try await first.waitForExit()
        let decidedBefore = first.logs("send decided").count
        #expect(decidedBefore < Self.members, "the broadcast was not spread")

        let (second, _) = try await OrchestratorEndToEndTests.start(cluster, data: data)
        func sends() async throws -> [SendRequest] {
            do {
                return try await readTopic(HeraldTopic.sendsSMS.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
                    Set($0.compactMap(\.value)).count >= Self.members
                }.map { try Wire.decode(SendRequest.self, from: $0.value!) }
            } catch {
                // What the restarted orchestrator did instead (its decisions counted, its other lines as they are).
                let lines = second.output.filter { !$0.contains("\"send decided\"") && !$0.contains("\"debug\"") }
                Issue.record("""
                    \(second.logs("send decided").count) decided after the restart, \(decidedBefore) before; \
                    the restarted orchestrator's last lines:
                    \(lines.suffix(40).joined(separator: "\n"))
                    """)
                throw error
            }
        }
        _ = try await sends()
        // Two pages' time more: nothing else is decided.
        try await Task.sleep(for: .seconds(3))
        let all = try await sends()
        let perMember = Dictionary(grouping: all, by: \.profileKey).mapValues { Set($0.map(\.sendID)) }
        #expect(perMember.count == Self.members)
        #expect(perMember.values.allSatisfy { $0.count == 1 }, "a member decided twice")
        // Produced again after the kill (a record produced whose outbox row was not yet marked) is the same send:
        // the notifier drops it by its send id.
        let distinct = Dictionary(grouping: all, by: \.sendID).mapValues { $0[0] }.values
        let times = distinct.map(\.decidedAt).sorted()
        // The spread: never more than the rate allows in any 6 s (60, plus a page per partition for the slots' edges).
        for (index, start) in times.enumerated() {
            let inWindow = times[index...].prefix { $0 < start + 6 }.count
            #expect(inWindow <= 72, "\(inWindow) decided in the 6 s from \(WireTime.format(start))")
        }
        #expect(times.last!.timeIntervalSince(times.first!) >= 9, "spread over \(times.last!.timeIntervalSince(times.first!)) s")

        second.signal(SIGTERM)
        #expect(try await second.waitForExit() == 0)
        await producer.shutdown()
        await cluster.shutdown()
    }
}
