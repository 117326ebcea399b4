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
        var gateWaiters: [CheckedContinuation<Void, Never>] = []
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
        let keys = records.map { String(decoding: $0.key ?? [], as: UTF8.self) }
        state.withLock { $0.published += keys }
        events.withLock { $0 += keys.map { "published \($0)" } }
        return records.enumerated().map { KafkaDeliveryReport(topic: $1.topic, partition: $1.partition ?? 0, offset: Int64($0)) }
    }
}

/// Hooks that log what the owner called, and can write an output while draining.
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

    func partitionDraining(_ partition: Int32) async {
        events.withLock { $0.append("draining \(partition)") }
        if let key = writeWhileDraining, let database = await owner.database(partition) {
            _ = try? await database.writeWithOutbox { _ in ((), [PendingOutput(topic: "t", key: key, value: [1])]) }
        }
    }

    func partitionClosed(_ partition: Int32) async {
        events.withLock { $0.append("closed \(partition)") }
    }
}

private let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })

private func temporaryDirectory() -> String {
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

    init(directory: String = temporaryDirectory(), gateOpen: Bool = true, writeWhileDraining: String? = nil) async throws {
        self.directory = directory
        publisher = FakePublisher(events: events, gateOpen: gateOpen)
        owner = PartitionOwner(directory: directory, migrator: coreMigrator, publisher: publisher, logger: logger)
        hooks = RecordingHooks(events: events, owner: owner, writeWhileDraining: writeWhileDraining)
        owner.setHooks(hooks)
        _ = try await owner.partitionsAssigned(partition0)
    }

    var database: PartitionDatabase {
        get async throws { try #require(await owner.database(0)) }
    }

    var log: [String] { events.withLock { $0 } }
}

@Suite("Partition owner", .timeLimit(.minutes(1)))
struct PartitionOwnerTests {
    @Test("assignment opens the database once and resumes each topic at its stored offset, new topics at the beginning")
    func startsFromStoredOffsets() async throws {
        let fixture = try await Fixture()
        _ = try await fixture.database.applyBatch([KafkaRecord(topic: "t", partition: 0, offset: 41, key: nil, value: nil)]) { _, _ in [] }
        await fixture.owner.partitionsRevoked(partition0, lost: false)

        let starts = try await fixture.owner.partitionsAssigned(partition0)
        #expect(starts == [TopicPartition("t", 0): .offset(42), TopicPartition("u", 0): .beginning])
        #expect(fixture.log == ["opened 0", "draining 0", "closed 0", "opened 0"])
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
        try await waitUntil("draining") { fixture.log.contains("draining 0") }
        #expect(await owner.database(0) != nil)
        publisher.openGate()
        await revoking.value

        #expect(publisher.published == ["a", "b"])
        #expect(fixture.log == ["opened 0", "draining 0", "published a", "published b", "closed 0"])
        let reopened = try PartitionDatabase.open(directory: fixture.directory, partition: 0, migrator: coreMigrator)
        #expect(try await reopened.pendingOutbox().isEmpty)
        try reopened.close()
    }

    @Test("what the service writes while draining is produced before the partition is released")
    func drainThenFlush() async throws {
        let fixture = try await Fixture(writeWhileDraining: "late")
        await fixture.owner.partitionsRevoked(partition0, lost: false)
        #expect(fixture.log == ["opened 0", "draining 0", "published late", "closed 0"])
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
        let owner = PartitionOwner(directory: fixture.directory, migrator: coreMigrator, publisher: publisher, logger: logger)
        _ = try await owner.partitionsAssigned(partition0)
        try await waitUntil("the leftover's flush") { publisher.published == ["r", "s"] }
        await owner.partitionsRevoked(partition0, lost: false)
    }
}
