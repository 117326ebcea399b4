import Foundation
import Logging
import PartitionStore
import ServiceSupport
import Shared

/// The notifier's part of an export (docs/data-rights.md, "Export"): each `ExportQuestion` read on
/// `herald.export.questions` is answered for every partition this instance runs, one `ExportAnswer` (or several
/// parts) per partition on `herald.export.answers`, with no line when the partition holds nothing of the person, so
/// that the asker knows every partition answered.
struct ExportAnswering: Sendable {
    let partitions: NotifierPartitions
    let producer: KafkaProducer
    let instance: String
    let logger: Logger

    func answer(_ record: KafkaRecord) async {
        guard let value = record.value else { return }
        let question: ExportQuestion
        do {
            question = try Wire.decode(ExportQuestion.self, from: value)
        } catch {
            logger.warning("unreadable export question", metadata: ["offset": "\(record.offset)", "error": "\(error)"])
            return
        }
        // Its asker no longer waits (a question read late: this instance started, or caught up, after it).
        guard question.until > Date() else { return }
        var answers: [ExportAnswer] = []
        for partition in await partitions.owner.runningPartitions {
            do {
                // A partition that stopped running here meanwhile is not answered: its new owner answers it.
                guard
                    let rows = try await partitions.export(
                        project: question.project, keys: question.profileKeys, email: question.email, phone: question.phone,
                        tokens: question.tokens, in: [partition])
                else { continue }
                answers += ExportAnswer.parts(
                    question: question.id, instance: instance, partition: partition,
                    lines: rows.map { ProfileExportResponse.line(service: "notifier", $0) })
            } catch {
                logger.error("export: a partition could not be read", metadata: ["partition": "\(partition)", "error": "\(error)"])
            }
        }
        do {
            _ = try await producer.send(try answers.map { answer in
                KafkaOutgoingRecord(topic: HeraldTopic.exportAnswers.name, key: Array(question.id.utf8), value: try Wire.encode(answer))
            })
        } catch {
            logger.error("export: the answers could not be written", metadata: ["question": "\(question.id)", "error": "\(error)"])
        }
    }
}
