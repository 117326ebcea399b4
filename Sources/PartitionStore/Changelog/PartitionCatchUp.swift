import Foundation
import GRDB
import Logging
import Metrics
import Shared
import Synchronization

/// Opens a partition's database level with its changelog, before anything of the partition is processed (Kafka
/// Streams' restore of a task's stores on migration):
///
/// - a database whose changelog position is the changelog's end is up to date; one whose changelog goes on only with
///   its own records (written before a crash, their positions not recorded yet) is too;
/// - a database overtaken by another owner's records is deleted and restored anew;
/// - a missing (empty) database is restored from the changelog's beginning;
/// - a restore that was interrupted goes on where it stopped;
/// - a database that holds state but no changelog position (made before its changelog existed) captures its whole
///   state into the changelog;
/// - a changelog that no longer starts at offset 0 (time-based retention, or the embedded broker's size cap) cannot
///   restore a whole state: the partition is rebuilt from its input topics instead, and an error logged.
struct PartitionCatchUp {
    let directory: String
    let migrator: DatabaseMigrator
    let changelog: ChangelogSettings
    let logger: Logger

    func open(_ number: Int32, shouldStop: @escaping @Sendable () -> Bool) async throws -> PartitionDatabase {
        var database = try openDatabase(number)
        do {
            let partition = TopicPartition(changelog.topic, number)
            let (low, high) = try await changelog.source.watermarks(partition)
            let position = try await database.changelogPosition()
            if position.restoring {
                try await restore(database, start: max(position.nextOffset, low), end: high, shouldStop: shouldStop)
                return database
            }
            if let writer = position.writer {
                if position.nextOffset >= high { return database }
                if try await onlyOwnRecords(partition, from: max(position.nextOffset, low), until: high, writer: writer) {
                    try await database.advanceChangelog(to: high)
                    return database
                }
                logger.warning(
                    "partition database overtaken by another owner's changelog; restoring it anew",
                    metadata: ["partition": "\(number)", "position": "\(position.nextOffset)", "end": "\(high)"])
                try database.close()
                try PartitionDatabase.remove(directory: directory, partition: number)
                database = try openDatabase(number)
            } else if position.hasState {
                logger.info(
                    "partition database has no changelog yet; capturing its whole state", metadata: ["partition": "\(number)"])
                try await database.startWriting(at: high, snapshot: true)
                return database
            }
            if low > 0 {
                logger.error(
                    "changelog does not start at offset 0 (its beginning was deleted): rebuilding the partition from its input topics instead of restoring it; keep changelog topics compacted, never time-limited",
                    metadata: ["partition": "\(number)", "first_offset": "\(low)", "end": "\(high)"])
                try await database.startWriting(at: high, snapshot: false)
                return database
            }
            if high == 0 {
                try await database.startWriting(at: 0, snapshot: false)
                return database
            }
            try await restore(database, start: 0, end: high, shouldStop: shouldStop)
            return database
        } catch {
            try? database.close()
            throw error
        }
    }

    private func openDatabase(_ number: Int32) throws -> PartitionDatabase {
        try PartitionDatabase.open(directory: directory, partition: number, migrator: migrator, changelog: changelog.topic)
    }

    private struct ForeignRecord: Error {}

    /// Whether every record from `start` to `end` was written by `writer`.
    private func onlyOwnRecords(_ partition: TopicPartition, from start: Int64, until end: Int64, writer: String) async throws
        -> Bool
    {
        do {
            try await changelog.source.read(partition, from: start, until: end) { records in
                for record in records where try ChangelogEntry.read(record).writer != writer { throw ForeignRecord() }
            }
            return true
        } catch is ForeignRecord {
            return false
        }
    }

    private func restore(
        _ database: PartitionDatabase, start: Int64, end: Int64, shouldStop: @escaping @Sendable () -> Bool
    ) async throws {
        let number = database.partition
        let dimensions = [("partition", String(number))]
        let lag = Gauge(label: "herald_restore_lag", dimensions: dimensions)
        let restored = Counter(label: "herald_restore_records_total", dimensions: dimensions)
        logger.info(
            "partition restore started", metadata: ["partition": "\(number)", "from": "\(start)", "end": "\(end)"])
        let began = ContinuousClock.now
        let lastLog = ProgressMark(began)
        lag.record(end - start)
        let logger = self.logger
        let summary = try await database.restore(
            from: changelog.source, topic: changelog.topic, start: start, end: end, renamedTables: changelog.renamedTables,
            shouldStop: shouldStop
        ) { records, offset in
            lag.record(end - offset)
            let report = lastLog.state.withLock { last -> Bool in
                restored.increment(by: records - last.records)
                last.records = records
                guard ContinuousClock.now - last.at >= .seconds(2) else { return false }
                last.at = ContinuousClock.now
                return true
            }
            if report {
                logger.info(
                    "partition restore progress",
                    metadata: ["partition": "\(number)", "records": "\(records)", "offset": "\(offset)", "lag": "\(end - offset)"])
            }
        }
        lag.record(0)
        let seconds = (ContinuousClock.now - began).timeInterval
        Gauge(label: "herald_restore_seconds", dimensions: dimensions).record(seconds)
        logger.info(
            "partition restored",
            metadata: [
                "partition": "\(number)", "records": "\(summary.records)", "seconds": "\(String(format: "%.3f", seconds))",
                "incomplete_tail": "\(summary.incompleteTail)", "end": "\(end)",
            ])
    }
}

extension PartitionDatabase {
    /// Records that the changelog up to `offset` is reflected here (its own records, read back after a crash).
    func advanceChangelog(to offset: Int64) async throws {
        try await writeUnmarked { db in try ChangelogCapture.advance(db, to: offset) }
    }
}

/// When a restore last logged its progress, and how many records it had counted.
private final class ProgressMark: Sendable {
    let state: Mutex<(at: ContinuousClock.Instant, records: Int)>
    init(_ start: ContinuousClock.Instant) { state = Mutex((at: start, records: 0)) }
}
