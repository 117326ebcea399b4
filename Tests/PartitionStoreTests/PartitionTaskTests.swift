import Foundation
import Shared
import Testing

@testable import PartitionStore

/// `PartitionTask`: one partition number's facts, as its owner keeps them.
@Suite("Partition task")
struct PartitionTaskTests {
    @Test("a state changes only along the state machine; leaving forgets the assignment, not the work")
    func transitions() {
        let task = PartitionTask(number: 3)
        let topics = [TopicPartition("t", 3)]
        // Not assigned: nothing moves it but an assignment.
        #expect(!task.move(to: .running) && task.state == nil)
        #expect(!task.enter(.running, topics: topics, database: nil) && task.state == nil && task.topics.isEmpty)
        #expect(task.enter(.opening, topics: topics, database: nil) && task.state == .opening && task.topics == topics)
        #expect(task.move(to: .running) && task.state == .running)
        // Refused: nothing changes.
        #expect(!task.move(to: .restoring) && task.state == .running)
        #expect(task.move(to: .draining) && !task.move(to: .running) && task.state == .draining)
        task.hold(2)
        #expect(task.leave() == nil && task.state == nil && task.topics.isEmpty)
        // Attempts a drain did not wait for still end after the partition went.
        #expect(task.work == 2)
        task.release(5)
        #expect(task.work == 0)
    }

    @Test("a drain waiting for the work is resumed when the last unit ends, or by its timeout")
    func workWaits() async {
        let task = PartitionTask(number: 0)
        // No work: not waited for.
        await withCheckedContinuation { task.waitForWork($0) }
        task.hold(3)
        await withCheckedContinuation { waiter in
            task.waitForWork(waiter)
            task.release(2)
            #expect(task.work == 1 && task.waitingForWork == 1)
            task.release(1)
        }
        #expect(task.work == 0 && task.waitingForWork == 0)
        task.hold(1)
        await withCheckedContinuation { waiter in
            task.waitForWork(waiter)
            task.endWorkWaits()
        }
        #expect(task.work == 1 && task.waitingForWork == 0)
    }

    @Test("a failure pauses with a growing delay; the retry is taken once; an applied batch ends the streak")
    func failures() {
        let task = PartitionTask(number: 0)
        let start = ContinuousClock.now
        let (first, newly) = task.failed(Failure(), now: start)
        #expect(newly && task.isPaused && first.failures == 1 && first.retryAt == start + .seconds(1))
        #expect(!task.takeRetry(now: start))
        #expect(task.takeRetry(now: start + .seconds(1)))
        // Being resumed: not handed out twice.
        #expect(!task.takeRetry(now: start + .seconds(5)))
        let (second, again) = task.failed(Failure(), now: start)
        #expect(!again && second.failures == 2 && second.retryAt == start + .seconds(2))
        task.resumed()
        #expect(!task.isPaused)
        // Resumed, not yet applied: the next failure counts on.
        #expect(task.failed(Failure(), now: start).0.failures == 3)
        task.resumed()
        task.applied()
        #expect(task.failed(Failure(), now: start).0.failures == 1)
        task.forgetFault()
        #expect(!task.isPaused && task.failed(Failure(), now: start).0.failures == 1)
        #expect(PartitionFault.delay(afterFailures: 30) == PartitionFault.maxDelay)
    }

    @Test("changelog waits end when the changelog is produced through them, or when the flush round ends")
    func changelogWaits() async {
        let task = PartitionTask(number: 0)
        await withCheckedContinuation { waiter in
            task.waitForChangelog(through: 5, waiter)
            task.changelogProduced(through: 7)
        }
        #expect(task.changelogThrough == 7 && task.waitingForChangelog == 0)
        task.changelogProduced(through: 6)
        #expect(task.changelogThrough == 7)
        await withCheckedContinuation { waiter in
            task.waitForChangelog(through: 9, waiter)
            task.changelogProduced(through: 8)
            // Not through 9 yet: still waiting, until the flush round ends.
            #expect(task.waitingForChangelog == 1)
            task.endChangelogWaits()
        }
        #expect(task.waitingForChangelog == 0)
        task.changelogRestarts()
        #expect(task.changelogThrough == 0)
    }

    private struct Failure: Error {}
}
