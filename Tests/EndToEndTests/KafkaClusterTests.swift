import Foundation
import HeraldTestSupport
import Testing
import Yams

/// deploy/compose.cluster.yaml (three KRaft brokers, SASL SCRAM over TLS for clients) and deploy/kafka/make-certs.sh,
/// checked without an engine: the compose file by docker-compose's own parser, then read as data; the certificates
/// by OpenSSL's own server and client, as librdkafka (which uses OpenSSL) will check them.
@Suite("Kafka cluster deployment", .timeLimit(.minutes(5)))
struct KafkaClusterTests {
    static let file = "deploy/compose.cluster.yaml"
    static let environment = [
        "KAFKA_KEYSTORE_PASSWORD": "keystore-secret-1", "HERALD_KAFKA_PASSWORD": "herald-kafka-secret",
        "HERALD_APPS_FILE": "/srv/herald/apps.json", "HERALD_OPERATOR_TOKEN": "operator-token-0123456789",
    ]

    /// The file as docker-compose resolves it (anchors merged, variables substituted), as data.
    static func resolved() async throws -> [String: Any] {
        let environment = ProcessInfo.processInfo.environment.merging(Self.environment) { $1 }
        let (status, output) = try await runCommand(try dockerCompose(), ["-f", repositoryFile(file), "config"], environment: environment)
        try #require(status == 0, "\(output)")
        return try #require(try Yams.load(yaml: output) as? [String: Any])
    }

    static func map(_ value: Any?) -> [String: Any] { value as? [String: Any] ?? [:] }

    /// The image's rule from a variable to a Kafka property (apache/kafka's docker utility, ConvertKey): `_` is `.`,
    /// `__` is `_`, `___` is `-`, lower-cased.
    static func property(_ variable: String) -> String {
        var result = ""
        var underscores = 0
        func flush() {
            switch underscores {
            case 0: break
            case 1: result += "."
            case 2: result += "_"
            default: result += "-"
            }
            underscores = 0
        }
        for character in variable.dropFirst("KAFKA_".count) {
            if character == "_" {
                underscores += 1
            } else {
                flush()
                result += character.lowercased()
            }
        }
        flush()
        return result
    }

