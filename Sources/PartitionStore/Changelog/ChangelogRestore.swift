import Foundation
import GRDB
import Shared

/// Where a partition database stands against its changelog (the `changelog_state` row).
package struct ChangelogPosition: Sendable, Equatable {
    /// The id this database writes its changelog records under; nil before it first owned the partition.
    package var writer: String?
    /// The changelog offset after the last record this database reflects (its own, produced, or restored).
    package var nextOffset: Int64
    /// A restore began and has not finished: `nextOffset` is where it goes on.
    package var restoring: Bool
    /// Whether the database holds any state (offsets stored by an applied batch).
    package var hasState: Bool
}

/// How a restore ended.
package struct RestoreSummary: Sendable, Equatable {
    /// Row records applied.
    package var records: Int
    /// Records after the last commit (a transaction whose writer stopped before its end): not applied, and written
    /// again as they stand after the restore, so that the changelog says what this database holds.
    package var incompleteTail: Int
}

/// A restore stopped because the partition was taken away meanwhile: what it applied stays, and the next restore of
/// this database goes on from there.
package struct RestoreInterrupted: Error, CustomStringConvertible {
    package var partition: Int32
    package var description: String { "restore of partition \(partition) interrupted by a revocation" }
}

extension PartitionDatabase {
    package func changelogPosition() async throws -> ChangelogPosition {
        try await read { db in
            let row = try Row.fetchOne(db, sql: "SELECT writer, next_offset, restoring FROM changelog_state WHERE id = 0")
            let hasState = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM partition_offsets)") ?? false
            return ChangelogPosition(
                writer: row?["writer"], nextOffset: row?["next_offset"] ?? 0, restoring: row?["restoring"] ?? false,
                hasState: hasState)
        }
    }

    /// Takes the changelog over from `offset`: a new writer id, and, with `snapshot`, the whole state captured again
    /// (a database whose state the changelog does not hold).
    package func startWriting(at offset: Int64, snapshot: Bool) async throws {
        try await writeUnmarked { db in
            if snapshot {
                try ChangelogCapture.snapshot(db)
                try ChangelogCapture.markCommit(db)
            }
            try ChangelogCapture.startWriter(db, at: offset)
        }
    }

    /// Applies the changelog from `start` up to `end` on this database, without capturing what it writes, in chunks
    /// of `chunkSize` records, each one SQLite transaction that also saves how far it got. `shouldStop` is asked
    /// between chunks; `progress` gets the records applied and the offset reached.
    ///
    /// Every row record before the log's last commit record is applied: it was committed, or it belongs to a
    /// transaction whose writer stopped half-way, and then the next owner's restore wrote each of its keys again
    /// (below) before committing, so a later record of the same key supersedes it. Only the rows after the last commit
    /// wait for a commit that never came. This holds for a compacted log, where every commit record but the newest is
    /// gone (they share the key `~commit`): grouping rows by the commits that follow them held the whole compacted
    /// prefix in memory and wrote it in one transaction, saving progress only at the end.
    package func restore(
        from source: any ChangelogSource, topic: String, start: Int64, end: Int64, renamedTables: [String: String] = [:],
        chunkSize: Int = 2000,
        shouldStop: @escaping @Sendable () -> Bool,
        progress: @escaping @Sendable (_ records: Int, _ offset: Int64) -> Void
    ) async throws -> RestoreSummary {
        try await writeUnmarked { db in
            try ChangelogCapture.dropTriggers(db)
            try db.execute(
                sql: "UPDATE changelog_state SET writer = NULL, restoring = 1, next_offset = ? WHERE id = 0",
                arguments: [start])
        }
        let partition = self.partition
        let lastCommit = try await Self.lastCommit(in: source, TopicPartition(topic, partition), from: start, until: end)
        var applier = ChangelogApplier(renamed: renamedTables)
        var tail: [ChangelogEntry] = []
        var chunk: [ChangelogEntry] = []
        var through = start
        var applied = 0
        func applyChunk() async throws {
            guard through > start || !chunk.isEmpty else { return }
            if shouldStop() { throw RestoreInterrupted(partition: partition) }
            let batch = chunk
            let next = through
            let shapes = applier
            applier = try await writeRestoring { db in
                var applier = shapes
                for entry in batch { try applier.apply(db, entry) }
                try db.execute(sql: "UPDATE changelog_state SET next_offset = ? WHERE id = 0", arguments: [next])
                return applier
            }
            applied += batch.count
            chunk.removeAll(keepingCapacity: true)
            progress(applied, next)
        }
        try await source.read(TopicPartition(topic, partition), from: start, until: end) { records in
            for record in records {
                let entry = try ChangelogEntry.read(record)
                guard let lastCommit, record.offset <= lastCommit else {
                    if entry.change != .commit { tail.append(entry) }
                    continue
                }
                if entry.change != .commit { chunk.append(entry) }
                through = record.offset + 1
                if chunk.count >= chunkSize { try await applyChunk() }
            }
        }
        try await applyChunk()
        // The writer of the incomplete tail stopped in the middle of a transaction: its rows are not applied, and
        // their keys are written again as this database holds them, so that a later restore, which will read that
        // tail too, ends where this one does.
        let tailKeys = tail.compactMap { entry -> (String, String)? in
            if case .row(let table, let key, _) = entry.change { return (table, key) }
            return nil
        }
        let shapes = applier
        try await writeUnmarked { db in
            try ChangelogCapture.install(db)
            var applier = shapes
            for (table, key) in tailKeys { try applier.rewrite(db, table: table, key: key) }
            // Rows restored from records under a table's old name: written again under the new name, with a tombstone
            // for the old, so that compaction leaves them only under the new name (an image under the old name that
            // outlived its newer records' tombstones would bring a deleted row back at a later restore).
            let renamedRows = applier.renamedRows.sorted { ($0.table, $0.key) < ($1.table, $1.key) }
            for row in renamedRows {
                try ChangelogCapture.tombstone(db, table: row.table, key: row.key)
                try applier.rewrite(db, table: applier.renamed[row.table] ?? row.table, key: row.key)
            }
            if !tailKeys.isEmpty || !renamedRows.isEmpty { try ChangelogCapture.markCommit(db) }
            try ChangelogCapture.startWriter(db, at: end)
        }
        return RestoreSummary(records: applied, incompleteTail: tail.count)
    }

    /// The offset of the last commit record from `start` to `end`, nil when there is none: read backwards in growing
    /// windows from the end, where the newest transactions' commits are (a compacted log keeps only the newest).
    static func lastCommit(in source: any ChangelogSource, _ partition: TopicPartition, from start: Int64, until end: Int64)
        async throws -> Int64?
    {
        var windowEnd = end
        var size: Int64 = 1000
        while windowEnd > start {
            let windowStart = max(start, windowEnd - size)
            var found: Int64?
            try await source.read(partition, from: windowStart, until: windowEnd) { records in
                for record in records where record.keyString == ChangelogEntry.commitKey {
                    found = max(found ?? record.offset, record.offset)
                }
            }
            if let found { return found }
            windowEnd = windowStart
            size *= 4
        }
        return nil
    }
}

