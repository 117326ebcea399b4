import ArgumentParser
import Foundation
import Logging
import Shared

/// Where the cluster is: `--bootstrap`, else `$KAFKA_BOOTSTRAP_SERVERS`, else the dev stack's `.run/bootstrap`.
struct ClusterOptions: ParsableArguments {
    @Option(help: "Kafka bootstrap servers (default: $KAFKA_BOOTSTRAP_SERVERS, else the dev stack's .run/bootstrap).")
    var bootstrap: String?

    func client() throws -> KafkaClientSettings {
        if let servers = bootstrap ?? ProcessInfo.processInfo.environment["KAFKA_BOOTSTRAP_SERVERS"] {
            return try Self.client(servers)
        }
        if let data = FileManager.default.contents(atPath: ".run/bootstrap") {
            let servers = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if !servers.isEmpty { return try Self.client(servers) }
        }
        throw ValidationError("no Kafka: set --bootstrap or KAFKA_BOOTSTRAP_SERVERS (or start `make run`)")
    }

    /// The cluster at `servers`, with the environment's other `KAFKA_*` settings, as the services read them
    /// (`KAFKA_SECURITY_PROTOCOL=SASL_SSL` → `security.protocol`): a cluster that asks for SASL over TLS asks it of
    /// this command too.
    static func client(_ servers: String) throws -> KafkaClientSettings {
        do {
            return KafkaClientSettings(
                bootstrapServers: servers, overrides: try CommonConfig.kafkaOverrides(ProcessInfo.processInfo.environment))
        } catch {
            throw ValidationError("\(error)")
        }
    }

    static let logger = Logger(label: "herald", factory: { _ in SwiftLogNoOpLogHandler() })

    /// The cluster's topics (Herald's and others, not Kafka's internal ones) with their partition counts.
    static func topics(_ client: KafkaClientSettings) async throws -> [String: Int32] {
        let admin = try KafkaAdmin(client: client, clientID: "herald-cli", logger: logger)
        defer { Task { await admin.shutdown() } }
        do {
            return try await admin.describeTopics().filter { !$0.key.hasPrefix("__") }
        } catch {
            throw fail("cannot read the cluster's topics: \(error)")
        }
    }
}

extension String {
    /// Left-aligned in a column of `width` characters (longer text is cut).
    func column(_ width: Int) -> String { padding(toLength: width, withPad: " ", startingAt: 0) }
}

/// One clear line on standard error and exit 1 (a broker that does not answer, an unknown topic).
func fail(_ message: String) -> ExitCode {
    FileHandle.standardError.write(Data("herald: \(message)\n".utf8))
    return ExitCode(1)
}

struct TopicsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "topics", abstract: "List the cluster's topics: partitions, records held, end offsets.")

    @OptionGroup var cluster: ClusterOptions

    @Flag(help: "One line per partition (low and end offsets) instead of one per topic.")
    var partitions = false

    func run() async throws {
        let client = try cluster.client()
        let topics = try await ClusterOptions.topics(client)
        let inspector = try KafkaGroupInspector(client: client, groupID: "herald-cli", logger: ClusterOptions.logger)
        defer { Task { await inspector.shutdown() } }
        let width = max(topics.keys.map(\.count).max() ?? 5, 5)
        print("\("TOPIC".column(width))  PARTITIONS  RECORDS  END OFFSETS")
        for (name, count) in topics.sorted(by: { $0.key < $1.key }) {
            var ends: [Int64] = []
            var records: Int64 = 0
            for partition in 0..<count {
                let marks = try await inspector.watermarks(TopicPartition(name, partition))
                ends.append(marks.high)
                records += marks.high - marks.low
                if partitions {
                    print("\(name.column(width))  [\(partition)] low \(marks.low) end \(marks.high)")
                }
            }
            if !partitions {
                print("\(name.column(width))  \(String(count).column(10))  \(String(records).column(7))  \(ends.map(String.init).joined(separator: ","))")
            }
        }
    }
}

struct LagCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lag",
        abstract: "How far each consumer group is behind, per topic and partition.",
        discussion: """
            The services keep their offsets in their own databases and copy them after each batch to the group \
            <consumer group>.offsets, which has no members; lag is the partition's end offset minus that copy (a partition never committed counts from its first \
            offset).
            """)

    @OptionGroup var cluster: ClusterOptions

    @Option(name: .customLong("group"), help: "A consumer group (repeatable; default: herald-orchestrator.offsets and herald-notifier.offsets, where the services copy their offsets).")
    var groups: [String] = ["herald-orchestrator.offsets", "herald-notifier.offsets"]

    func run() async throws {
        let client = try cluster.client()
        let topics = try await ClusterOptions.topics(client)
        let all = topics.sorted { $0.key < $1.key }.flatMap { topic in (0..<topic.value).map { TopicPartition(topic.key, $0) } }
        print("\("GROUP".column(28)) \("TOPIC".column(21)) PARTITION  COMMITTED  END  LAG")
        for group in groups {
            let inspector = try KafkaGroupInspector(client: client, groupID: group, logger: ClusterOptions.logger)
            let committed: [TopicPartition: Int64]
            do { committed = try await inspector.committed(all) } catch { throw fail("cannot read group \(group): \(error)") }
            var total: Int64 = 0
            // Only the topics the group consumes: those with a commit.
            let consumed = Set(committed.keys.map(\.topic))
            for tp in all where consumed.contains(tp.topic) {
                let marks = try await inspector.watermarks(tp)
                let position = committed[tp] ?? marks.low
                let lag = max(0, marks.high - position)
                total += lag
                print(
                    "\(group.column(28)) \(tp.topic.column(21)) \(String(tp.partition).column(10)) "
                        + "\((committed[tp].map(String.init) ?? "-").column(10)) \(marks.high)  \(lag)")
            }
            print(consumed.isEmpty ? "\(group): nothing committed yet" : "\(group): total lag \(total)")
            await inspector.shutdown()
        }
    }
}

