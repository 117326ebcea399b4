import ArgumentParser
import Foundation
import Logging
import Shared
import UnixSignals

/// The embedded Kafka-protocol broker for development and tests.
@main
struct DevBroker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald-devbroker",
        abstract: "Run an in-memory Kafka-protocol cluster on loopback with Herald's topics (development only).",
        discussion: """
            Starts librdkafka's mock cluster with N brokers on 127.0.0.1, creates every Herald topic, prints the \
            bootstrap address and writes it to --bootstrap-file. Runs until SIGTERM or SIGINT. Data lives in memory \
            and is gone when it stops.
            """)

    @Option(help: "Number of brokers.")
    var brokers: Int = 3

    @Option(help: "Partitions of every keyed topic (herald.config always has 1).")
    var partitions: Int32 = 12

    @Option(help: "File to write the bootstrap address to (the parent directory is created).")
    var bootstrapFile: String?

    @Option(help: "Log format: json or console.")
    var logFormat: String = "json"

    func validate() throws {
        guard (1...32).contains(brokers) else { throw ValidationError("--brokers must be from 1 to 32") }
        guard (1...10_000).contains(partitions) else { throw ValidationError("--partitions must be from 1 to 10000") }
        guard LogFormat(rawValue: logFormat) != nil else { throw ValidationError("--log-format must be json or console") }
    }

    func run() async throws {
        HeraldLogging.bootstrap(service: "devbroker", level: .info, format: LogFormat(rawValue: logFormat) ?? .json)
        let logger = Logger(label: "herald.devbroker")
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let cluster = try EmbeddedKafkaCluster(brokers: brokers, logger: logger)
        let specs = HeraldTopic.specs(partitions: partitions)
        try cluster.createTopics(specs)
        if let bootstrapFile {
            let url = URL(fileURLWithPath: bootstrapFile)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            // Written whole then renamed, so a reader never sees half an address.
            let temporary = url.appendingPathExtension("tmp")
            try Data((cluster.bootstrapServers + "\n").utf8).write(to: temporary)
            guard rename(temporary.path, url.path) == 0 else {
                throw ValidationError("cannot write \(bootstrapFile): \(String(cString: strerror(errno)))")
            }
        }
        logger.info(
            "embedded broker ready",
            metadata: [
                "bootstrap": .string(cluster.bootstrapServers),
                "brokers": .stringConvertible(brokers),
                "topics": .string(specs.map { "\($0.name):\($0.partitions)" }.joined(separator: ",")),
            ])
        print("KAFKA_BOOTSTRAP_SERVERS=\(cluster.bootstrapServers)")
        fflush(nil)
        for await signal in signals {
            logger.info("stopping", metadata: ["signal": .string("\(signal)")])
            break
        }
        await cluster.shutdown()
        if let bootstrapFile { try? FileManager.default.removeItem(atPath: bootstrapFile) }
    }
}
