import Foundation

/// One notifier partition's answer to an `ExportQuestion` (on `herald.export.answers`, key the question's id), in parts of at most `maxBytes` of lines: every partition a
/// notifier runs answers, with no line when it holds nothing of the person, so that the asker knows when every
/// partition has answered (`ExportAnswerAssembly`).
package struct ExportAnswer: WireMessage {
    package static let kind = "export_answer"
    package static let version = 1

    package var question: String
    /// The notifier instance that answered: a partition moving between two instances may be answered by both.
    package var instance: String
    package var partition: Int32
    /// This part's number, from 0; `last` on the partition's last.
    package var part: Int
    package var last: Bool
    /// NDJSON lines, as the export prints them.
    package var lines: [String]

    package init(question: String, instance: String, partition: Int32, part: Int, last: Bool, lines: [String]) {
        self.question = question
        self.instance = instance
        self.partition = partition
        self.part = part
        self.last = last
        self.lines = lines
    }

    /// A part's lines stay under this (a record well below Kafka's default 1 MB `message.max.bytes`).
    package static let maxBytes = 256 << 10

    /// The answers of one partition: `lines` cut into parts of at most `maxBytes` (a longer line alone), at least one.
    package static func parts(question: String, instance: String, partition: Int32, lines: [String], maxBytes: Int = maxBytes) -> [ExportAnswer] {
        var groups: [[String]] = [[]]
        var size = 0
        for line in lines {
            if size + line.utf8.count > maxBytes, !groups[groups.count - 1].isEmpty {
                groups.append([])
                size = 0
            }
            groups[groups.count - 1].append(line)
            size += line.utf8.count
        }
        return groups.enumerated().map { index, lines in
            ExportAnswer(question: question, instance: instance, partition: partition, part: index, last: index == groups.count - 1, lines: lines)
        }
    }
}
