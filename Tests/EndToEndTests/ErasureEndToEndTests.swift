import Foundation
import GRDB
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

/// An erasure through the three processes (issue 61, item 3): `herald profile erase` answers with both services'
/// receipts; afterwards every store of the services and every compacted topic that held the person is read, and nothing
/// of them is found.
@Suite("Erasure end to end", .timeLimit(.minutes(5)))
struct ErasureEndToEndTests {
    @Test("a person who was sent a push is exported (both services' rows, the token masked), then erased: the receipt has both parts; no partition database and no compacted topic holds them after, nothing is left to export; their addresses are suppressed")
    func eraseEverywhere() async throws {
        let stack = try await DeliveryStack.start("erase")
        defer { stack.removeFiles() }
        let (cluster, ingest, ingestPort, orchestrator, simulators, work) = (
            stack.cluster, stack.ingest, stack.ingestPort, stack.orchestrator, stack.simulators, stack.work
        )
        let herald = binDirectory.appendingPathComponent("herald").path
        let notifier = try stack.startNotifier(data: work + "/notifier")

        let app = signedAppHeaders("paul")
        let token = String(repeating: "6f", count: 32)
        let writes = [
            ("/v1/profiles/update", ["Authorization": "Bearer rest_demo_0123456789abcdef"],
             #"[{"identifiers":{"custom_id":"paul"},"attributes":{"$email_address":"paul@example.com","$phone_number":"+33612345678","first_name":"Paul"}}]"#),
            ("/v1/app/installation", app, #"{"installation_id":"I-9","custom_id":"paul","notification_permission":"allowed"}"#),
            ("/v1/app/push-token", app, #"{"installation_id":"I-9","custom_id":"paul","token":"\#(token)","environment":"production"}"#),
        ]
        for (path, headers, body) in writes {
            let (status, answer) = try await httpPost("http://127.0.0.1:\(ingestPort)\(path)", headers: headers, body: body)
            #expect(status == 200, "\(path): \(answer)")
        }
        _ = try await readTopic(HeraldTopic.contacts.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { contacts in
            contacts.contains { $0.value.map { String(decoding: $0, as: UTF8.self).contains(token) } ?? false }
        }
        let (posted, answer) = try await httpPost(
            "http://127.0.0.1:\(ingestPort)/v1/app/events", headers: app,
            body: #"{"installation_id":"I-9","custom_id":"paul","events":[{"name":"add_to_cart","id":"cart-9","attributes":{"product":"Skis","price":300}}]}"#)
        #expect(posted == 200, "\(answer)")
        try await waitUntil("APNs to receive the push") { simulators.count("apns") > 0 }
        try await waitUntil("the push's report read back by the notifier") { !notifier.logs("delivery").isEmpty }

        // Before: the export shows what both services hold of him, the token masked unless asked.
        let bootstrap = ["--bootstrap", cluster.bootstrapServers]
        let (exported, lines) = try await runCommand(herald, ["profile", "export", "demo", "paul"] + bootstrap)
        #expect(exported == 0, "\(lines)")
        let rows = lines.split(separator: "\n").compactMap { try? JSONParser.parse(Array($0.utf8)) }
        let tables = Set(rows.compactMap { row in row["service"]?.stringValue.flatMap { service in row["table"]?.stringValue.map { "\(service).\($0)" } } })
        #expect(tables.isSuperset(of: [
            "orchestrator.profiles", "orchestrator.installations", "orchestrator.push_receipts", "notifier.contacts",
            "notifier.ledger", "notifier.sends", "notifier.inbox",
        ]), "\(tables.sorted())")
        #expect(lines.contains("paul@example.com") && lines.contains("…6f6f6f") && !lines.contains(token), "\(lines)")
        let (_, whole) = try await runCommand(herald, ["profile", "export", "demo", "paul", "--tokens"] + bootstrap)
        #expect(whole.contains(token))
        // Found by any identifier: the same profile's rows, in both services.
        for identifier in [["--email", "PAUL@example.com"], ["--phone", "+33612345678"], ["--installation", "I-9"]] {
            let (status, found) = try await runCommand(herald, ["profile", "export", "demo"] + identifier + bootstrap)
            let rows = found.split(separator: "\n").compactMap { try? JSONParser.parse(Array($0.utf8)) }
            let keys = Set(rows.compactMap { $0["profile_key"]?.stringValue })
            let services = Set(rows.compactMap { $0["service"]?.stringValue })
            #expect(status == 0 && keys.contains("demo/paul") && services == ["orchestrator", "notifier"], "\(identifier): \(found.prefix(600))")
        }

        // The erasure, with the receipt of both services.
        let (erased, output) = try await runCommand(
            herald, ["profile", "erase", "demo", "paul", "--do-not-contact", "--bootstrap", cluster.bootstrapServers])
        #expect(erased == 0, "\(output)")
        let receipt = try JSONParser.parse(Array((output.split(separator: "\n").last ?? "").utf8))
        guard case .array(let parts)? = receipt["parts"] else { Issue.record("no parts: \(output)"); return }
        let byService = Dictionary(uniqueKeysWithValues: parts.compactMap { part in part["service"]?.stringValue.map { ($0, part) } })
        #expect(Set(byService.keys) == ["orchestrator", "notifier"], "\(output)")
        #expect(byService["orchestrator"]?["removed"]?["profiles"] == .number("1"), "\(output)")
        #expect(byService["orchestrator"]?["removed"]?["installations"] == .number("1"), "\(output)")
        #expect(byService["notifier"]?["removed"]?["contacts"] == .number("1") && byService["notifier"]?["removed"]?["ledger"] != nil, "\(output)")

        // Every compacted topic: the person's keys end in tombstones, and no value still held names them.
        let needles = ["demo/paul", "paul@example.com", "+33612345678", token]
        for topic in [HeraldTopic.contacts, .stateOrchestrator, .stateNotifier] {
            try await waitUntil("\(topic.name) to end the person's keys in tombstones", timeout: .seconds(60)) {
                let records = try await readTopic(topic.name, bootstrap: cluster.bootstrapServers, logger: quietLogger, timeout: .seconds(20)) { _ in true }
                var latest: [String: [UInt8]?] = [:]
                for record in records { if let key = record.keyString { latest[key] = record.value } }
                let theirs = latest.filter { key, _ in needles.contains { key.contains($0) } }
                let held = latest.values.compactMap { $0 }.filter { value in
                    let text = String(decoding: value, as: UTF8.self)
                    return needles.contains { text.contains($0) }
                }
                return !theirs.isEmpty && theirs.values.allSatisfy { $0 == nil } && held.isEmpty
            }
        }
        // After: nothing to export.
        let (none, nothing) = try await runCommand(herald, ["profile", "export", "demo", "paul"] + bootstrap)
        #expect(none != 0 && nothing.contains("Herald holds nothing of custom_id=paul in demo"), "\(nothing)")
        let suppressions = try await readTopic(HeraldTopic.suppressions.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
            $0.count >= 2
        }
        #expect(Set(try suppressions.map { try Wire.decode(SuppressionEntry.self, from: $0.value ?? []).channel }) == [.email, .sms])

        // Every partition database of both services, read after they stopped: nothing of the person.
        for process in [orchestrator, notifier, ingest] { process.signal(SIGTERM) }
        for process in [orchestrator, notifier, ingest] { _ = try await process.waitForExit() }
        for service in ["orchestrator", "notifier"] {
            let files = try FileManager.default.contentsOfDirectory(atPath: "\(work)/\(service)").filter { $0.hasSuffix(".sqlite") }
            #expect(files.count == 4, "\(files)")
            for file in files {
                let queue = try DatabaseQueue(path: "\(work)/\(service)/\(file)")
                let left = try await queue.read { db in try needles.flatMap { needle in try storeHoldings(db, needle).map { "\(needle): \($0)" } } }
                #expect(left.isEmpty, "\(service)/\(file): \(left)")
                try queue.close()
            }
        }
        await stack.apns.stop()
        await cluster.shutdown()
    }
}
