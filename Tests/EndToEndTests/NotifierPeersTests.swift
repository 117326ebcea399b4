import Crypto
import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Two notifier processes share the partitions: the inbox and SMS replies reaching either instance get the answer of
/// every partition's owner (docs/partitions.md, "Questions to the owners"), and the instance left after the other
/// stops answers it all.
@Suite("Notifier: questions to the partitions' owners", .timeLimit(.minutes(5)))
struct NotifierPeersTests {
    static let users = (0..<8).map { "user\($0)" }
    static let liveKey = "live_demo_ios_0123456789"
    static let token = String(repeating: "3d", count: 32)
    static let smsToken = "sms-webhook-token"
    static let publicURL = "https://notify.example.com"

    @Test("inbox pages, marks and SMS replies reaching either of two notifiers are answered by every partition's owner, and through a rebalance")
    func answeredByOwners() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("herald-peers-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let (simulators, apns) = try await startAPNsSimulator(work: work)
        func startNotifier(_ name: String) throws -> ChildProcess {
            try ChildProcess(
                "herald-notifier",
                environment: [
                    "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1", "HERALD_HTTP_PORT": "0",
                    "HERALD_TOPIC_PARTITIONS": "4", "HERALD_DATA_DIR": "\(work)/\(name)", "HERALD_SESSION_TIMEOUT_MS": "3000",
                    "HERALD_INSTANCE_ID": name, "HERALD_APNS_KEY_FILE": work + "/apns.p8", "HERALD_APNS_KEY_ID": "KEY1234567",
                    "HERALD_APNS_TEAM_ID": "TEAM123456", "HERALD_APNS_URL": apns.url, "HERALD_APNS_SANDBOX_URL": apns.url,
                    "HERALD_PROVIDER_CA_FILE": work + "/ca.pem",
                    // SMS replies: the webhook's token and address (no SMS is sent here).
                    "HERALD_SMS_URL": "https://127.0.0.1:9/sms", "HERALD_SMS_ACCOUNT": "AC1", "HERALD_SMS_TOKEN": "sms-api-token",
                    "HERALD_SMS_FROM": "+15550001111", "HERALD_SMS_WEBHOOK_TOKEN": Self.smsToken, "HERALD_PUBLIC_URL": Self.publicURL,
                ].merging(sampleApps) { $1 })
        }

        // Anna's installation was anonymous, then hers: its notifications sit in two partitions.
        let anonymous = "demo/install/I-anna"
        let annaPartition = KeyPartitioner.partition(of: "demo/anna", partitions: 4)
        #expect(KeyPartitioner.partition(of: anonymous, partitions: 4) != annaPartition)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "peers-test"),
            logger: quietLogger)
        func record(_ topic: HeraldTopic, _ key: String, _ value: [UInt8]) -> KafkaOutgoingRecord {
            KafkaOutgoingRecord(topic: topic.name, key: Array(key.utf8), value: value)
        }
        let notifiers = try ["n1", "n2"].map(startNotifier)
        var ports: [Int] = []
        for notifier in notifiers {
            try await waitUntil("\(notifier.name) to listen") { !notifier.logs("http listening").isEmpty || notifier.exitCode != nil }
            ports.append(try #require(notifier.logs("http listening").first?["port"] as? Int, "\(notifier.output.suffix(5))"))
        }
        var contacts = Self.users.enumerated().map { index, user in
            record(.contacts, "demo/\(user)", Array(Self.contact(customID: user, installation: "I-\(index)", phone: Self.phone(index)).utf8))
        }
        contacts.append(record(.contacts, anonymous, Array(Self.contact(customID: nil, installation: "I-anna", phone: nil).utf8)))
        _ = try await producer.send(contacts)
        var sends = try Self.users.map { user in
            record(.sendsPush, "demo/\(user)", try Wire.encode(Self.send("to-\(user)", key: "demo/\(user)", customID: user)))
        }
        sends.append(record(.sendsPush, anonymous, try Wire.encode(Self.send("to-anonymous", key: anonymous, customID: nil))))
        _ = try await producer.send(sends)
        try await waitUntil("the first pushes delivered", timeout: .seconds(60)) { simulators.count("apns") >= Self.users.count + 1 }
        // Then the identify: the anonymous profile lets the installation go, anna's holds it, and she gets a push.
        _ = try await producer.send([
            record(.contacts, anonymous, Array(Self.contact(customID: nil, installation: nil, phone: nil).utf8)),
            record(.contacts, "demo/anna", Array(Self.contact(customID: "anna", installation: "I-anna", phone: nil).utf8)),
        ])
        _ = try await producer.send([record(.sendsPush, "demo/anna", try Wire.encode(Self.send("to-anna", key: "demo/anna", customID: "anna")))])
        try await waitUntil("anna's push delivered", timeout: .seconds(60)) { simulators.count("apns") >= Self.users.count + 2 }
        // Each instance owns some partitions (their announcements on herald.owners).
        _ = try await readTopic(HeraldTopic.owners.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { records in
            Set(records.compactMap { try? Wire.decode(OwnerAnnouncement.self, from: $0.value ?? []) }.map(\.instance)) == ["n1", "n2"]
        }

        @Sendable func inbox(_ port: Int, _ path: String, proof user: String?) async throws -> (Int, JSONValue?) {
            var headers = ["X-Api-Key": Self.liveKey]
            if let user { headers["X-CustomID-Auth"] = Self.proof(user) }
            let (status, body) = try await httpGet("http://127.0.0.1:\(port)/v1/inbox/\(path)", headers: headers)
            return (status, try? JSONParser.parse(Array(body.utf8)))
        }
        @Sendable func ids(_ answer: JSONValue?) -> [String] {
            guard case .array(let items)? = answer?["notifications"] else { return [] }
            return items.compactMap { $0["notificationId"]?.stringValue }
        }
        @Sendable func read(_ answer: JSONValue?, _ id: String) -> Bool? {
            guard case .array(let items)? = answer?["notifications"],
                case .bool(let read)? = items.first(where: { $0["notificationId"]?.stringValue == id })?["read"]
            else { return nil }
            return read
        }

        // Every user's inbox, from either instance: their push (a non-owner asks the owner).
        let everyone = ports
        try await waitUntil("every user's inbox from both instances") {
            for port in everyone {
                for user in Self.users {
                    let (status, answer) = try await inbox(port, "custom/\(user)", proof: user)
                    guard status == 200, ids(answer) == ["to-\(user)"] else { return false }
                }
            }
            return true
        }
        // Anna's installation: both partitions' notifications, newest first, and only with her proof, from either instance
        // (the instance that does not run her partition learns from its owner that the installation is hers).
        for port in ports {
            let (status, answer) = try await inbox(port, "install/I-anna", proof: "anna")
            #expect(status == 200 && ids(answer) == ["to-anna", "to-anonymous"], "\(port): \(status) \(String(describing: answer))")
            let (refused, error) = try await inbox(port, "install/I-anna", proof: nil)
            #expect(refused == 401 && error?["error"]?["code"]?.stringValue == "missing_custom_id_auth", "\(String(describing: error))")
        }
        // A mark through one instance is seen through the other; read-all through the second marks what is left.
        let marked = try await httpPost(
            "http://127.0.0.1:\(ports[0])/v1/inbox/install/I-anna/notifications/to-anonymous/read",
            headers: ["X-Api-Key": Self.liveKey, "X-CustomID-Auth": Self.proof("anna")], body: "")
        #expect(marked.0 == 204, "\(marked)")
        let seen = try await inbox(ports[1], "install/I-anna", proof: "anna")
        #expect(read(seen.1, "to-anonymous") == true && read(seen.1, "to-anna") == false, "\(String(describing: seen.1))")
        let all = try await httpPost(
            "http://127.0.0.1:\(ports[1])/v1/inbox/install/I-anna/read-all?until=to-anna",
            headers: ["X-Api-Key": Self.liveKey, "X-CustomID-Auth": Self.proof("anna")], body: "")
        #expect(all.0 == 200 && (try? JSONParser.parse(Array(all.1.utf8)))?["marked"] == .number("1"), "\(all)")

        // A question without the instance's key is refused: reaching the port is not enough to skip the proof.
        for key in [nil, "0123"] as [String?] {
            let (status, body) = try await httpPost(
                "http://127.0.0.1:\(ports[0])/v1/peers/inbox", headers: key.map { ["X-Herald-Peer-Key": $0] } ?? [:],
                body: #"{"partitions":[0,1,2,3],"question":{"page":{"owner":{"project":"demo","app":"demo-ios","kind":"install","id":"I-anna"},"limit":10,"includeSilent":false}}}"#)
            #expect(status == 403 && body.contains("not_a_peer"), "\(status) \(body)")
        }

        // STOP from each user's phone, to alternate instances: recorded by the partition that holds the number.
        for (index, _) in Self.users.enumerated() {
            let form = [("From", Self.phone(index)), ("To", "+15550001111"), ("Body", "STOP")]
            let signature = Self.twilioSignature(url: Self.publicURL + "/v1/webhooks/sms", form)
            let body = form.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
            let (status, answer) = try await httpPost(
                "http://127.0.0.1:\(ports[index % 2])/v1/webhooks/sms",
                headers: ["X-Twilio-Signature": signature, "Content-Type": "application/x-www-form-urlencoded"], body: body)
            #expect(status == 200, "\(answer)")
        }
        // The log lines come through the processes' pipes, after the answers.
        try await waitUntil("every reply logged") { notifiers.flatMap { $0.logs("sms reply") }.count >= Self.users.count }
        let replies = notifiers.flatMap { $0.logs("sms reply") }
        #expect(replies.count == Self.users.count && replies.allSatisfy { $0["profiles"] as? String == "1" }, "\(replies)")
        let reports = try await readTopic(HeraldTopic.deliveries.name, bootstrap: cluster.bootstrapServers, logger: quietLogger) { records in
            Set(records.compactMap { try? Wire.decode(DeliveryReport.self, from: $0.value ?? []) }.filter { $0.outcome == .unsubscribed }
                .compactMap(\.profileKey)).count == Self.users.count
        }
        let stopped = reports.compactMap { try? Wire.decode(DeliveryReport.self, from: $0.value ?? []) }.filter { $0.outcome == .unsubscribed }
        #expect(Set(stopped.compactMap(\.profileKey)) == Set(Self.users.map { "demo/\($0)" }) && stopped.allSatisfy { $0.channel == .sms })

        // n2 leaves: n1 takes its partitions (restored from the changelog) and answers every inbox itself.
        notifiers[1].signal(SIGTERM)
        #expect(try await notifiers[1].waitForExit(timeout: .seconds(60)) == 0)
        let left = ports[0]
        try await waitUntil("every inbox answered by the instance left", timeout: .seconds(60)) {
            for user in Self.users {
                let (status, answer) = try await inbox(left, "custom/\(user)", proof: user)
                guard status == 200, ids(answer) == ["to-\(user)"] else { return false }
            }
            let (status, answer) = try await inbox(left, "install/I-anna", proof: "anna")
            return status == 200 && ids(answer) == ["to-anna", "to-anonymous"] && read(answer, "to-anna") == true
        }

        notifiers[0].signal(SIGTERM)
        #expect(try await notifiers[0].waitForExit(timeout: .seconds(60)) == 0)
        await producer.shutdown()
        await apns.stop()
        await cluster.shutdown()
    }

    static func phone(_ index: Int) -> String { "+3361234560\(index)" }

    static func proof(_ user: String) -> String {
        HMAC<SHA256>.authenticationCode(for: Array((liveKey + user).utf8), using: SymmetricKey(data: Array("inbox_secret_demo_ios".utf8)))
            .map { String(format: "%02x", $0) }.joined()
    }

    /// Twilio's request signature: HMAC-SHA1 of the URL and the sorted form fields, base64.
    static func twilioSignature(url: String, _ form: [(String, String)]) -> String {
        let data = url + form.sorted { $0.0 < $1.0 }.map { $0.0 + $0.1 }.joined()
        return Data(HMAC<Insecure.SHA1>.authenticationCode(for: Array(data.utf8), using: SymmetricKey(data: Array(smsToken.utf8))))
            .base64EncodedString()
    }

    static func contact(customID: String?, installation: String?, phone: String?) -> String {
        let installations = installation.map {
            """
            [{"installation_id":"\($0)","app":"demo-ios","dev":false,"token":"\(token)","environment":"production",
              "notification_permission":"allowed","opted_out":false,"push_reachable":true}]
            """
        } ?? "[]"
        return """
            {"v":1,"kind":"contact","project":"demo","custom_id":\(customID.map { "\"\($0)\"" } ?? "null"),
             "email":{"address":null,"marketing":null,"marketing_changed_at":null,"bounced_at":null},
             "sms":{"phone_number":\(phone.map { "\"\($0)\"" } ?? "null"),"marketing":"subscribed","marketing_changed_at":null},
             "installations":\(installations),"updated_at":"2026-11-01T00:00:00Z"}
            """
    }

    static func send(_ id: String, key: String, customID: String?) -> SendRequest {
        let at = Date()
        return SendRequest(
            sendID: id, project: "demo", profileKey: key, customID: customID, channel: .push, marketing: false, app: "demo-ios",
            campaign: "peers", step: "message-0", occurrence: "0", template: "t", language: "default",
            content: ["title": "Hello", "body": id], payload: nil, trigger: .init(type: .api, at: at), decidedAt: at, expiresAt: nil)
    }
}
