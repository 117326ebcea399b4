import Foundation
import ServiceLifecycle
import ServiceSupport
import Shared

/// `herald-pipe ingest|decide|deliver`: one hop of the whole path's ceiling (docs/performance.md, "The pipe"). Each
/// stage is a process started as the services are, from the same environment variables, with the same clients and
/// settings: the HTTP server and the idempotent producer of the ingest, the consumer and producer of the orchestrator,
/// the consumer, the HTTP/2 client and the producer of the notifier. It does no domain work and no SQLite, so that
/// `scripts/bench/path pipe` measures what the transport alone costs on this machine today.
@main
enum PipeMain {
    static func main() async {
        let stage = CommandLine.arguments.dropFirst().first.flatMap(PipeStage.init(rawValue:))
        guard let stage else {
            FileHandle.standardError.write(Data("usage: herald-pipe ingest|decide|deliver\n".utf8))
            exit(2)
        }
        await ServiceMain.run(
            service: "pipe-\(stage.rawValue)",
            parse: { values throws(ConfigError) in try PipeConfig.read(values, stage: stage) },
            common: { $0.service.common },
            build: { context in
                switch stage {
                case .ingest: try await PipeIngest.services(context)
                case .decide: try await PipeDecide.services(context)
                case .deliver: try await PipeDeliver.services(context)
                }
            })
    }
}

enum PipeStage: String, Sendable {
    case ingest, decide, deliver
}

/// The stage's settings: the stateful services' (Kafka, the consumer group, HTTP), and where the deliver stage calls
/// APNs.
struct PipeConfig: Sendable {
    var service: StatefulServiceConfig
    /// `HERALD_APNS_URL`, `HERALD_PROVIDER_CA_FILE` (deliver).
    var apnsURL: String
    var caFile: String?

    static func read(_ values: [String: String], stage: PipeStage) throws(ConfigError) -> PipeConfig {
        var env = EnvironmentReader(values)
        var service = try StatefulServiceConfig.read(&env, service: "pipe-\(stage.rawValue)", defaultPort: 0)
        let apnsURL = env.string("HERALD_APNS_URL", default: "https://api.push.apple.com")
        let caFile = env.string("HERALD_PROVIDER_CA_FILE", default: "")
        service.common.unknownVariables = env.unknownHeraldVariables
        return PipeConfig(service: service, apnsURL: apnsURL, caFile: caFile.isEmpty ? nil : caFile)
    }
}

extension ServiceContext where Config == PipeConfig {
    /// A consumer hop's clients, as the stateful services make theirs: the consumer of `input` in the stage's group, and
    /// the producer, told where `output` is.
    func hop(from input: HeraldTopic, to output: HeraldTopic) async throws -> (KafkaConsumer, KafkaProducer) {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: common.kafka, clientID: common.instanceID), logger: logger)
        await producer.prepare(topics: [output])
        let consumer = try KafkaConsumer(configuration: config.service.consumerConfiguration(topics: [input]), logger: logger)
        return (consumer, producer)
    }
}

/// Runs `body` until it succeeds, up to `attempts` times, waiting longer after each failure (as the services retry a
/// produce or a provider call): a run of the pipe loses nothing to one refusal. Returns false when every attempt failed.
func retrying(_ attempts: Int = 5, _ body: () async throws -> Void) async -> Bool {
    for attempt in 1...attempts {
        do {
            try await body()
            return true
        } catch {
            try? await Task.sleep(for: .milliseconds(50 * attempt))
        }
    }
    return false
}
