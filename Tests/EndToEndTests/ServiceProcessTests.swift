import Foundation
import HeraldTestSupport
import ServiceSupport
import Shared
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("Service executables", .timeLimit(.minutes(5)))
struct ServiceProcessTests {
    static let services = ["herald-ingest", "herald-orchestrator", "herald-notifier"]

    @Test("starts against the embedded broker, answers /health and /metrics, exits 0 on SIGTERM", arguments: services)
    func startHealthStop(executable: String) async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-e2e-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let process = try ChildProcess(
            executable,
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1",
                "HERALD_HTTP_PORT": "0", "HERALD_TOPIC_PARTITIONS": "4", "HERALD_DATA_DIR": data.path,
                "HERALD_SESSION_TIMEOUT_MS": "3000", "HERALD_CREATE_TOPICS": "false",
            ].merging(executable != "herald-orchestrator" ? sampleApps : [:]) { $1 })
        try await waitUntil("\(executable) to listen") { !process.logs("http listening").isEmpty }
        let port = try #require(process.logs("http listening").first?["port"] as? Int)

        let (liveStatus, live) = try await httpGet("http://127.0.0.1:\(port)/health/live")
        #expect(liveStatus == 200 && live.contains(#""status":"ok""#))
        // Ready once Kafka answers and, for the consumers, the member holds its first assignment.
        try await waitUntil("ready") { (try? await httpGet("http://127.0.0.1:\(port)/health/ready"))?.0 == 200 }
        let (status, body) = try await httpGet("http://127.0.0.1:\(port)/health")
        #expect(status == 200)
        let health = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        #expect(health["status"] as? String == "ok")
        #expect((health["checks"] as? [String: String])?["kafka"] == "up")
        if executable != "herald-ingest" { #expect((health["checks"] as? [String: String])?["group"] == "up") }

        let (metricsStatus, metrics) = try await httpGet("http://127.0.0.1:\(port)/metrics")
        #expect(metricsStatus == 200)
        // Prometheus' conventions (promtool), and every family of the service there from the start, zeros included.
        let service = try #require(MetricCatalog.Service(rawValue: String(executable.dropFirst("herald-".count))))
        #expect(try await metricsProblems(metrics, service: service, atStart: true) == [], "\(metrics)")
        #expect(MetricsText(metrics).samples("herald_ready").map(\.value) == [1], "ready, and /metrics says so")
        if executable != "herald-ingest" {
            #expect(metrics.contains("herald_records_consumed_total{topic="))
            try await waitUntil("partitions assigned") { !process.logs("partitions assigned").isEmpty }
        }

        process.signal(SIGTERM)
        #expect(try await process.waitForExit() == 0)
        #expect(!process.logs("stopped").isEmpty)
        if executable != "herald-ingest" { #expect(!process.logs("consumer closed").isEmpty) }
        // Every line a service writes is a JSON object.
        for line in process.output {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "not JSON: \(line)")
        }
        await cluster.shutdown()
    }

    /// The embedded broker with Herald's topics in 4 partitions, and `herald-ingest` started on it with `environment`.
    static func ingest(_ environment: [String: String]) throws -> (EmbeddedKafkaCluster, ChildProcess) {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let process = try ChildProcess(
            "herald-ingest",
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_PORT": "0",
            ].merging(sampleApps) { $1 }.merging(environment) { $1 })
        return (cluster, process)
    }

    /// `ingest` on 127.0.0.1 with the topics' 4 partitions, once it listens; with its port.
    static func listeningIngest(_ environment: [String: String]) async throws -> (EmbeddedKafkaCluster, ChildProcess, Int) {
        let (cluster, process) = try ingest(
            ["HERALD_HTTP_HOST": "127.0.0.1", "HERALD_TOPIC_PARTITIONS": "4"].merging(environment) { $1 })
        try await waitUntil("herald-ingest to listen") { !process.logs("http listening").isEmpty }
        return (cluster, process, try #require(process.logs("http listening").first?["port"] as? Int))
    }

    @Test("Kafka gone: not ready (503), still live (200), so that a container's health check does not restart it for nothing")
    func liveWithoutKafka() async throws {
        let (cluster, process, port) = try await Self.listeningIngest(["HERALD_CREATE_TOPICS": "false"])
        #expect(try await httpGet("http://127.0.0.1:\(port)/health/ready").0 == 200)
        await cluster.shutdown()
        try await waitUntil("not ready") {
            (try? await httpGet("http://127.0.0.1:\(port)/health/ready"))?.0 == 503
        }
        #expect(try await httpGet("http://127.0.0.1:\(port)/health").0 == 503)
        // What an alert rule reads (deploy/prometheus/herald-alerts.yml, HeraldInstanceNotReady).
        let (_, metrics) = try await httpGet("http://127.0.0.1:\(port)/metrics")
        #expect(MetricsText(metrics).samples("herald_ready").map(\.value) == [0], "\(metrics)")
        let (status, body) = try await httpGet("http://127.0.0.1:\(port)/health/live")
        #expect(status == 200 && body.contains(#""status":"ok""#))
        process.signal(SIGKILL)
        _ = try await process.waitForExit()
    }

    /// A raw connection to `port` that sends `request` (headers and part of a body), then nothing.
    static func partialRequest(_ request: String, port: Int) throws -> Int32 {
        let fd = try rawConnection(port: port)
        let sent = request.withCString { send(fd, $0, strlen($0), 0) }
        #expect(sent == request.utf8.count)
        return fd
    }

    /// The whole answer to `request` (which says `Connection: close`) over a connection of its own. The blocking
    /// reads run off Swift's cooperative threads (two here): a test blocking them stalls every other test's waits.
    static func answer(to request: String, port: Int) async throws -> String {
        let fd = try partialRequest(request, port: port)
        defer { close(fd) }
        let answer = await BlockingCalls.run {
            var answer: [UInt8] = []
            var chunk = [UInt8](repeating: 0, count: 4096)
            while true {
                let read = recv(fd, &chunk, chunk.count, 0)
                guard read > 0 else { break }
                answer += chunk[..<read]
            }
            return answer
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Expects the server to close `fd` (a read gives 0 bytes) within `limit` of the read's start; the read blocks off
    /// the cooperative threads, for `limit` at most. The time counts from when the read begins, not from when it was
    /// asked for: a blocking thread busy with another test's read once added seconds to a 1 s body timeout.
    static func expectClosed(_ fd: Int32, within limit: Duration) async {
        var timeout = timeval(tv_sec: Int(limit.components.seconds) + 1, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let (read, waited) = await BlockingCalls.run {
            let started = ContinuousClock.now
            var answer = [UInt8](repeating: 0, count: 4096)
            let read = recv(fd, &answer, answer.count, 0)
            return (read, ContinuousClock.now - started)
        }
        #expect(read == 0, "\(read) bytes after \(waited): the connection is still open")
        #expect(waited < limit)
    }

    /// Whether `fd`'s request is still waiting: nothing answered, and the connection not closed (a read would block).
    static func waiting(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }

    /// A TCP connection to 127.0.0.1:`port` whose reads give up after 10 s.
    static func rawConnection(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    @Test("a body that arrives too slowly closes its connection after HERALD_HTTP_BODY_TIMEOUT_SECONDS, logged as 408 body_timeout")
    func slowBody() async throws {
        let (cluster, process, port) = try await Self.listeningIngest(["HERALD_HTTP_BODY_TIMEOUT_SECONDS": "1"])
        // The headers and a tenth of the body, then nothing (the idle timeout, 60 s, would not end it).
        let fd = try Self.partialRequest(
            "POST /v1/app/events HTTP/1.1\r\nHost: x\r\nX-Api-Key: live_demo_ios_0123456789\r\n"
                + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"installa", port: port)
        defer { close(fd) }
        await Self.expectClosed(fd, within: .seconds(9))
        try await waitUntil("the request logged as 408 body_timeout") {
            process.logs("request").contains { "\($0["status"] ?? "")" == "408" && $0["error_code"] as? String == "body_timeout" }
        }
        process.signal(SIGKILL)
        _ = try await process.waitForExit()
        await cluster.shutdown()
    }

    @Test("the notifier's endpoints: a request past HERALD_MAX_IN_FLIGHT_REQUESTS is 503, a body too slow closes its connection")
    func notifierBounded() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-e2e-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let process = try ChildProcess(
            "herald-notifier",
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1", "HERALD_HTTP_PORT": "0",
                "HERALD_TOPIC_PARTITIONS": "4", "HERALD_DATA_DIR": data.path,
                "HERALD_MAX_IN_FLIGHT_REQUESTS": "1", "HERALD_HTTP_BODY_TIMEOUT_SECONDS": "8",
            ].merging(sampleApps) { $1 })
        try await waitUntil("herald-notifier to listen") { !process.logs("http listening").isEmpty }
        let port = try #require(process.logs("http listening").first?["port"] as? Int)
        // The headers and part of the body, then nothing: the request holds the one slot until its deadline (8 s).
        let partial = "POST /v1/webhooks/sms HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            + "Content-Length: 100\r\n\r\nFrom=%2B3361"
        // Whole requests over connections of their own (a shared URLSession's may queue behind other tests').
        let reply = "From=%2B33612345678&To=%2B1555&Body=STOP"
        let whole = "POST /v1/webhooks/sms HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            + "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: \(reply.utf8.count)\r\n\r\n\(reply)"
        // A whole request meanwhile is refused. The check waits on that, not on time: a whole request that came before
        // the partial one was counted, or after its deadline on a busy machine, is answered; it asks again, with a new
        // partial request once the last one was closed, until one is refused while the partial one still waits.
        let holder = Locked<Int32>(-1)
        defer { close(holder.withLock { $0 }) }
        let last = Locked<String>("")
        do {
            try await waitUntil("the slot taken", timeout: .seconds(90)) {
                let fd = holder.withLock { $0 }
                if fd < 0 || !Self.waiting(fd) {
                    if fd >= 0 { close(fd) }
                    let opened = try Self.partialRequest(partial, port: port)
                    holder.withLock { $0 = opened }
                }
                let answer = try await Self.answer(to: whole, port: port)
                last.withLock { $0 = answer }
                return answer.hasPrefix("HTTP/1.1 503") && answer.contains("overloaded") && Self.waiting(holder.withLock { $0 })
            }
        } catch {
            Issue.record("the last answer: \(last.withLock { $0 })")
            throw error
        }
        // Closed at its deadline (8 s), not at the idle timeout's 60 s.
        await Self.expectClosed(holder.withLock { $0 }, within: .seconds(30))
        // The slot is free again: the next request is answered (refused for want of a webhook token, as configured).
        try await waitUntil("the slot given back") { try await Self.answer(to: whole, port: port).hasPrefix("HTTP/1.1 403") }
        process.signal(SIGKILL)
        _ = try await process.waitForExit()
        await cluster.shutdown()
    }

    @Test("a connection that sends nothing is closed after HERALD_HTTP_IDLE_TIMEOUT_SECONDS")
    func idleConnectionClosed() async throws {
        let (cluster, process, port) = try await Self.listeningIngest(["HERALD_HTTP_IDLE_TIMEOUT_SECONDS": "1"])
        // A raw TCP connection, left silent: the server closes it (recv returns 0) within a few seconds.
        let fd = try Self.rawConnection(port: port)
        defer { close(fd) }
        await Self.expectClosed(fd, within: .seconds(9))
        process.signal(SIGKILL)
        _ = try await process.waitForExit()
        await cluster.shutdown()
    }

    @Test("with HERALD_OPERATOR_TOKEN, the orchestrator's profile reads and /metrics need it; health does not")
    func operatorToken() async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("herald-e2e-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let token = "operator-token-0123456789"
        let process = try ChildProcess(
            "herald-orchestrator",
            environment: [
                "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1", "HERALD_HTTP_PORT": "0",
                "HERALD_TOPIC_PARTITIONS": "4", "HERALD_DATA_DIR": data.path, "HERALD_SESSION_TIMEOUT_MS": "3000",
                "HERALD_CREATE_TOPICS": "false", "HERALD_OPERATOR_TOKEN": token,
            ])
        try await waitUntil("herald-orchestrator to listen") { !process.logs("http listening").isEmpty }
        let port = try #require(process.logs("http listening").first?["port"] as? Int)
        let base = "http://127.0.0.1:\(port)"
        for path in ["/v1/profiles/demo/paul", "/v1/installations/demo/I-1", "/metrics"] {
            let (status, body) = try await httpGet(base + path)
            #expect(status == 401 && body.contains("operator_token_required"), "\(path): \(status)")
            #expect(try await httpGet(base + path, headers: ["Authorization": "Bearer wrong-token-0123456789"]).0 == 401)
            let (allowed, _) = try await httpGet(base + path, headers: ["Authorization": "Bearer \(token)"])
            #expect(allowed == (path == "/metrics" ? 200 : 404), "\(path): \(allowed)")
        }
        // The paths as an attacker writes them (curl --path-as-is: no client normalizes them away). The guard once
        // compared the raw path while the router dropped empty segments: `//v1/profiles/…` answered 200.
        for path in ["//v1/profiles/demo/paul", "/v1//profiles/demo/paul", "/v1/profiles/demo/paul/", "//metrics", "/metrics/"] {
            let (_, code) = try await runCommand("/usr/bin/curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--path-as-is", base + path])
            #expect(code == "401", "\(path): \(code)")
        }
        #expect(try await httpGet(base + "/health/live").0 == 200)
        #expect(process.logs("operator endpoints are open to anyone reaching this port: set HERALD_OPERATOR_TOKEN").isEmpty)
        process.signal(SIGTERM)
        #expect(try await process.waitForExit() == 0)
        await cluster.shutdown()
    }

    @Test(
        "a missing or invalid variable exits 2 with one line naming it",
        arguments: [
            ([:], "KAFKA_BOOTSTRAP_SERVERS"),
            (["KAFKA_BOOTSTRAP_SERVERS": "localhost"], "KAFKA_BOOTSTRAP_SERVERS"),
            (["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "HERALD_HTTP_PORT": "http"], "HERALD_HTTP_PORT"),
            (["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "HERALD_LOG_LEVEL": "loud"], "HERALD_LOG_LEVEL"),
            (["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "KAFKA_ACKS": "1"], "KAFKA_ACKS"),
            (["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092"], "HERALD_APPS_FILE"),
            // The sample file's keys are published: a trial says so.
            (["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "HERALD_APPS_FILE": sampleAppsFile], "HERALD_APPS_FILE"),
            (sampleApps.merging(["KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "HERALD_ALLOW_SAMPLE_KEYS": "maybe"]) { $1 },
             "HERALD_ALLOW_SAMPLE_KEYS"),
        ])
    func badConfiguration(environment: [String: String], variable: String) async throws {
        let process = try ChildProcess("herald-ingest", environment: environment)
        #expect(try await process.waitForExit() == 2)
        #expect(process.output.count == 1)
        #expect(process.output.first?.hasPrefix("herald-ingest: configuration error: \(variable):") == true)
    }

    @Test("refuses to start when a keyed topic has another partition count than configured")
    func partitionMismatch() async throws {
        let (cluster, process) = try Self.ingest(["HERALD_TOPIC_PARTITIONS": "12"])
        #expect(try await process.waitForExit() == 1)
        let failure = try #require(process.logs("stopped on error").first)
        #expect((failure["error"] as? String)?.contains("has 4 partitions, expected 12") == true)
        let refused = process.logs("topic setting refused")
        #expect(
            refused.count == HeraldTopic.allCases.filter(\.isKeyedByProfile).count,
            "one line a keyed topic (herald.config and herald.owners have one partition)")
        #expect(refused.first?["setting"] as? String == "partitions")
        await cluster.shutdown()
    }

    @Test("refuses to start when the topics have fewer replicas than HERALD_TOPIC_REPLICATION asks for, one line a topic")
    func replicationBelowAsked() async throws {
        // One broker: every topic has one replica.
        let (cluster, process) = try Self.ingest(["HERALD_TOPIC_PARTITIONS": "4", "HERALD_TOPIC_REPLICATION": "3"])
        #expect(try await process.waitForExit() == 1)
        let refused = process.logs("topic setting refused")
        #expect(Set(refused.compactMap { $0["topic"] as? String }) == Set(HeraldTopic.allCases.map(\.name)))
        #expect(refused.allSatisfy { $0["setting"] as? String == "replication.factor" && $0["level"] as? String == "error" })
        #expect((refused.first?["problem"] as? String)?.contains("has 1 replicas, HERALD_TOPIC_REPLICATION asks for 3") == true)
        await cluster.shutdown()
    }

    @Test("herald-devbroker serves Herald's topics to kcat and writes its bootstrap file until SIGTERM")
    func devBroker() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-\(UUID().uuidString)/bootstrap")
        let broker = try ChildProcess(
            "herald-devbroker", arguments: ["--brokers", "2", "--partitions", "5", "--bootstrap-file", file.path],
            environment: [:])
        try await waitUntil("the bootstrap file") { FileManager.default.fileExists(atPath: file.path) }
        let bootstrap = try String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(bootstrap.split(separator: ",").count == 2)

        let kcat = try #require(
            ["/usr/bin/kcat", "/usr/local/bin/kcat"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "kcat is installed by scripts/setup.sh")
        let (status, listing) = try await runCommand(kcat, ["-b", bootstrap, "-L", "-m", "10"])
        #expect(status == 0)
        #expect(listing.contains(" 2 brokers:"))
        for topic in HeraldTopic.allCases {
            let partitions = topic.isKeyedByProfile ? 5 : 1
            #expect(listing.contains("topic \"\(topic.name)\" with \(partitions) partitions"), "\(topic.name)")
        }

        broker.signal(SIGTERM)
        #expect(try await broker.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: file.path))
    }
}
