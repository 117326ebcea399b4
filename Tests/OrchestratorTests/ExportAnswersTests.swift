import Foundation
import HeraldTestSupport
import Logging
import ServiceLifecycle
import ServiceSupport
import Shared
import Testing

@testable import Orchestrator

/// The notifier's part of an export through Kafka (`ExportAnswers`), against a stand-in notifier that answers the
/// questions it reads on `herald.export.questions` for the partitions it is told to.
@Suite("Export: the notifiers' answers through Kafka", .timeLimit(.minutes(5)))
struct ExportAnswersTests {
    let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Runs `body` with an `ExportAnswers` following its answers, and a stand-in notifier answering `partitions`
    /// (each with one line naming the partition and the profiles asked; partition 1's in two parts).
    func withStandIn(answering partitions: [Int32], timeout: Duration, _ body: (ExportAnswers) async throws -> Void) async throws {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 3))
        let client = KafkaClientSettings(bootstrapServers: cluster.bootstrapServers)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(client: client, clientID: "export-test"), logger: logger)
        let answers = ExportAnswers(producer: producer, instance: "orchestrator-1", partitionCount: 3, timeout: timeout, logger: logger)
        let follower = try TopicTailFollower(.exportAnswers, client: client, instanceID: "orchestrator-1", logger: logger) { answers.apply($0) }
        let standIn = try TopicTailFollower(.exportQuestions, client: client, instanceID: "notifier-1", logger: logger) { record in
            guard let question = try? Wire.decode(ExportQuestion.self, from: record.value ?? []) else { return }
            var records: [KafkaOutgoingRecord] = []
            for partition in partitions {
                let line = "p\(partition):\(question.profileKeys.joined(separator: ","))"
                let lines = partition == 1 ? [line, line + "+"] : [line]
                for answer in ExportAnswer.parts(question: question.id, instance: "notifier-1", partition: partition, lines: lines, maxBytes: 4) {
                    records.append(KafkaOutgoingRecord(topic: HeraldTopic.exportAnswers.name, key: Array(question.id.utf8), value: try! Wire.encode(answer)))
                }
            }
            _ = try? await producer.send(records.reversed())
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: [producer, follower, standIn], logger: logger))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            defer { tasks.cancelAll() }
            try await waitUntil("both followers to be assigned") { follower.isFollowing && standIn.isFollowing }
            try await body(answers)
            await group.triggerGracefulShutdown()
        }
        await cluster.shutdown()
    }

    @Test("every partition answered: the lines, partition by partition, parts in order")
    func answered() async throws {
        // Every partition answers: the wait ends when the answers come, its timeout only a hang guard (20 s passed
        // without them once in a loaded main run, the stand-in's round trip through the broker starved).
        try await withStandIn(answering: [2, 0, 1], timeout: .seconds(120)) { answers in
            let lines = try await answers.ask(project: "demo", profileKeys: ["demo/paul"], email: nil, phone: nil, tokens: false)
            #expect(lines == ["p0:demo/paul", "p1:demo/paul", "p1:demo/paul+", "p2:demo/paul"])
        }
    }

    @Test("a partition no notifier answers: unavailable, never an export without it")
    func partitionMissing() async throws {
        try await withStandIn(answering: [0, 2], timeout: .seconds(2)) { answers in
            // Unavailable, naming the first partition not answered when the time is up: partition 1, or 0 when the
            // stand-in's answers are slower than that (a loaded machine); which ones are missing is
            // `ExportAnswerTests/assembly`'s.
            await #expect {
                _ = try await answers.ask(project: "demo", profileKeys: ["demo/paul"], email: nil, phone: nil, tokens: false)
            } throws: { error in
                guard let unavailable = error as? PartitionPeers.Unavailable else { return false }
                return unavailable.partition <= 1
            }
        }
    }
}
