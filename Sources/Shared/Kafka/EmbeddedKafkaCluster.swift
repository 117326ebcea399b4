import CRdKafka
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A Kafka-protocol cluster in this process, built on librdkafka's mock cluster: N brokers on loopback that every
/// client (and `kcat`) reaches through `bootstrapServers`. Keeps everything in memory. For development and tests.
package final class EmbeddedKafkaCluster: Sendable {
    package let bootstrapServers: String
    package let brokerIDs: [Int32]
    private let runtime: RdKafkaRuntime
    private let cluster: MockClusterPointer

    /// The mock cluster's pointer; the mock API is thread-safe (calls are handed to its own thread).
    private struct MockClusterPointer: @unchecked Sendable { let pointer: OpaquePointer }

    package init(brokers: Int = 3, logger: Logger) throws(KafkaError) {
        guard (1...32).contains(brokers) else {
            throw KafkaError(code: .configuration, reason: "brokers must be between 1 and 32, got \(brokers)")
        }
        // The mock cluster lives inside a (never used) producer handle, whose thread relays the mock's logs.
        let runtime = try RdKafkaRuntime(
            type: RD_KAFKA_PRODUCER,
            // The host handle never connects anywhere: its "no bootstrap.servers" notice is noise.
            configuration: RdKafkaConfiguration([("client.id", "herald-devbroker"), ("log_level", "4")]),
            events: 0,
            logger: logger,
            onEvent: { _, _ in }
        )
        guard let cluster = rd_kafka_mock_cluster_new(runtime.handle, Int32(brokers)) else {
            Task { await runtime.stop() }
            throw KafkaError(code: .other, reason: "rd_kafka_mock_cluster_new failed")
        }
        self.runtime = runtime
        self.cluster = MockClusterPointer(pointer: cluster)
        self.bootstrapServers = String(cString: rd_kafka_mock_cluster_bootstraps(cluster))
        self.brokerIDs = (1...Int32(brokers)).map { $0 }
    }

    /// Creates a topic (replicated on up to 3 brokers). Creating an existing topic changes nothing.
    package func createTopic(_ spec: TopicSpec) throws(KafkaError) {
        let replicas = spec.replicationFactor > 0 ? spec.replicationFactor : Int32(min(3, brokerIDs.count))
        let err = rd_kafka_mock_topic_create(cluster.pointer, spec.name, spec.partitions, replicas)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS {
            throw KafkaError(err, context: "create topic \(spec.name)")
        }
    }

    package func createTopics(_ specs: [TopicSpec]) throws(KafkaError) {
        for spec in specs { try createTopic(spec) }
    }

    /// The Kafka protocol's request kinds whose answers a test may replace with errors.
    package enum RequestKind: Int16, Sendable {
        case produce = 0
        case joinGroup = 11
        case syncGroup = 14
    }

    /// Errors a test may answer requests with (Kafka protocol error codes).
    package enum RequestError: Int32, Sendable {
        case notCoordinator = 16
        case rebalanceInProgress = 27
    }

    /// Answers the next `count` requests of `kind`, to any broker, with `error`.
    package func pushRequestErrors(_ kind: RequestKind, _ error: RequestError, count: Int) {
        var errors = [rd_kafka_resp_err_t](repeating: rd_kafka_resp_err_t(rawValue: error.rawValue), count: count)
        errors.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_mock_push_request_errors_array(cluster.pointer, kind.rawValue, buffer.count, buffer.baseAddress)
        }
    }

    /// Disconnects a broker and refuses new connections to it, until `setBrokerUp`.
    ///
    /// librdkafka 2.0.2's mock closes the broker's listener and binds its port again at once (to keep it), and aborts
    /// the process if that bind fails (`Failed to-create mock broker listener`, seen twice in `make test`). Two things
    /// can hold the port at that instant:
    /// - a child this process is spawning: between its fork and its exec it holds a copy of every descriptor, the
    ///   listener's too (close-on-exec closes it only at the exec), so the old listener is still listening. Spawns go
    ///   through `spawningProcess`, which this call excludes;
    /// - another process's outgoing connection taking the freed port as its local one: a connection the broker
    ///   accepted, held across the call, keeps the port bound.
    package func setBrokerDown(_ id: Int32) throws(KafkaError) {
        let held = Self.acceptedConnection(to: address(of: id))
        defer { if let held { close(held) } }
        let err = Self.listenersChanging.withLock { _ in rd_kafka_mock_broker_set_down(cluster.pointer, id) }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "set broker \(id) down") }
    }

    /// Taken while a broker's listener is closed and bound again (`setBrokerDown`), and by `spawningProcess`.
    private static let listenersChanging = Mutex<Void>(())

    /// Runs `spawn` (a `fork`/`posix_spawn` and its `exec`) when no embedded broker of this process is re-binding its
    /// listener: a process that hosts embedded brokers and starts children spawns through this (the tests do).
    package static func spawningProcess<T>(_ spawn: () throws -> T) rethrows -> T {
        try listenersChanging.withLock { _ in try spawn() }
    }

    /// A broker's `host:port` (the bootstrap list names the brokers in id order).
    private func address(of id: Int32) -> Substring? {
        let addresses = bootstrapServers.split(separator: ",")
        return addresses.indices.contains(Int(id) - 1) ? addresses[Int(id) - 1] : nil
    }

    /// A socket connected to `address` once the broker has answered an ApiVersions request on it (so it has accepted
    /// the connection); nil if that fails within 5 s.
    private static func acceptedConnection(to address: Substring?) -> Int32? {
        guard let address, let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...])
        else { return nil }
        var peer = sockaddr_in()
        peer.sin_family = sa_family_t(AF_INET)
        peer.sin_port = port.bigEndian
        guard inet_pton(AF_INET, String(address[..<colon]), &peer.sin_addr) == 1 else { return nil }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let connected = withUnsafePointer(to: &peer) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // ApiVersions v0: size, api key 18, version 0, correlation id 1, client id "herald".
        let request: [UInt8] = [0, 0, 0, 16, 0, 18, 0, 0, 0, 0, 0, 1, 0, 6] + Array("herald".utf8)
        var answer = [UInt8](repeating: 0, count: 4)
        guard connected == 0, send(fd, request, request.count, Int32(MSG_NOSIGNAL)) == request.count,
            recv(fd, &answer, answer.count, Int32(MSG_WAITALL)) == answer.count
        else {
            close(fd)
            return nil
        }
        return fd
    }

    package func setBrokerUp(_ id: Int32) throws(KafkaError) {
        let err = rd_kafka_mock_broker_set_up(cluster.pointer, id)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(err, context: "set broker \(id) up") }
    }

    /// Stops the brokers and frees the cluster.
    package func shutdown() async {
        let cluster = cluster
        _ = await runtime.blockingCall { _ in rd_kafka_mock_cluster_destroy(cluster.pointer) }
        await runtime.stop()
    }
}
