import Foundation
import GRDB
import HeraldTestSupport
import Logging
import Shared
import Testing

@testable import PartitionStore

/// A publisher that records what it was given, can hold each publish until the test opens its gate, and can fail.
final class FakePublisher: OutboxPublisher {
    private struct State {
        var published: [String] = []
        var calls = 0
        var gateOpen = true
        var failing = false
        /// Values longer than this are refused as librdkafka refuses them (message.max.bytes): the others of the call
        /// are published, and the call throws.
        var maxValueBytes = Int.max
        var gateWaiters: [CheckedContinuation<Void, Never>] = []
        var records: [KafkaOutgoingRecord] = []
    }

    private let state = Locked(State())
    let events: Locked<[String]>

    init(events: Locked<[String]>, gateOpen: Bool = true) {
        self.events = events
        state.withLock { $0.gateOpen = gateOpen }
    }

    var published: [String] { state.withLock { $0.published } }
    var calls: Int { state.withLock { $0.calls } }

    func setFailing(_ failing: Bool) { state.withLock { $0.failing = failing } }
    func setMaxValueBytes(_ bytes: Int) { state.withLock { $0.maxValueBytes = bytes } }
    /// Every record published, in order.
    var records: [KafkaOutgoingRecord] { state.withLock { $0.records } }

