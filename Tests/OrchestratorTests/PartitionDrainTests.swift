import Foundation
import HeraldTestSupport
import Logging
import Shared
import Synchronization
import Testing

@testable import Orchestrator
@testable import OrchestratorDomain
@testable import PartitionStore

/// A publisher that keeps what it was given.
final class RecordingPublisher: OutboxPublisher {
    private let records = Mutex<[KafkaOutgoingRecord]>([])
    var topics: [String] { records.withLock { $0.map(\.topic) } }
    func publish(_ batch: [KafkaOutgoingRecord]) async throws -> [KafkaDeliveryReport] {
        records.withLock { $0 += batch }
        return batch.map { KafkaDeliveryReport(topic: $0.topic, partition: $0.partition ?? 0, offset: 0) }
    }
}

/// A clock that, once armed, lets `skip` callers through and holds the next one (a timer run, inside its transaction)
/// until released.
final class HoldingClock: Sendable {
    private struct State {
        var now: Date
        var armed = false
        var skip = 0
        var held = false
    }

    private let state: Mutex<State>
    private let gate = DispatchSemaphore(value: 0)

    init(_ start: Date) { state = Mutex(State(now: start)) }

    var now: Date {
        let hold = state.withLock { state -> Bool in
            guard state.armed else { return false }
            guard state.skip == 0 else {
                state.skip -= 1
                return false
            }
            state.armed = false
            state.held = true
            return true
        }
        if hold { gate.wait() }
        return state.withLock { $0.now }
    }

    func set(_ date: Date) { state.withLock { $0.now = date } }
    func arm(skip: Int = 0) {
        state.withLock { state in
            state.armed = true
            state.skip = skip
        }
    }
    var holding: Bool { state.withLock { $0.held } }
    func release() { gate.signal() }
}

@Suite("Orchestrator: revocation drains the ticker", .timeLimit(.minutes(5)))
struct PartitionDrainTests {
    @Test("a revocation during a timer run waits for it: the send it decides goes out before the partition is released")
    func revokeDuringTimers() async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let clock = HoldingClock(t0)
        let publisher = RecordingPublisher()
        let manager = OrchestratorPartitions(
            directory: temporaryDirectory(), producer: publisher, logger: logger, clock: { clock.now })
        await manager.setConfiguration(try configuration(
            demoProject, pushTemplate,
            #"{"kind":"campaign","id":"abandoned-cart","project":"demo","trigger":{"event":"ADD_TO_CART"},"delay":"1h","reeligibility":"always","messages":[{"channel":"push","template":"cart"}]}"#))
        let partitions = Orchestrator.topics.map { TopicPartition($0.name, 0) }
        _ = try await manager.partitionsAssigned(partitions)
        var writer = Writer()
        await manager.apply(KafkaBatch(records: [
            try writer.event(id: "cart-1", #"{"name":"add_to_cart","attributes":{"product":"Skis","price":300}}"#)
        ]))
        #expect(!publisher.topics.contains(HeraldTopic.sendsPush.name))

        // The delay is over: the ticker's timer run is held inside its transaction (the clock's second reading: the tick
        // asks which partitions' timers may be due, then the run's transaction).
        clock.set(t0.addingTimeInterval(3700))
        clock.arm(skip: 1)
        let ticking = Task { await manager.tick() }
        try await waitUntil("the timer run to start") { clock.holding }
        let released = Locked(false)
        let revoking = Task {
            await manager.partitionsRevoked(partitions, lost: false)
            released.withLock { $0 = true }
        }
        try await Task.sleep(for: .milliseconds(200))
        #expect(!released.withLock { $0 }, "the revocation waits for the timer run")
        clock.release()
        _ = await ticking.value
        await revoking.value

        #expect(publisher.topics.filter { $0 == HeraldTopic.sendsPush.name }.count == 1)
        #expect(await manager.openPartitions.isEmpty)
    }
}
