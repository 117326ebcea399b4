import CRdKafka
import Logging

/// Copies a group member's processed offsets to a *progress group* that has no members, for operators: `herald lag`,
/// `kafka-consumer-groups.sh --describe --group <group>.offsets` and kcat show how far behind each partition is.
///
/// Not through the member itself: librdkafka 2.0.2 takes a commit answered ILLEGAL_GENERATION (one sent just before the
/// group moved to a new generation) as the loss of the member's whole assignment (confluentinc/librdkafka#4059, fixed
/// in 2.10), and a member that commits after every batch sends one at nearly every rebalance. A handle that never joins
/// commits as a simple consumer (generation -1), which the group coordinator accepts for a group without members.
/// The services resume from the offsets in their own databases; these copies are never read back.
package final class KafkaOffsetReporter: Sendable {
    private let runtime: RdKafkaRuntime
    package let groupID: String

    package init(client: KafkaClientSettings, clientID: String, groupID: String, logger: Logger) throws(KafkaError) {
        var configuration = client.base(clientID: clientID)
        configuration.set("group.id", groupID)
        configuration.set("enable.auto.commit", "false")
        self.groupID = groupID
        self.runtime = try RdKafkaRuntime(
            type: RD_KAFKA_CONSUMER, configuration: configuration, events: 0, logger: logger,
            destroyFlags: Int32(RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE), onEvent: { _, _ in })
    }

    /// Commits `next` (each the next offset to read) without waiting; a failed copy is overwritten by the next one.
    package func commit(_ next: [TopicPartition: Int64]) {
        guard !next.isEmpty else { return }
        let entries = next.map { ($0.key, $0.value) }
        _ = runtime.withHandle { handle in
            withPartitionList(entries) { rd_kafka_commit(handle, $0, 1) }
        }
    }

    package func shutdown() async { await runtime.stop() }
}
