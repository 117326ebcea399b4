import Foundation
#if canImport(Glibc)
import Glibc
#endif
import GRDB
import HeraldTestSupport
import Logging
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// A changelog kept in memory: what the relay publishes, read back by a restore.
final class InMemoryChangelog: OutboxPublisher, ChangelogSource {
    let records = Locked<[KafkaRecord]>([])

    func publish(_ batch: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        records.withLock { records in
            batch.map { record in
                let offset = Int64(records.count)
                records.append(KafkaRecord(
                    topic: record.topic, partition: record.partition ?? 0, offset: offset, key: record.key, value: record.value,
                    headers: record.headers))
                return KafkaDeliveryReport(topic: record.topic, partition: record.partition ?? 0, offset: offset)
            }
        }
    }

    func watermarks(_ partition: TopicPartition) async throws -> (low: Int64, high: Int64) {
        (0, Int64(records.withLock { $0.count }))
    }

    func read(_ partition: TopicPartition, from start: Int64, until end: Int64, _ body: ([KafkaRecord]) async throws -> Void)
        async throws
    {
        let all = records.withLock { $0 }
        for chunk in stride(from: Int(start), to: Int(end), by: 5000) {
            try await body(Array(all[chunk..<min(chunk + 5000, Int(end))]))
        }
    }
}

/// A changelog as Kafka's log cleaner leaves a compacted topic: the newest record of each key, at its offset, and no
/// tombstones. Every commit record shares one key, so one is left.
final class CompactedChangelog: ChangelogSource {
    let records: [KafkaRecord]
    let end: Int64

    init(_ log: [KafkaRecord]) {
        var newest: [[UInt8]: Int64] = [:]
        for record in log { newest[record.key ?? []] = record.offset }
        records = log.filter { newest[$0.key ?? []] == $0.offset && $0.value != nil }
        end = (log.last?.offset ?? -1) + 1
    }

    func watermarks(_ partition: TopicPartition) async throws -> (low: Int64, high: Int64) { (0, end) }

    func read(_ partition: TopicPartition, from start: Int64, until end: Int64, _ body: ([KafkaRecord]) async throws -> Void)
        async throws
    {
        // The first record at or after `start` (offsets grow, with gaps).
        var low = 0
        var high = records.count
        while low < high {
            let middle = (low + high) / 2
            if records[middle].offset < start { low = middle + 1 } else { high = middle }
        }
        var index = low
        while index < records.count, records[index].offset < end {
            var chunkEnd = index
            while chunkEnd < records.count, chunkEnd - index < 5000, records[chunkEnd].offset < end { chunkEnd += 1 }
            try await body(Array(records[index..<chunkEnd]))
            index = chunkEnd
        }
    }
}

/// How much this process's resident size grew at most while `body` ran, in MiB (`VmHWM` after
/// `/proc/self/clear_refs` reset it, less `VmRSS` before). The heap the steps before freed is returned to the system
/// first (`malloc_trim`): reused without growing the process, it would hide the restore's own memory.
func peakResidentGrowth<T>(_ body: () async throws -> T) async rethrows -> (T, Double) {
    typealias Trim = @convention(c) (Int) -> Int32
    if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") { _ = unsafeBitCast(symbol, to: Trim.self)(0) }
    func status(_ name: String) -> Double {
        let text = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = text.split(separator: "\n").first { $0.hasPrefix(name + ":") } ?? ""
        return (Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0) / 1024
    }
    let before = status("VmRSS")
    try? "5".write(toFile: "/proc/self/clear_refs", atomically: false, encoding: .utf8)
    let result = try await body()
    return (result, status("VmHWM") - before)
}