    @Test("three brokers, each a controller, replicating three times with two in sync, SASL SCRAM over TLS for clients only")
    func brokers() async throws {
        let services = Self.map(try await Self.resolved()["services"])
        #expect(Set(services.keys) == ["kafka-1", "kafka-2", "kafka-3", "kafka-users", "ingest", "orchestrator", "notifier", "config"])
        for id in 1...3 {
            let broker = Self.map(services["kafka-\(id)"])
            let variables = Self.map(broker["environment"]).compactMapValues { "\($0)" }
            var properties: [String: String] = [:]
            for (name, value) in variables where name.hasPrefix("KAFKA_") {
                // The image drops a variable whose value holds `=`.
                #expect(!value.contains("="), "kafka-\(id): \(name)")
                properties[Self.property(name)] = value
            }
            #expect(properties["node.id"] == "\(id)")
            #expect(properties["process.roles"] == "broker,controller")
            #expect(properties["controller.quorum.voters"] == "1@kafka-1:9093,2@kafka-2:9093,3@kafka-3:9093")
            #expect(properties["listener.security.protocol.map"] == "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT,CLIENTS:SASL_SSL")
            #expect(properties["advertised.listeners"] == "INTERNAL://kafka-\(id):19092,CLIENTS://kafka-\(id):9094")
            #expect(properties["listener.name.clients.scram-sha-512.sasl.jaas.config"]?.hasPrefix(
                "org.apache.kafka.common.security.scram.ScramLoginModule required") == true)
            #expect(properties["sasl.enabled.mechanisms"] == "SCRAM-SHA-512")
            #expect(properties["ssl.keystore.location"] == "/etc/kafka/secrets/kafka-\(id).p12")
            #expect(properties["ssl.keystore.password"] == "keystore-secret-1" && properties["ssl.key.password"] == "keystore-secret-1")
            for (key, value) in [
                ("default.replication.factor", "3"), ("min.insync.replicas", "2"), ("offsets.topic.replication.factor", "3"),
                ("transaction.state.log.replication.factor", "3"), ("auto.create.topics.enable", "false"), ("log.retention.hours", "168"),
            ] {
                #expect(properties[key] == value, "kafka-\(id): \(key)")
            }
            #expect(variables["CLUSTER_ID"]?.count == 22)
            let volumes = (broker["volumes"] as? [Any] ?? []).map { "\($0)" }
            #expect(volumes.contains { $0.hasSuffix(":/etc/kafka/secrets:ro") } && volumes.contains { $0.contains("kafka-\(id)-data") })
        }
        // The SCRAM user is made once the three brokers answer, through the internal listener.
        let users = Self.map(services["kafka-users"])
        #expect(Set(Self.map(users["depends_on"]).keys) == ["kafka-1", "kafka-2", "kafka-3"])
        let command = (users["command"] as? [String] ?? []).joined()
        // `$$` as docker-compose prints it: the container's shell expands the variable, the file holds no password.
        #expect(command.contains("--entity-name herald") && command.contains("SCRAM-SHA-512=[iterations=8192,password=$$HERALD_KAFKA_PASSWORD]"))
    }

    @Test("Herald's services: SASL_SSL with SCRAM, the CA mounted where they read it, three replicas asked, a read-only root")
    func heraldServices() async throws {
        let services = Self.map(try await Self.resolved()["services"])
        for name in ["ingest", "orchestrator", "notifier", "config"] {
            let service = Self.map(services[name])
            let variables = Self.map(service["environment"]).compactMapValues { "\($0)" }
            #expect(variables["KAFKA_BOOTSTRAP_SERVERS"] == "kafka-1:9094,kafka-2:9094,kafka-3:9094", "\(name)")
            #expect(variables["KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL" && variables["KAFKA_SASL_MECHANISMS"] == "SCRAM-SHA-512", "\(name)")
            #expect(variables["KAFKA_SASL_USERNAME"] == "herald" && variables["KAFKA_SASL_PASSWORD"] == "herald-kafka-secret", "\(name)")
            #expect(variables["HERALD_TOPIC_REPLICATION"] == "3", "\(name)")
            let ca = try #require(variables["KAFKA_SSL_CA_LOCATION"])
            let volumes = (service["volumes"] as? [Any] ?? []).map { "\($0)" }
            #expect(volumes.contains { $0.hasSuffix("/ca.crt:\(ca):ro") }, "\(name): \(volumes)")
            guard name != "config" else { continue }
            #expect(service["read_only"] as? Bool == true, "\(name)")
            #expect(Self.map(Self.map(service["depends_on"])["kafka-users"])["condition"] as? String == "service_completed_successfully")
        }
    }

    @Test(
        "deploy/compose.cluster.yaml refuses to start without each secret it needs",
        arguments: ["KAFKA_KEYSTORE_PASSWORD", "HERALD_KAFKA_PASSWORD", "HERALD_APPS_FILE", "HERALD_OPERATOR_TOKEN"])
    func requires(variable: String) async throws {
        var environment = ProcessInfo.processInfo.environment.merging(Self.environment) { $1 }
        environment[variable] = nil
        let (status, output) = try await runCommand(try dockerCompose(), ["-f", repositoryFile(Self.file), "config"], environment: environment)
        #expect(status != 0)
        #expect(output.contains("set \(variable)"), "\(output)")
    }

    @Test("make-certs.sh: each broker's keystore opens with the password only, and serves TLS a client trusting ca.crt accepts for that broker's name alone")
    func certificates() async throws {
        let directory = try scratchDirectory("herald-kafka-certs")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let script = repositoryFile("deploy/kafka/make-certs.sh")
        var environment = ProcessInfo.processInfo.environment
        environment["KAFKA_KEYSTORE_PASSWORD"] = "short"
        let (refused, refusal) = try await runCommand(script, [directory], environment: environment)
        #expect(refused == 2 && refusal.contains("6 characters or more"), "\(refusal)")
        environment["KAFKA_KEYSTORE_PASSWORD"] = "keystore-secret-1"
        let (status, output) = try await runCommand(script, [directory], environment: environment)
        try #require(status == 0, "\(output)")
        let caKey = try FileManager.default.attributesOfItem(atPath: "\(directory)/ca.key")[.posixPermissions] as? Int
        #expect(caKey == 0o600, "the CA's key is its owner's alone")

        for broker in ["kafka-1", "kafka-2", "kafka-3"] {
            let keystore = "\(directory)/\(broker).p12"
            let pem = "\(directory)/\(broker).pem"
            let (wrong, _) = try await runCommand(
                "/usr/bin/openssl", ["pkcs12", "-in", keystore, "-passin", "pass:not-the-password", "-nodes", "-out", "\(pem).wrong"])
            #expect(wrong != 0, "\(broker): the keystore opened with another password")
            let (opened, openOutput) = try await runCommand(
                "/usr/bin/openssl", ["pkcs12", "-in", keystore, "-passin", "pass:keystore-secret-1", "-nodes", "-out", pem])
            try #require(opened == 0, "\(openOutput)")

            // A TLS server with what the broker's keystore holds; clients that trust only the CA, for each name.
            let lines = Locked([String]())
            let server = try Spawned(
                "/usr/bin/openssl", arguments: ["s_server", "-accept", "127.0.0.1:0", "-cert", pem, "-key", pem, "-naccept", "2", "-www"],
                environment: environment,
                onOutput: { chunk in lines.withLock { $0.append(String(decoding: chunk, as: UTF8.self)) } })
            try await waitUntil("s_server listening") { lines.withLock { $0.joined().contains("ACCEPT 127.0.0.1:") } }
            let accept = lines.withLock { $0.joined() }
            let port = try #require(accept.components(separatedBy: "ACCEPT 127.0.0.1:").last?.prefix { $0.isNumber })
            func client(_ name: String) async throws -> (Int32, String) {
                try await runCommand(
                    "/bin/sh",
                    ["-c", "echo | /usr/bin/openssl s_client -connect 127.0.0.1:\(port) -CAfile \"$0\" -verify_hostname \"$1\" -verify_return_error -brief", "\(directory)/ca.crt", name])
            }
            let (accepted, acceptedOutput) = try await client(broker)
            #expect(accepted == 0 && acceptedOutput.contains("Verification: OK"), "\(broker): \(acceptedOutput)")
            let other = broker == "kafka-1" ? "kafka-2" : "kafka-1"
            let (mismatched, mismatchedOutput) = try await client(other)
            #expect(mismatched != 0 && mismatchedOutput.contains("hostname mismatch"), "\(broker) for \(other): \(mismatchedOutput)")
            server.signal(SIGTERM)
            _ = await server.exited()
        }
    }
}
