import Foundation
import Logging
import ServiceSupport
import Shared
import Synchronization

/// The notifier's part of an export, asked through Kafka (docs/data-rights.md, "Export"): `ask` writes an
/// `ExportQuestion` on `herald.export.questions` and waits until every notifier partition has answered on
/// `herald.export.answers` (`ExportAnswerAssembly`), which `apply` reads (a `TopicTailFollower`), or until `timeout`:
/// then the partitions not answered make the export unavailable, never an export with a partition left out.
final class ExportAnswers: Sendable {
    let producer: KafkaProducer
    let instance: String
    let partitionCount: Int32
    let timeout: Duration
    let logger: Logger
    private let waiting = Mutex<[String: Waiting]>([:])

    private struct Waiting {
        var assembly: ExportAnswerAssembly
        var continuation: CheckedContinuation<[String], any Error>
        /// Writes the question, then waits out the timeout: cancelled when the question is answered first.
        var asking: Task<Void, Never>?
    }

    init(producer: KafkaProducer, instance: String, partitionCount: Int32, timeout: Duration = .seconds(10), logger: Logger) {
        self.producer = producer
        self.instance = instance
        self.partitionCount = partitionCount
        self.timeout = timeout
        self.logger = logger
    }

    /// The question's lines from every notifier partition, in partition order. Throws `PartitionPeers.Unavailable`
    /// naming the first partition not answered within `timeout` (or partition 0 when the question could not be written).
    func ask(project: String, profileKeys: [String], email: String?, phone: String?, tokens: Bool) async throws -> [String] {
        let id = "export-\(UUID().uuidString.lowercased())"
        let question = ExportQuestion(
            id: id, project: project, profileKeys: profileKeys, email: email, phone: phone, tokens: tokens, askedBy: instance,
            until: Date().addingTimeInterval(Double(timeout.components.seconds)))
        let value = try Wire.encode(question)
        let partitionCount = partitionCount
        return try await withCheckedThrowingContinuation { continuation in
            waiting.withLock { $0[id] = Waiting(assembly: ExportAnswerAssembly(partitionCount: partitionCount), continuation: continuation) }
            let asking = Task {
                do {
                    _ = try await producer.send(KafkaOutgoingRecord(topic: HeraldTopic.exportQuestions.name, key: Array(id.utf8), value: value))
                } catch {
                    finish(id, .failure(PartitionPeers.Unavailable(partition: 0, reason: "the question to the notifiers could not be written: \(error)")))
                    return
                }
                try? await Task.sleep(for: timeout)
                let missing = waiting.withLock { $0[id]?.assembly.missing }
                if let missing, let first = missing.first {
                    logger.warning("export: notifier partitions did not answer", metadata: ["question": "\(id)", "partitions": "\(missing)"])
                    finish(id, .failure(PartitionPeers.Unavailable(partition: first, reason: "no notifier answered for it within \(timeout)")))
                }
            }
            waiting.withLock { $0[id]?.asking = asking }
        }
    }

    /// An answer read on `herald.export.answers`: added to its question's, which is answered once it is whole.
    func apply(_ record: KafkaRecord) {
        guard let value = record.value, let answer = try? Wire.decode(ExportAnswer.self, from: value) else { return }
        let lines: [String]? = waiting.withLock { waiting in
            guard waiting[answer.question] != nil else { return nil }
            waiting[answer.question]?.assembly.add(answer)
            return waiting[answer.question]?.assembly.lines
        }
        if let lines { finish(answer.question, .success(lines)) }
    }

    /// Resumes the question's waiter once: whichever of its answers, its timeout or a failed write comes first.
    private func finish(_ id: String, _ result: Result<[String], any Error>) {
        guard let done = waiting.withLock({ $0.removeValue(forKey: id) }) else { return }
        done.asking?.cancel()
        done.continuation.resume(with: result)
    }
}
