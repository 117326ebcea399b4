import Foundation
import HeraldTestSupport
import Shared
import Testing

@Suite("scripts/produce", .timeLimit(.minutes(5)))
struct ProduceScriptTests {
    /// Issue 34, item 8: at 03:40 UTC the demo sent no email, since every user took the project's Europe/Paris, whose
    /// quiet hours (21:00-08:00, config/example) held them all.
    @Test("the demo's users live around the globe: at every hour of the day, some are outside 21:00-08:00")
    func demoTimeZones() async throws {
        let (status, items) = try await runCommand(repositoryFile("scripts/produce"), ["--generate", "300", "--dry-run"])
        #expect(status == 0, "\(items)")
        var zones: [String] = []
        for line in items.split(separator: "\n") {
            let item = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard item["path"] as? String == "/v1/profiles/update", let users = item["body"] as? [[String: Any]] else { continue }
            // The profile writes (a shipped order is an event of its own).
            for user in users where user["attributes"] != nil { zones.append(try #require((user["attributes"] as? [String: Any])?["$timezone"] as? String, "\(user)")) }
        }
        #expect(zones.count == 300)
        let day = Date(timeIntervalSince1970: 1_795_000_000)
        for hour in 0..<24 {
            let instant = Date(timeIntervalSince1970: (day.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400 + Double(hour) * 3600)
            let awake = zones.filter { name in
                var calendar = Calendar(identifier: .gregorian)
                calendar.timeZone = TimeZone(identifier: name)!
                return (8..<21).contains(calendar.component(.hour, from: instant))
            }
            #expect(awake.count >= zones.count / 5, "\(hour):00 UTC: \(awake.count) of \(zones.count) outside quiet hours")
        }
    }

    @Test("the demo scenario over HTTP and generated records straight into herald.ingest land on the topic; a rejected write exits 1 naming it")
    func produce() async throws {
        // The script sends every user's app writes from this one address.
        // config/example: the demo triggers its login-code campaign through the API, which checks that it exists.
        let (cluster, ingest, port) = try await startIngest(
            environment: ["HERALD_RATE_LIMIT_PER_ADDRESS": "0"], config: repositoryFile("config/example"))
        let script = repositoryFile("scripts/produce")
        // The scenario, printed: how many records each item makes (one per profile, event, recipient; else one).
        let (dry, items) = try await runCommand(script, ["--generate", "5", "--dry-run"])
        #expect(dry == 0, "\(items)")
        let lines = items.split(separator: "\n")
        var expected = 0
        var paths: Set<String> = []
        for line in lines {
            let item = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let path = try #require(item["path"] as? String)
            paths.insert(path)
            switch path {
            case "/v1/profiles/update": expected += (item["body"] as? [Any])?.count ?? 0
            case "/v1/app/events": expected += ((item["body"] as? [String: Any])?["events"] as? [Any])?.count ?? 0
            case "/v1/app/activity": expected += ((item["body"] as? [String: Any])?["activity"] as? [Any])?.count ?? 0
            // Left out without --orchestrator (the in-app sync and what it reports).
            case "/v1/app/in-app-messages": break
            case "/v1/campaigns/trigger": expected += ((item["body"] as? [String: Any])?["recipients"] as? [Any])?.count ?? 0
            default: expected += 1
            }
        }
        #expect(paths.isSuperset(of: ["/v1/profiles/update", "/v1/app/installation", "/v1/app/push-token", "/v1/app/activity", "/v1/app/events"]))
        let (http, httpOutput) = try await runCommand(
            script, ["--generate", "5", "--rate", "0", "--concurrency", "2", "--http", "http://127.0.0.1:\(port)"])
        #expect(http == 0, "\(httpOutput)")
        // The in-app syncs are left out without --orchestrator.
        let synced = lines.filter { $0.contains(#""in_app":true"#) }.count
        #expect(synced == 5)
        #expect(httpOutput.contains("\(lines.count - synced) sent") && httpOutput.contains("0 errors"), "\(httpOutput)")
        let (kafka, kafkaOutput) = try await runCommand(script, ["--generate", "7", "--rate", "0", "--kafka", cluster.bootstrapServers])
        #expect(kafka == 0, "\(kafkaOutput)")
        // Every item over HTTP (validated: iOS and Android keys, the campaign API) and the 7 records from kcat.
        let total = expected + 7
        let records = try await readTopic(HeraldTopic.ingest.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) {
            $0.count >= total
        }
        #expect(records.count == total)
        let fromKafka = records.filter { $0.value.map { String(decoding: $0, as: UTF8.self).contains(#""id":"gen-1-"#) } ?? false }
        #expect(fromKafka.count == 7)
        // What the script writes straight to the topic is what the orchestrator reads.
        for record in fromKafka {
            #expect(throws: Never.self) { _ = try IngestRecord.read(record.value ?? []) }
        }

        let bad = FileManager.default.temporaryDirectory.appendingPathComponent("produce-\(UUID().uuidString).jsonl").path
        try #"{"path":"/v1/app/events","body":{"installation_id":"x","events":[{"name":"bad name!"}]}}"#.write(
            toFile: bad, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: bad) }
        let (rejected, message) = try await runCommand(script, ["--file", bad, "--http", "http://127.0.0.1:\(port)"])
        #expect(rejected == 1)
        #expect(message.contains("422") && message.contains("events[0].name"), "\(message)")
        ingest.signal(SIGTERM)
        _ = try await ingest.waitForExit()
        await cluster.shutdown()
    }
}
