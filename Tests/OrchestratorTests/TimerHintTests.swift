import Foundation
import HeraldTestSupport
import Logging
import Shared
import Synchronization
import Testing

@testable import Orchestrator
@testable import OrchestratorDomain
@testable import PartitionStore

/// The ticker reads a partition only when its timer hint says a timer may be due (issue 58: an idle instance reads
/// nothing); a timer any transaction sets lowers the hint.
@Suite("Orchestrator: timer hints", .timeLimit(.minutes(5)))
struct TimerHintTests {
    @Test("a timer set after a tick found nothing is still run at its time: the batch that sets it lowers the hint, the run raises it again")
    func timerSetAfterAnIdleTick() async throws {
        let logger = Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        let now = Mutex(t0)
        let publisher = RecordingPublisher()
        let manager = OrchestratorPartitions(
            directory: temporaryDirectory(), producer: publisher, logger: logger, clock: { now.withLock { $0 } })
        await manager.setConfiguration(try configuration(
            demoProject, pushTemplate,
            #"{"kind":"campaign","id":"abandoned-cart","project":"demo","trigger":{"event":"ADD_TO_CART"},"delay":"1h","reeligibility":"always","messages":[{"channel":"push","template":"cart"}]}"#))
        let partitions = Orchestrator.topics.map { TopicPartition($0.name, 0) }
        _ = try await manager.partitionsAssigned(partitions)
        // The first tick reads the partition (a database just opened may hold due timers), finds none: idle from here.
        _ = await manager.tick()
        #expect(await manager.timerHintDue(0, at: t0.addingTimeInterval(86_400 * 365)) == false)

        var writer = Writer()
        await manager.apply(KafkaBatch(records: [
            try writer.event(id: "cart-1", #"{"name":"add_to_cart","attributes":{"product":"Skis","price":300}}"#)
        ]))
        #expect(await manager.timerHintDue(0, at: t0.addingTimeInterval(3599)) == false)
        #expect(await manager.timerHintDue(0, at: t0.addingTimeInterval(3601)) == true)

        now.withLock { $0 = t0.addingTimeInterval(3700) }
        _ = await manager.tick()
        await manager.owner.flush(0)
        #expect(publisher.topics.filter { $0 == HeraldTopic.sendsPush.name }.count == 1)
        #expect(await manager.timerHintDue(0, at: t0.addingTimeInterval(86_400 * 365)) == false)
        await manager.partitionsRevoked(partitions, lost: false)
    }
}