/// Not a test: figures for scripts/bench/restore (runs only with HERALD_BENCH=1, in release).
@Suite("Restore benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct RestoreBenchmark {
    static let profiles = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_PROFILES"] ?? "") ?? 100_000
    static let topic = "herald.state.orchestrator"
    static let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })

    /// Three writes per profile: three custom attributes, then two events with attributes.
    static func workload() throws -> [KafkaRecord] {
        var writer = Writer()
        var records: [KafkaRecord] = []
        for index in 0..<profiles {
            let at = t0.addingTimeInterval(Double(index))
            records.append(try writer.update(
                id: "u\(index)", #"{"plan": "gold", "visits": \#(index), "city": "Paris"}"#, at: at))
            records[records.count - 1] = Self.rekey(records[records.count - 1], customID: "user-\(index)", writer: &writer)
            for (step, name) in ["VIEWED_ITEM", "ADDED_TO_CART"].enumerated() {
                let event = JSONMember(
                    "event",
                    .object([
                        JSONMember("name", .string(name)),
                        JSONMember("attributes", .object([JSONMember("item_id.s", .string("sku-\(index % 500)"))])),
                    ]))
                records.append(writer.record(
                    .event, id: "e\(index)-\(step)", customID: "user-\(index)", at: at + Double(step + 1), fields: [event]))
            }
        }
        return records
    }

    /// `Writer.update` writes for "paul": the same edit for another profile.
    static func rekey(_ record: KafkaRecord, customID: String, writer: inout Writer) -> KafkaRecord {
        var read = try! IngestRecord.read(record.value!)
        read.customID = customID
        return writer.record(read)
    }

    static func apply(_ workload: [KafkaRecord], changelog: String?) async throws -> (PartitionDatabase, Double) {
        let database = try PartitionDatabase.open(
            directory: temporaryDirectory(), partition: 0, migrator: OrchestratorSchema.migrator, changelog: changelog)
        let start = ContinuousClock.now
        for batchStart in stride(from: 0, to: workload.count, by: 500) {
            let batch = Array(workload[batchStart..<min(batchStart + 500, workload.count)])
            _ = try await database.applyBatch(batch, apply: OrchestratorApplier.apply)
        }
        return (database, (ContinuousClock.now - start).timeInterval)
    }

    @Test("changelog capture cost, restore rate, and the takeover of a partition of 100,000 profiles")
    func restore() async throws {
        let workload = try Self.workload()
        let (_, plainSeconds) = try await Self.apply(workload, changelog: nil)
        let (captured, capturedSeconds) = try await Self.apply(workload, changelog: Self.topic)
        try await captured.startWriting(at: 0, snapshot: false)
        let log = InMemoryChangelog()
        let produceStart = ContinuousClock.now
        try await captured.produceOutbox(with: log)
        let produceSeconds = (ContinuousClock.now - produceStart).timeInterval
        let records = log.records.withLock { $0 }
        let bytes = records.reduce(0) { $0 + ($1.key?.count ?? 0) + ($1.value?.count ?? 0) }

        // A new owner with an empty directory takes the partition over: assignment to ready.
        let owner = PartitionOwner(
            directory: temporaryDirectory(), service: "orchestrator", migrator: OrchestratorSchema.migrator, publisher: log,
            changelog: ChangelogSettings(topic: Self.topic, source: log), logger: Self.logger)
        let takeoverStart = ContinuousClock.now
        let starts = try await owner.partitionsAssigned([TopicPartition(HeraldTopic.ingest.name, 0)])
        let takeoverSeconds = (ContinuousClock.now - takeoverStart).timeInterval
        #expect(starts[TopicPartition(HeraldTopic.ingest.name, 0)] == .offset(workload[workload.count - 1].offset + 1))
        let restored = try #require(await owner.database(0))
        let count = try await restored.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM profiles") ?? 0 }
        #expect(count == Self.profiles)

        let plainRate = Double(workload.count) / plainSeconds
        let capturedRate = Double(workload.count) / capturedSeconds
        print(
            """
            restore benchmark (\(ProcessInfo.processInfo.activeProcessorCount) cores, \(Self.profiles) profiles, \(workload.count) writes in batches of 500)
              apply without changelog   \(Int(plainRate)) writes/s
              apply with changelog      \(Int(capturedRate)) writes/s   (\(String(format: "%.2f", capturedRate / plainRate)) of without)
              changelog                 \(records.count) records, \(bytes / 1_048_576) MiB (\(String(format: "%.1f", Double(records.count) / Double(Self.profiles))) records and \(bytes / Self.profiles) bytes per profile); relayed in \(String(format: "%.1f", produceSeconds)) s to memory
              takeover (restore, apply) \(String(format: "%.1f", takeoverSeconds)) s   (\(Int(Double(records.count) / takeoverSeconds)) records/s, from memory)
            """)
        printFigure("apply_with_changelog", capturedRate, unit: "writes/s", ceiling: plainRate, goal: "-")
        printFigure("changelog_bytes_per_profile", Double(bytes / Self.profiles), unit: "bytes", goal: "-")
        printFigure("takeover_seconds_\(Self.profiles)", takeoverSeconds, unit: "s", goal: "-")
        await owner.partitionsRevoked([TopicPartition(HeraldTopic.ingest.name, 0)], lost: false)

        // The same partition from the log as a compacted topic keeps it: memory the restore takes above what the
        // process held before it (the logs themselves are in memory here, before and after).
        let compacted = CompactedChangelog(records)
        let rowRecords = compacted.records.filter { $0.keyString != ChangelogEntry.commitKey }.count
        for (name, source) in [("compacted", compacted as any ChangelogSource), ("whole", log as any ChangelogSource)] {
            let restorer = PartitionOwner(
                directory: temporaryDirectory(), service: "orchestrator", migrator: OrchestratorSchema.migrator, publisher: log,
                changelog: ChangelogSettings(topic: Self.topic, source: source), logger: Self.logger)
            let started = ContinuousClock.now
            let (_, peak) = try await peakResidentGrowth {
                try await restorer.partitionsAssigned([TopicPartition(HeraldTopic.ingest.name, 0)])
            }
            let seconds = (ContinuousClock.now - started).timeInterval
            let restoredRows = try await restorer.database(0)!.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM profiles") ?? 0 }
            #expect(restoredRows == Self.profiles)
            print("  restore of the \(name) log     \(name == "compacted" ? rowRecords : records.count) records in \(String(format: "%.1f", seconds)) s, the process grew by \(Int(peak)) MiB at most")
            printFigure("restore_peak_mib_\(name)_\(Self.profiles)", peak, unit: "MiB", goal: "-")
            await restorer.partitionsRevoked([TopicPartition(HeraldTopic.ingest.name, 0)], lost: false)
        }

        try await Self.throughBroker(records)
    }

    /// The same records through the embedded broker (as many as its 5 MiB per partition keeps): our reader restoring
    /// them, next to kcat reading them (the ceiling).
    static func throughBroker(_ all: [KafkaRecord]) async throws {
        var kept: [KafkaRecord] = []
        var size = 0
        for record in all {
            size += (record.key?.count ?? 0) + (record.value?.count ?? 0) + 100
            if size > 4_500_000 { break }
            kept.append(record)
        }
        // End on a commit, as a relay's batch does.
        while let last = kept.last, last.keyString != ChangelogEntry.commitKey { kept.removeLast() }
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        try cluster.createTopics([TopicSpec(name: topic, partitions: 1)])
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "bench"),
            logger: logger)
        for chunk in stride(from: 0, to: kept.count, by: 5000) {
            _ = try await producer.send(kept[chunk..<min(chunk + 5000, kept.count)].map {
                KafkaOutgoingRecord(topic: topic, key: $0.key, value: $0.value, headers: $0.headers, partition: 0)
            })
        }
        let reader = try KafkaPartitionReader(
            client: KafkaClientSettings(bootstrapServers: cluster.bootstrapServers), clientID: "bench",
            groupID: "bench.restore", logger: logger)
        let readStart = ContinuousClock.now
        var read = 0
        try await reader.read(TopicPartition(topic, 0), from: 0, until: Int64(kept.count)) { read += $0.count }
        let readSeconds = (ContinuousClock.now - readStart).timeInterval

        let owner = PartitionOwner(
            directory: temporaryDirectory(), service: "orchestrator", migrator: OrchestratorSchema.migrator, publisher: producer,
            changelog: ChangelogSettings(topic: topic, source: reader), logger: logger)
        let restoreStart = ContinuousClock.now
        _ = try await owner.partitionsAssigned([TopicPartition(HeraldTopic.ingest.name, 0)])
        let restoreSeconds = (ContinuousClock.now - restoreStart).timeInterval
        await owner.partitionsRevoked([TopicPartition(HeraldTopic.ingest.name, 0)], lost: false)

        var kcatLine = "kcat not installed"
        if FileManager.default.fileExists(atPath: "/usr/bin/kcat") {
            /// kcat reading the partition from `offset` to its end: records read and seconds.
            func kcat(from offset: String) async throws -> (Int, Double) {
                let start = ContinuousClock.now
                let (_, output, _) = try await runCommandSeparately(
                    "/usr/bin/kcat", ["-C", "-b", cluster.bootstrapServers, "-t", topic, "-p", "0", "-o", offset, "-e", "-q", "-f", "%o\n"])
                return (output.split(separator: 0x0A).count, (ContinuousClock.now - start).timeInterval)
            }
            // Its start, connection and metadata: the same run with nothing to read.
            let (_, idle) = try await kcat(from: "end")
            let (lines, total) = try await kcat(from: "beginning")
            kcatLine = "\(Int(Double(lines) / max(total - idle, 0.001))) records/s (\(lines) records in \(String(format: "%.2f", total)) s, "
                + "less \(String(format: "%.2f", idle)) s for a run with nothing to read)"
        }
        print(
            """
            through the embedded broker (\(kept.count) records, what its 5 MiB per partition keeps)
              kcat read (ceiling)       \(kcatLine)
              our reader alone          \(Int(Double(read) / readSeconds)) records/s
              restore (read + apply)    \(Int(Double(kept.count) / restoreSeconds)) records/s   (\(String(format: "%.2f", restoreSeconds)) s)
            """)
        await reader.shutdown()
        await producer.shutdown()
        await cluster.shutdown()
    }
}
