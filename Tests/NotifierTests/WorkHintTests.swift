import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import Notifier

/// A worker's look at every partition reads only those where an attempt may be due (`DueHints`, issue 58): an idle
/// notifier reads nothing; every row made due lowers its partition's hint.
@Suite("Notifier: work hints", .timeLimit(.minutes(5)))
struct WorkHintTests {
    @Test("after a claim that found nothing a partition is not read again; a send held until a time makes it due at that time, not before")
    func heldSendMakesItDue() async throws {
        let start = Date()
        let now = Locked(start)
        let harness = try await NotifierHarness(drainTimeout: .milliseconds(100), clock: { now.withLock { $0 } })
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        #expect(await harness.partitions.claim(.push, limit: 10).isEmpty)
        #expect(await harness.partitions.workHintDue(0, .push, at: start + 86_400) == false)

        var later = sendRequest(id: "later")
        later.notBefore = start + 60
        try await harness.send(later)
        #expect(await harness.partitions.workHintDue(0, .push, at: start + 59) == false)
        #expect(await harness.partitions.workHintDue(0, .push, at: start + 60) == true)
        now.withLock { $0 = start + 60 }
        #expect(await harness.partitions.claim(.push, limit: 10).map(\.claimed.attempt.request.sendID) == ["later"])
        await harness.shutdown()
    }
}
