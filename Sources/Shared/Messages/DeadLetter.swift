import Foundation

/// What could not be processed, with the reason and the original record (`herald.dlq`, keyed like the original).
package struct DeadLetter: WireMessage {
    package static let kind = "dead_letter"
    package static let version = 1

    /// Which service gave up on the record.
    package var service: String
    package var reason: String
    package var topic: String
    package var partition: Int32
    package var offset: Int64
    /// The original key and value as UTF-8 text when they are valid UTF-8, else base64 with `encoding: "base64"`.
    package var key: String?
    package var value: String?
    package var encoding: String
    package var at: Date

    package init(service: String, reason: String, record: KafkaRecord, at: Date) {
        let textual = [record.key, record.value].allSatisfy { bytes in
            bytes.map { String(validating: $0, as: UTF8.self) != nil } ?? true
        }
        func render(_ bytes: [UInt8]?) -> String? {
            bytes.map { textual ? String(decoding: $0, as: UTF8.self) : Data($0).base64EncodedString() }
        }
        self.service = service
        self.reason = reason
        self.topic = record.topic
        self.partition = record.partition
        self.offset = record.offset
        self.key = render(record.key)
        self.value = render(record.value)
        self.encoding = textual ? "utf8" : "base64"
        self.at = at
    }
}
