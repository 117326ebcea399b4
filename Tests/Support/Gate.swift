import Foundation

/// Holds whoever waits on it until `open()`: requests stay in flight, as while Kafka is slow to acknowledge or a
/// partition slow to read. Once open, it holds nobody.
package final class Gate: Sendable {
    /// How many are held now.
    package let waiting = Locked(0)
    private let waiters = Locked<[CheckedContinuation<Void, Never>]?>([])

    package init() {}

    package func wait() async {
        await withCheckedContinuation { continuation in
            let held = waiters.withLock { waiters -> Bool in
                guard waiters != nil else { return false }
                waiters!.append(continuation)
                return true
            }
            if held { waiting.withLock { $0 += 1 } } else { continuation.resume() }
        }
    }

    package func open() {
        for continuation in waiters.withLock({ waiters -> [CheckedContinuation<Void, Never>] in
            defer { waiters = nil }
            return waiters ?? []
        }) { continuation.resume() }
    }

    /// `request`'s answer if it comes while the gate is shut; nil if it waited 10 s like those held (the gate is then
    /// opened, so that it ends).
    package func answeredBeforeOpening<T: Sendable>(_ request: @escaping @Sendable () async throws -> T) async throws -> T? {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await request() }
            group.addTask {
                try await Task.sleep(for: .seconds(10))
                return nil
            }
            let answer = try await group.next() ?? nil
            if answer == nil { open() }
            group.cancelAll()
            return answer
        }
    }
}