    func openGate() {
        let waiters = state.withLock { state in
            state.gateOpen = true
            defer { state.gateWaiters.removeAll() }
            return state.gateWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    func publish(_ records: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        state.withLock { $0.calls += 1 }
        await withCheckedContinuation { continuation in
            let open = state.withLock { state -> Bool in
                if !state.gateOpen { state.gateWaiters.append(continuation) }
                return state.gateOpen
            }
            if open { continuation.resume() }
        }
        if state.withLock({ $0.failing }) { throw KafkaError(code: .brokerUnavailable, reason: "the test's broker is down") }
        let limit = state.withLock { $0.maxValueBytes }
        let fitting = records.filter { ($0.value?.count ?? 0) <= limit }
        let keys = fitting.map { String(decoding: $0.key ?? [], as: UTF8.self) }
        state.withLock {
            $0.published += keys
            $0.records += fitting
        }
        events.withLock { $0 += keys.map { "published \($0)" } }
        if fitting.count < records.count {
            // What the producer throws for RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE.
            throw KafkaError(code: .messageTooLarge, reason: "produce to \(records[0].topic): Broker: Message size too large", rdCode: 10)
        }
        return records.enumerated().map { KafkaDeliveryReport(topic: $1.topic, partition: $1.partition ?? 0, offset: Int64($0)) }
    }
}

/// Hooks that log what the owner called, and can write an output once the partition is drained.
final class RecordingHooks: PartitionHooks {
    let events: Locked<[String]>
    let owner: PartitionOwner
    let writeWhileDraining: String?

    init(events: Locked<[String]>, owner: PartitionOwner, writeWhileDraining: String? = nil) {
        self.events = events
        self.owner = owner
        self.writeWhileDraining = writeWhileDraining
    }

    func partitionOpened(_ database: PartitionDatabase, assigned: [TopicPartition]) async throws {
        events.withLock { $0.append("opened \(database.partition)") }
    }

    func partitionDrained(_ partition: Int32, workLeft: Int) async {
        events.withLock { $0.append("drained \(partition)\(workLeft > 0 ? " left \(workLeft)" : "")") }
        if let key = writeWhileDraining, let database = await owner.database(partition) {
            _ = try? await database.writeWithOutbox { _ in ((), [PendingOutput(topic: "t", key: key, value: [1])]) }
        }
    }

    func partitionClosed(_ partition: Int32) async {
        events.withLock { $0.append("closed \(partition)") }
    }
}

private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

/// A fresh directory for partition databases.
func temporaryDirectory() -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-store-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

/// A service's migrator with only the generic tables.
private var coreMigrator: DatabaseMigrator {
    var migrator = DatabaseMigrator()
    migrator.registerMigration("core") { db in try db.execute(sql: PartitionDatabase.coreTablesSQL + RecordDedupe.tableSQL) }
    return migrator
}

private let partition0 = [TopicPartition("t", 0), TopicPartition("u", 0)]

private func output(_ database: PartitionDatabase, _ key: String) async throws {
    _ = try await database.writeWithOutbox { _ in ((), [PendingOutput(topic: "t", key: key, value: [1])]) }
}

/// An owner on a temporary directory with recording hooks and a fake publisher, partition 0 assigned.
private struct Fixture {
    let directory: String
    let events = Locked<[String]>([])
    let publisher: FakePublisher
    let owner: PartitionOwner
    let hooks: RecordingHooks

    init(
        directory: String = temporaryDirectory(), gateOpen: Bool = true, writeWhileDraining: String? = nil,
        drainTimeout: Duration? = nil
    ) async throws {
        self.directory = directory
        publisher = FakePublisher(events: events, gateOpen: gateOpen)
        owner = PartitionOwner(
            directory: directory, service: "test", migrator: coreMigrator, publisher: publisher, drainTimeout: drainTimeout,
            logger: logger)
        hooks = RecordingHooks(events: events, owner: owner, writeWhileDraining: writeWhileDraining)
        owner.setHooks(hooks)
        _ = try await owner.partitionsAssigned(partition0)
    }

    var database: PartitionDatabase {
        get async throws { try #require(await owner.database(0)) }
    }

    var log: [String] { events.withLock { $0 } }
}

// The limit is for a hang (a drain waited for, say): zeroDrainTimeout's 40 rounds of a race take 1.3 s alone and up
// to 40 s in make test's parallel main run (swift-testing uses the shortest limit that applies).
@Suite("Partition owner", .timeLimit(.minutes(5)))
struct PartitionOwnerTests {
    @Test("assignment opens the database once and resumes each topic at its stored offset, new topics at the beginning")
    func startsFromStoredOffsets() async throws {
        let fixture = try await Fixture()
        _ = try await fixture.database.applyBatch([KafkaRecord(topic: "t", partition: 0, offset: 41, key: nil, value: nil)]) { _, _ in [] }
        await fixture.owner.partitionsRevoked(partition0, lost: false)

        let starts = try await fixture.owner.partitionsAssigned(partition0)
        #expect(starts == [TopicPartition("t", 0): .offset(42), TopicPartition("u", 0): .beginning])
        #expect(fixture.log == ["opened 0", "drained 0", "closed 0", "opened 0"])
        await fixture.owner.partitionsRevoked(partition0, lost: false)
    }

    @Test("a revocation during a flush waits for it, then produces what is left, then closes: every output once")
    func revokeDuringFlush() async throws {
        let fixture = try await Fixture(gateOpen: false)
        let (owner, publisher) = (fixture.owner, fixture.publisher)
        try await output(fixture.database, "a")
        await owner.scheduleFlush(0)
        try await waitUntil("the first publish") { publisher.calls == 1 }
        try await output(fixture.database, "b")

        let revoking = Task { await owner.partitionsRevoked(partition0, lost: false) }
        // The revocation cannot close the database under the flush in progress.
        try await waitUntil("draining") { fixture.log.contains("drained 0") }
        #expect(await owner.database(0) != nil)
        publisher.openGate()
        await revoking.value

        #expect(publisher.published == ["a", "b"])
        #expect(fixture.log == ["opened 0", "drained 0", "published a", "published b", "closed 0"])
        let reopened = try PartitionDatabase.open(directory: fixture.directory, partition: 0, migrator: coreMigrator)
        #expect(try await reopened.pendingOutbox().isEmpty)
        try reopened.close()
    }

    @Test("work goes through one door: it runs on a running partition only, and a revocation waits for it, then drains")
    func workDoor() async throws {
        let fixture = try await Fixture()
        let owner = fixture.owner
        #expect(await owner.state(of: 0) == .running)
        #expect(await owner.runningPartitions == [0])
        #expect(try await owner.run(on: 0) { database in try await database.nextOffsets().count } == 0)
        #expect(await owner.run(on: 1) { _ in 1 } == nil, "not assigned here")
        // Work that outlives a call (the notifier's attempts): held until released.
        await owner.hold(2, on: 0)
        let revoking = Task { await owner.partitionsRevoked(partition0, lost: false) }
        try await waitUntil("the revocation to start") { await owner.state(of: 0) == .draining }
        #expect(await owner.run(on: 0) { _ in 1 } == nil, "no work starts on a draining partition")
        await owner.release(1, on: 0)
        #expect(await owner.state(of: 0) == .draining)
        #expect(await owner.workInProgress(on: 0) == 1)
        #expect(!fixture.log.contains("drained 0"))
        await owner.release(1, on: 0)
        await revoking.value
        #expect(fixture.log == ["opened 0", "drained 0", "closed 0"])
        #expect(await owner.state(of: 0) == nil)
        #expect(await owner.workInProgress(on: 0) == 0)
    }

    @Test("a drain waits for the work up to its timeout; what is left is released later, when it ends")
    func drainTimeout() async throws {
        let fixture = try await Fixture(drainTimeout: .milliseconds(200))
        let owner = fixture.owner
        await owner.hold(3, on: 0)
        await owner.partitionsRevoked(partition0, lost: false)
        #expect(fixture.log == ["opened 0", "drained 0 left 3", "closed 0"])
        // The attempts still out come back after the partition went: counted until then, and reopening sees them.
        #expect(await owner.workInProgress(on: 0) == 3)
        _ = try await owner.partitionsAssigned(partition0)
        #expect(await owner.workInProgress(on: 0) == 3)
        await owner.release(3, on: 0)
        #expect(await owner.workInProgress(on: 0) == 0)
        await owner.partitionsRevoked(partition0, lost: false)
    }

    /// The drain's wait for the work and its timeout race on the owner: whichever comes first, the wait ends (a timeout
    /// that came before the wait began once held the revocation until the work was over).
    @Test("a zero drain timeout never waits for held work")
    func zeroDrainTimeout() async throws {
        let fixture = try await Fixture(drainTimeout: .zero)
        let owner = fixture.owner
        for _ in 0..<40 {
            await owner.hold(1, on: 0)
            await owner.partitionsRevoked(partition0, lost: false)
            #expect(await owner.workInProgress(on: 0) == 1)
            await owner.release(1, on: 0)
            _ = try await owner.partitionsAssigned(partition0)
        }
        await owner.partitionsRevoked(partition0, lost: false)
    }

    @Test("what the service writes while draining is produced before the partition is released")
    func drainThenFlush() async throws {
        let fixture = try await Fixture(writeWhileDraining: "late")
        await fixture.owner.partitionsRevoked(partition0, lost: false)
        #expect(fixture.log == ["opened 0", "drained 0", "published late", "closed 0"])
    }

    @Test("a lost partition is not drained, but its outbox is still produced and its database closed")
    func lostPartition() async throws {
        let fixture = try await Fixture(writeWhileDraining: "never")
        fixture.publisher.setFailing(true)
        try await output(fixture.database, "x")
        #expect(await fixture.owner.flush(0) == false)
        fixture.publisher.setFailing(false)
        await fixture.owner.partitionsRevoked(partition0, lost: true)
        #expect(fixture.log == ["opened 0", "published x", "closed 0"])
        #expect(await fixture.owner.database(0) == nil)
        // Revoking again (a lost partition then a revocation of the same) is a no-op.
        await fixture.owner.partitionsRevoked(partition0, lost: false)
        #expect(fixture.log.count == 3)
    }

    @Test("a broker outage leaves the outbox to the relay; a database opened with leftovers produces them by itself")
    func relayAndLeftovers() async throws {
        let fixture = try await Fixture()
        let publisher = fixture.publisher
        publisher.setFailing(true)
        try await output(fixture.database, "r")
        #expect(await fixture.owner.flush(0) == false)
        publisher.setFailing(false)
        await fixture.owner.flushUnflushed()
        try await waitUntil("the relay's flush") { publisher.published == ["r"] }

        // Left behind by a stop: committed, never produced.
        publisher.setFailing(true)
        try await output(fixture.database, "s")
        await fixture.owner.partitionsRevoked(partition0, lost: false)
        publisher.setFailing(false)
        let owner = PartitionOwner(directory: fixture.directory, service: "test", migrator: coreMigrator, publisher: publisher, logger: logger)
        _ = try await owner.partitionsAssigned(partition0)
        try await waitUntil("the leftover's flush") { publisher.published == ["r", "s"] }
        await owner.partitionsRevoked(partition0, lost: false)
    }
}

/// A consumer stand-in: logs pauses and resumes, runs actions between batches at once.
final class FakeFlow: PartitionFlow {
    let events: Locked<[String]>

    init(events: Locked<[String]>) { self.events = events }

    func pause(_ partitions: [TopicPartition]) async throws {
        events.withLock { $0.append("pause " + partitions.sorted().map(\.description).joined(separator: ",")) }
    }

    func resume(_ partitions: [TopicPartition], at offsets: [TopicPartition: KafkaStartOffset]) async throws {
        let described = partitions.sorted().map { "\($0)@\(offsets[$0].map { "\($0)" } ?? "-")" }
        events.withLock { $0.append("resume " + described.joined(separator: ",")) }
    }

    func betweenBatches(_ action: @escaping @Sendable () async -> Void) {
        Task { await action() }
    }
}

private struct Rejected: Error, CustomStringConvertible {
    var description: String { "cannot apply" }
}

/// A batch of one record whose output is 200 kB, so that writing it grows the database file.
private func bigRecord(_ partition: Int32, _ offset: Int64) -> [KafkaRecord] {
    [KafkaRecord(topic: "t", partition: partition, offset: offset, key: Array("k\(offset)".utf8), value: [1])]
}

private func applyBig(_ owner: PartitionOwner, _ partition: Int32, _ offset: Int64) async -> [OutboxRecord]? {
    await owner.apply(
        TopicPartition("t", partition), bigRecord(partition, offset),
        apply: { _, record in [PendingOutput(topic: "out", key: record.keyString ?? "", value: Array(repeating: 7, count: 200_000))] })
}

@Suite("Partition owner: failures", .timeLimit(.minutes(5)))
struct PartitionFailureTests {
    /// An owner with partition 0 assigned, and a file that is not a database where partition `partition`'s would be.
    fileprivate static func fixtureWithGarbage(partition: Int32) async throws -> (Fixture, path: String) {
        let directory = temporaryDirectory()
        let path = (directory as NSString).appendingPathComponent(PartitionDatabase.fileName(partition: partition))
        try Data(repeating: 0x78, count: 4096).write(to: URL(fileURLWithPath: path))
        return (try await Fixture(directory: directory), path)
    }

    @Test("an output that can never be produced (too large) becomes a dead letter without its value; the others go out, nothing is left behind")
    func unproducibleOutput() async throws {
        let fixture = try await Fixture()
        fixture.publisher.setMaxValueBytes(1_000)
        _ = try await fixture.database.writeWithOutbox { _ in
            ((), [
                PendingOutput(topic: "t", key: "a", value: [1]), PendingOutput(topic: "t", key: "big", value: Array(repeating: 9, count: 5_000)),
                PendingOutput(topic: "t", key: "c", value: [2]),
            ])
        }
        #expect(await fixture.owner.flush(0))
        #expect(try await fixture.database.hasUnproduced() == false)
        let published = fixture.publisher.records
        // The others of the batch went out (again, one at a time, while the culprit was found: outputs are deduped).
        #expect(Set(published.filter { $0.topic == "t" }.map { String(decoding: $0.key ?? [], as: UTF8.self) }) == ["a", "c"])
        let stub = try #require(published.first { $0.topic == HeraldTopic.dlq.name })
        let letter = try Wire.decode(DeadLetter.self, from: try #require(stub.value))
        #expect(letter.service == "test" && letter.topic == "t" && letter.key == "big" && letter.value == nil)
        #expect(letter.reason.contains("5000 bytes") && letter.reason.contains("not produced"), "\(letter.reason)")
        // Later outputs are not held behind it.
        try await output(fixture.database, "d")
        #expect(await fixture.owner.flush(0))
        #expect(fixture.publisher.published.last == "d")
        await fixture.owner.partitionsRevoked(partition0, lost: false)
    }

    @Test("a record the code rejects goes to the dead letters in its place; the batch's others are applied, the partition goes on")
    func rejectedRecord() async throws {
        let fixture = try await Fixture()
        let records = (0..<3).map { KafkaRecord(topic: "t", partition: 0, offset: Int64(10 + $0), key: Array("k\($0)".utf8), value: [1]) }
        let outbox = await fixture.owner.apply(
            TopicPartition("t", 0), records,
            apply: { _, record in
                if record.offset == 11 { throw Rejected() }
                return [PendingOutput(topic: "out", key: record.keyString ?? "", value: [1])]
            })
        #expect(outbox?.map { "\($0.topic) \($0.key)" } == ["out k0", "herald.dlq k1", "out k2"])
        // The owner's dead letter: the service, why, and the record whole.
        let letter = try Wire.decode(DeadLetter.self, from: try #require(outbox?[1].value))
        #expect(letter.service == "test" && letter.reason == "not applied: cannot apply" && letter.offset == 11 && letter.key == "k1")
        #expect(try await fixture.database.nextOffsets() == ["t": 13])
        #expect(await fixture.owner.pausedPartitions.isEmpty)
        await fixture.owner.partitionsRevoked(partition0, lost: false)
    }

    @Test("a partition whose database fails (full) is paused and reported, the others go on; it resumes from its stored offsets")
    func failingDatabase() async throws {
        let fixture = try await Fixture()
        let owner = fixture.owner
        // Held here, as the service holds its consumer (the owner holds it weakly).
        let flow = FakeFlow(events: fixture.events)
        owner.setFlow(flow)
        let partition1 = [TopicPartition("t", 1), TopicPartition("u", 1)]
        _ = try await owner.partitionsAssigned(partition1)
        // Nothing is produced, so that no outbox row is deleted: a freed page would make room.
        fixture.publisher.setFailing(true)
        #expect(await applyBig(owner, 0, 4) != nil)
        // The disk is full: the database may not grow.
        let database = try await fixture.database
        try await database.write { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            try db.execute(sql: "PRAGMA max_page_count = \(pages)")
        }
        #expect(await applyBig(owner, 0, 5) == nil)
        #expect(await owner.pausedPartitions == [0])
        #expect(fixture.log.contains("pause t[0],u[0]"))
        // Not a dead letter: the record is not lost, and the offsets did not move.
        #expect(try await database.nextOffsets() == ["t": 5])
        // The other partition goes on; the paused one's batches are not applied (they are read again at the resume).
        #expect(await applyBig(owner, 1, 0) != nil)
        #expect(await applyBig(owner, 0, 6) == nil)
        // Retried after a delay, it fails again while the disk is full (and is paused again), then resumes.
        try await waitUntil("a retry that fails") {
            await owner.retryPaused()
            return fixture.log.filter { $0.hasPrefix("resume") }.count == 1
        }
        #expect(await applyBig(owner, 0, 5) == nil)
        #expect(await owner.pausedPartitions == [0])
        try await database.write { db in try db.execute(sql: "PRAGMA max_page_count = 1073741823") }
        try await waitUntil("a retry that resumes") {
            await owner.retryPaused()
            return fixture.log.filter { $0.hasPrefix("resume") }.count == 2
        }
        #expect(fixture.log.filter { $0.hasPrefix("resume") || $0.hasPrefix("pause") } == [
            "pause t[0],u[0]", "resume t[0]@offset(5),u[0]@beginning", "pause t[0],u[0]", "resume t[0]@offset(5),u[0]@beginning",
        ])
        #expect(await owner.pausedPartitions.isEmpty)
        #expect(await applyBig(owner, 0, 5) != nil)
        #expect(try await database.nextOffsets() == ["t": 6])
        await owner.partitionsRevoked(partition0 + partition1, lost: false)
        // running → paused → running twice, then draining: every change listed by the state machine.
        #expect(await owner.refusedTransitions.isEmpty)
        withExtendedLifetime(flow) {}
    }

    @Test("a partition whose database cannot be opened is held, the others open; it opens and resumes once it can")
    func unopenableDatabase() async throws {
        let (fixture, path) = try await Self.fixtureWithGarbage(partition: 1)
        let owner = fixture.owner
        // Held here, as the service holds its consumer (the owner holds it weakly).
        let flow = FakeFlow(events: fixture.events)
        owner.setFlow(flow)
        let partition1 = [TopicPartition("t", 1), TopicPartition("u", 1)]
        let starts = try await owner.partitionsAssigned(partition1)
        #expect(starts == [TopicPartition("t", 1): .held, TopicPartition("u", 1): .held])
        #expect(await owner.pausedPartitions == [1])
        #expect(await owner.openPartitions == [0])
        #expect(await applyBig(owner, 0, 0) != nil)
        try FileManager.default.removeItem(atPath: path)
        try await waitUntil("resumed") {
            await owner.retryPaused()
            return fixture.log.contains { $0.hasPrefix("resume") }
        }
        #expect(fixture.log.filter { !$0.hasPrefix("published") }.suffix(2) == ["opened 1", "resume t[1]@beginning,u[1]@beginning"])
        #expect(await owner.openPartitions == [0, 1])
        #expect(await owner.pausedPartitions.isEmpty)
        await owner.partitionsRevoked(partition0 + partition1, lost: false)
        // unassigned → paused, then paused → opening → running: every change listed by the state machine.
        #expect(await owner.refusedTransitions.isEmpty)
        withExtendedLifetime(flow) {}
    }

    @Test("the state machine: every change the owner makes is listed, any other is refused")
    func transitions() {
        // Kafka Streams' `Task.State` table, for Herald's states (nil: not assigned here).
        let allowed: Set<String> = [
            "nil→restoring", "nil→opening", "nil→paused",
            "restoring→restoring", "restoring→opening", "restoring→paused",
            "opening→opening", "opening→running", "opening→paused",
            "running→running", "running→paused", "running→draining",
            "paused→paused", "paused→restoring", "paused→opening", "paused→running", "paused→draining",
        ]
        for from in [nil] + PartitionState.allCases.map(Optional.some) {
            for to in PartitionState.allCases {
                let name = "\(from?.rawValue ?? "nil")→\(to.rawValue)"
                #expect(PartitionState.canMove(from: from, to: to) == allowed.contains(name), "\(name)")
            }
        }
        // Nothing leaves draining but the close, and nothing is born running or draining.
        #expect(!PartitionState.canMove(from: .draining, to: .running) && !PartitionState.canMove(from: nil, to: .running))
    }

    @Test("a paused partition that is revoked is forgotten")
    func revokedWhilePaused() async throws {
        let (fixture, _) = try await Self.fixtureWithGarbage(partition: 1)
        let partition1 = [TopicPartition("t", 1), TopicPartition("u", 1)]
        _ = try await fixture.owner.partitionsAssigned(partition1)
        #expect(await fixture.owner.pausedPartitions == [1])
        await fixture.owner.partitionsRevoked(partition1, lost: false)
        #expect(await fixture.owner.pausedPartitions.isEmpty)
        await fixture.owner.partitionsRevoked(partition0, lost: false)
    }
}