/// Writes changelog row records into a database: an image replaces the row, a tombstone deletes it. Tables and
/// columns the database does not have (a changelog written by another version) are skipped.
struct ChangelogApplier: Sendable {
    /// Old table name → new (`ChangelogSettings.renamedTables`).
    let renamed: [String: String]
    private var shapes: [String: TableShape?] = [:]
    private(set) var skipped = 0
    /// The rows applied from records under a renamed table's old name.
    private(set) var renamedRows: Set<RenamedRow> = []

    struct RenamedRow: Hashable, Sendable {
        /// The old name.
        var table: String
        var key: String
    }

    init(renamed: [String: String] = [:]) { self.renamed = renamed }

    mutating func shape(_ db: Database, _ table: String) throws -> TableShape? {
        if let known = shapes[table] { return known }
        let shape = try ChangelogCapture.capturedTables(db).first { $0.name == table }
        shapes[table] = shape
        return shape
    }

    mutating func apply(_ db: Database, _ entry: ChangelogEntry) throws {
        guard case .row(let written, let key, let image) = entry.change else {
            skipped += 1
            return
        }
        let table = renamed[written] ?? written
        guard let shape = try shape(db, table) else {
            skipped += 1
            return
        }
        if table != written { renamedRows.insert(RenamedRow(table: written, key: key)) }
        guard let image else {
            try delete(db, shape, key: key)
            return
        }
        guard case .object(let members) = try JSONParser.parse(image) else {
            throw ChangelogEntry.Unreadable(offset: -1)
        }
        let known = Set(shape.imageColumns)
        let values = members.filter { known.contains($0.key) }
        guard !values.isEmpty else { return }
        let sql = "INSERT OR REPLACE INTO \(shape.quotedName) (\(values.map { shape.quote($0.key) }.joined(separator: ", "))) "
            + "VALUES (\(values.map { _ in "?" }.joined(separator: ", ")))"
        try db.executeCached(sql: sql, arguments: StatementArguments(values.map { Self.databaseValue($0.value) }))
    }

