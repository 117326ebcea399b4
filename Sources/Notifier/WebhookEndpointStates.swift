import CoreMetrics
import Foundation
import Logging
import PartitionStore
import Shared

/// Webhook endpoints' states on `herald.webhooks` (docs/webhooks.md, "Disabled endpoints"): written by the notifier
/// that got a 410 (in the transaction that parks the message) and by `herald webhook replay`; followed by every
/// notifier instance (`WholeTopicFollower` through `WebhookStateApplier`), which parks the messages of a disabled
/// endpoint and gives them back to one enabled again.
enum WebhookEndpointStates {
    /// The record that disables the endpoint of `send`, which answered 410 Gone.
    static func disabling(_ send: SendRequest, at time: Date) -> PendingOutput {
        let state = WebhookEndpointState(
            project: send.project, endpoint: send.endpoint ?? "", disabled: true, reason: "gone", sendID: send.sendID,
            by: "notifier", at: time)
        return PendingOutput(topic: HeraldTopic.webhooks.name, key: state.key, value: (try? Wire.encode(state)) ?? [])
    }

    /// `herald_webhook_endpoint_disabled{endpoint}`: 1 while disabled; for the endpoints of the apps file only (the
    /// series are bounded by it).
    static func gauge(_ endpoint: String, disabled: Bool) {
        Gauge(label: "herald_webhook_endpoint_disabled", dimensions: [("endpoint", endpoint)]).record(disabled ? 1 : 0)
    }
}

/// What a record of `herald.webhooks` does here: the endpoint's state into the gate; an endpoint enabled again has its
/// parked messages made pending in every partition open here, oldest first.
struct WebhookStateApplier: Sendable {
    let gate: WebhookGate
    let partitions: NotifierPartitions
    /// `project/endpoint` of the apps file: the only ones with a metric series.
    let known: Set<String>
    let logger: Logger

    init(gate: WebhookGate, partitions: NotifierPartitions, catalog: AppsCatalog, logger: Logger) {
        self.gate = gate
        self.partitions = partitions
        self.known = Set(catalog.projects.flatMap { project in project.webhooks.keys.map { "\(project.id)/\($0)" } })
        self.logger = logger
        for endpoint in known { WebhookEndpointStates.gauge(endpoint, disabled: false) }
    }

    func apply(_ record: KafkaRecord) async {
        guard let key = record.keyString else { return }
        var disabled = false
        if let value = record.value {
            guard let state = try? Wire.decode(WebhookEndpointState.self, from: value) else {
                logger.warning("unreadable webhook endpoint state", metadata: ["key": "\(key)"])
                return
            }
            disabled = state.disabled
            if disabled, gate.set(key, disabled: true) {
                logger.warning(
                    "webhook endpoint disabled: it answered 410 Gone; its messages are parked until `herald webhook replay`",
                    metadata: ["endpoint": "\(key)", "send_id": "\(state.sendID ?? "")", "by": "\(state.by)"])
            }
        }
        if known.contains(key) { WebhookEndpointStates.gauge(key, disabled: disabled) }
        guard !disabled else { return }
        gate.set(key, disabled: false)
        let given = await partitions.unpark(endpoint: key)
        if given > 0 {
            logger.info("webhook endpoint enabled: its parked messages are sent, oldest first", metadata: ["endpoint": "\(key)", "messages": "\(given)"])
        }
    }
}