struct TailCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tail",
        abstract: "Print a topic's records as JSON lines, decoded (from the beginning; --follow keeps waiting).")

    @OptionGroup var cluster: ClusterOptions

    @Argument(help: "The topic (e.g. herald.deliveries).")
    var topic: String

    @Option(help: "Only records with this key (e.g. demo/paul).")
    var key: String?

    @Flag(name: .shortAndLong, help: "Keep printing new records until Ctrl-C.")
    var follow = false

    @Option(help: "Print at most this many records.")
    var limit: Int?

    func run() async throws {
        let client = try cluster.client()
        let topics = try await ClusterOptions.topics(client)
        guard let count = topics[topic] else {
            throw fail("no topic \(topic) (known: \(topics.keys.sorted().joined(separator: ", ")))")
        }
        // Where "caught up" is, for a tail without --follow.
        let inspector = try KafkaGroupInspector(client: client, groupID: "herald-cli", logger: ClusterOptions.logger)
        var ends: [Int32: Int64] = [:]
        var reached: Set<Int32> = []
        for partition in 0..<count {
            let marks = try await inspector.watermarks(TopicPartition(topic, partition))
            ends[partition] = marks.high
            // Nothing to read: never written, or every record gone with the retention (low = high > 0).
            if marks.high <= marks.low { reached.insert(partition) }
        }
        await inspector.shutdown()
        if !follow && reached.count == Int(count) { return }

        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: client, clientID: "herald-cli", groupID: "herald-tail-\(UUID().uuidString)", topics: [topic]),
            logger: ClusterOptions.logger)
        var printed = 0
        loop: for try await batch in consumer.batches() {
            for record in batch.records {
                if let key, record.keyString != key { continue }
                print(String(decoding: Self.line(record).serialized, as: UTF8.self))
                printed += 1
                if let limit, printed >= limit { break loop }
            }
            for record in batch.records where record.offset + 1 >= ends[record.partition] ?? 0 { reached.insert(record.partition) }
            if !follow && reached.count == Int(count) { break }
        }
        consumer.stop()
        await consumer.close()
    }

    /// `{"topic","partition","offset","key","headers","value"}`: the value as JSON when it is, else as text; bytes that
    /// are not UTF-8 (a header, a key or a value) as `{"base64": "…"}`.
    static func line(_ record: KafkaRecord) -> JSONValue {
        var members = [
            JSONMember("topic", .string(record.topic)), JSONMember("partition", .number(String(record.partition))),
            JSONMember("offset", .number(String(record.offset))), JSONMember("key", text(record.key)),
        ]
        if !record.headers.isEmpty {
            members.append(JSONMember("headers", .object(record.headers.map { JSONMember($0.name, text($0.value)) })))
        }
        let value: JSONValue = record.value.map { bytes in (try? JSONParser.parse(bytes)) ?? text(bytes) } ?? .null
        members.append(JSONMember("value", value))
        return .object(members)
    }

    /// UTF-8 text as a string, other bytes as `{"base64": "…"}`, nothing as null.
    static func text(_ bytes: [UInt8]?) -> JSONValue {
        guard let bytes else { return .null }
        if let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
        return .object([JSONMember("base64", .string(Data(bytes).base64EncodedString()))])
    }
}

struct SendTestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "send-test",
        abstract: "Send a transactional test push to one installation, or to every installation of a user.",
        discussion: """
            Writes a send request to herald.sends.push: the notifier delivers it like any push, never keeps it in \
            the inbox, and reports it on herald.deliveries (herald tail herald.deliveries --key KEY).
            """)

    @OptionGroup var cluster: ClusterOptions

    @Argument(help: "The project id.")
    var project: String

    @Option(help: "The user's custom ID.")
    var customID: String?

    @Option(help: "The installation ID (with --custom-id when the installation belongs to an identified user).")
    var installation: String?

    @Option(help: "Only the installations of this app.")
    var app: String?

    @Option(help: "The notification's title.")
    var title = "Test"

    @Option(help: "The notification's body.")
    var body = "A test push from Herald"

    func validate() throws {
        guard customID != nil || installation != nil else { throw ValidationError("name --custom-id or --installation") }
        if let customID, customID.isEmpty { throw ValidationError("--custom-id is empty") }
    }

    func run() async throws {
        let client = try cluster.client()
        let key = ProfileKey.of(project, customID: customID, installationID: installation)
        let id = UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
        var send = SendRequest(
            sendID: "test-\(id)", project: project, profileKey: key, customID: customID, channel: .push, marketing: false,
            app: app, campaign: "send-test", step: "test", occurrence: id, template: "send-test", language: "default",
            content: ["title": title, "body": body], payload: nil, trigger: .init(type: .api, eventID: id, at: Date()),
            decidedAt: Date(), expiresAt: Date().addingTimeInterval(3600))
        send.test = true
        send.installationID = installation
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: client, clientID: "herald-cli"), logger: ClusterOptions.logger)
        do {
            _ = try await producer.send([
                KafkaOutgoingRecord(topic: HeraldTopic.sendsPush.name, key: Array(key.utf8), value: try Wire.encode(send))
            ])
        } catch {
            await producer.shutdown()
            throw fail("the broker did not take the send: \(error)")
        }
        await producer.shutdown()
        print("sent \(send.sendID) to \(key)\(installation.map { " (installation \($0))" } ?? "") — follow it with: herald tail herald.deliveries --key \(key) --follow")
    }
}