    /// Captures a row again as it stands (an image if it exists, else a tombstone).
    mutating func rewrite(_ db: Database, table: String, key: String) throws {
        guard let shape = try shape(db, table) else { return }
        let arguments = try Self.keyArguments(key)
        let first = shape.quote(shape.columns[0])
        try db.execute(
            sql: "UPDATE \(shape.quotedName) SET \(first) = \(first) WHERE \(shape.keyCondition)", arguments: arguments)
        if db.changesCount == 0 { try ChangelogCapture.tombstone(db, table: table, key: key) }
    }

    private func delete(_ db: Database, _ shape: TableShape, key: String) throws {
        try db.executeCached(
            sql: "DELETE FROM \(shape.quotedName) WHERE \(shape.keyCondition)", arguments: try Self.keyArguments(key))
    }

    static func keyArguments(_ key: String) throws -> StatementArguments {
        guard case .array(let items) = try JSONParser.parse(Array(key.utf8)) else {
            throw ChangelogEntry.Unreadable(offset: -1)
        }
        return StatementArguments(items.map(databaseValue))
    }

    static func databaseValue(_ value: JSONValue) -> DatabaseValue {
        switch value {
        case .null: return .null
        case .bool(let flag): return (flag ? 1 : 0).databaseValue
        case .number(let text): return Int64(text)?.databaseValue ?? Double(text)?.databaseValue ?? text.databaseValue
        case .string(let text): return text.databaseValue
        case .object(let members):
            if members.count == 1, case .string(let text) = members[0].value {
                if members[0].key == "$b", let data = Data(hexadecimal: text) { return data.databaseValue }
                if members[0].key == "$t" { return Data(text.utf8).databaseValue }
                if members[0].key == "$r", let real = Double(text) { return real.databaseValue }
            }
            return String(decoding: value.serialized, as: UTF8.self).databaseValue
        case .array: return String(decoding: value.serialized, as: UTF8.self).databaseValue
        }
    }
}

extension TableShape {
    var keyCondition: String { key.map { "\(quote($0)) = ?" }.joined(separator: " AND ") }
}

extension Data {
    /// Bytes from hexadecimal text (SQLite's `hex()`), nil when it is not.
    init?(hexadecimal text: String) {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        func nibble(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x41...0x46: digit - 0x37
            case 0x61...0x66: digit - 0x57
            default: nil
            }
        }
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.init(bytes)
    }
}
