import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// Reads `herald.config` whole at start (a group of its own, from the beginning, up to the end offset asked at
/// start), hands the configuration to `apply`, then follows each change live. `waitUntilLoaded` holds back what needs
/// the configuration until the first read is done: the orchestrator's writes (no write is applied without the
/// segments and campaigns), the ingest's campaign triggers (an unknown campaign is refused).
package final class ConfigFollower: Service, Sendable {
    let consumer: KafkaConsumer
    let apply: @Sendable (HeraldConfiguration) async -> Void
    let logger: Logger
    /// nil until the first read ends: true when it was read whole, false when the follower stopped before.
    private let loaded = Mutex<(done: Bool?, waiters: [CheckedContinuation<Bool, Never>])>((nil, []))

    package init(
        client: KafkaClientSettings, instanceID: String, logger: Logger, apply: @escaping @Sendable (HeraldConfiguration) async -> Void
    ) throws {
        consumer = try KafkaConsumer.wholeTopic(.config, client: client, instanceID: instanceID, purpose: "config", logger: logger)
        self.apply = apply
        self.logger = logger
    }

    /// Waits for the first whole read; throws if the follower stopped before it (no write is applied without the
    /// configuration).
    package func waitUntilLoaded() async throws {
        let done = await withCheckedContinuation { continuation in
            let done = loaded.withLock { state in
                if state.done == nil { state.waiters.append(continuation) }
                return state.done
            }
            if let done { continuation.resume(returning: done) }
        }
        guard done else { throw CancellationError() }
    }

    private func finishLoading(_ done: Bool) {
        let waiters = loaded.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard state.done == nil else { return [] }
            state.done = done
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: done) }
    }

    package func run() async throws {
        // Stopping (or failing) before the first whole read releases the writes' consumer, which then stops too.
        defer { finishLoading(false) }
        try await consumer.closing { try await follow() }
    }

    private func follow() async throws {
        guard let end = try await endOffset() else { return }
        var objects: [String: (file: String, node: ConfigNode)] = [:]
        var ready = false
        if end == 0 {
            await publish(objects)
            ready = true
            finishLoading(true)
        }
        try await withGracefulShutdownHandler {
            for try await batch in consumer.batches() {
                ConfigTopic.fold(batch.records, into: &objects, logger: logger)
                // Its group is its own and commits nothing: the lag gauge is where an operator sees it keep up.
                KafkaConsumerService.recordLag(consumer, at: batch.nextOffsets)
                if !ready, let last = batch.records.last?.offset, last + 1 < end { continue }
                await publish(objects)
                if !ready {
                    ready = true
                    finishLoading(true)
                }
            }
        } onGracefulShutdown: {
            self.consumer.stop()
        }
    }

    /// The topic's end offset, asked until the broker answers (a service started before Kafka stays up, not ready,
    /// instead of exiting); nil when the service stops meanwhile.
    private func endOffset() async throws -> Int64? {
        while !Task.isShuttingDownGracefully {
            do {
                return try await consumer.endOffset(ConfigTopic.partition, timeout: .seconds(5))
            } catch {
                logger.warning("herald.config not reachable yet; asking again", metadata: ["error": "\(error)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
        return nil
    }

    private func publish(_ objects: [String: (file: String, node: ConfigNode)]) async {
        let (config, issues) = HeraldConfiguration.read(objects.keys.sorted().compactMap { objects[$0] })
        for issue in issues {
            // `herald config apply` refuses these; a record written by other means is left out, loudly.
            logger.error("configuration object left out", metadata: ["issue": "\(issue)"])
        }
        await apply(config)
    }
}
