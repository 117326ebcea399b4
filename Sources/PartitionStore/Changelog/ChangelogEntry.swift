import Shared

/// One record of a service's changelog topic (`herald.state.<service>`), on the partition number of the database it
/// comes from. A row record is keyed `<table>/<primary key as a JSON array>` and holds the row's image (a JSON object of
/// its columns; a BLOB as `{"$t":"<its text>"}` when it holds JSON text, else `{"$b":"<hex>"}`, and a REAL as
/// `{"$r":"<17 digits>"}`, since SQLite 3.40's JSON keeps only 15), or is a tombstone when the row was deleted: compaction keeps each row's
/// last image. A commit record (key `~commit`) ends each transaction: a restore applies a transaction's rows only once
/// it has read its commit. Every record names the database that wrote it (`herald-writer`), so that an instance can
/// tell its own records from another owner's.
package struct ChangelogEntry: Sendable, Equatable {
    package enum Change: Sendable, Equatable {
        /// A row's image (nil: the row was deleted).
        case row(table: String, key: String, image: [UInt8]?)
        case commit
    }

    package var change: Change
    package var writer: String

    package static let commitKey = "~commit"
    package static let writerHeader = "herald-writer"

    package init(_ change: Change, writer: String) {
        self.change = change
        self.writer = writer
    }

    package func record(topic: String, partition: Int32) -> KafkaOutgoingRecord {
        let headers = [KafkaHeader(Self.writerHeader, writer)]
        switch change {
        case .row(let table, let key, let image):
            return KafkaOutgoingRecord(
                topic: topic, key: Array("\(table)/\(key)".utf8), value: image, headers: headers, partition: partition)
        case .commit:
            return KafkaOutgoingRecord(
                topic: topic, key: Array(Self.commitKey.utf8), value: Array(writer.utf8), headers: headers,
                partition: partition)
        }
    }

    package struct Unreadable: Error, CustomStringConvertible {
        package var offset: Int64
        package var description: String { "changelog record at offset \(offset) is not a changelog entry" }
    }

    package static func read(_ record: KafkaRecord) throws -> ChangelogEntry {
        guard let key = record.keyString else { throw Unreadable(offset: record.offset) }
        let writer = record.header(writerHeader).map { String(decoding: $0, as: UTF8.self) } ?? ""
        if key == commitKey { return ChangelogEntry(.commit, writer: writer) }
        guard let slash = key.firstIndex(of: "/"), slash != key.startIndex else { throw Unreadable(offset: record.offset) }
        return ChangelogEntry(
            .row(table: String(key[..<slash]), key: String(key[key.index(after: slash)...]), image: record.value),
            writer: writer)
    }
}
