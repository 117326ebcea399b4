/// Herald's topics (see docs/kafka.md and the design brief). Every keyed topic has the same partition count, so a
/// profile's records land on the same partition number everywhere.
package enum HeraldTopic: String, CaseIterable, Sendable {
    case ingest = "herald.ingest"
    case config = "herald.config"
    case contacts = "herald.contacts"
    case sendsPush = "herald.sends.push"
    case sendsEmail = "herald.sends.email"
    case sendsSMS = "herald.sends.sms"
    case sendsWebhook = "herald.sends.webhook"
    case deliveries = "herald.deliveries"
    case dlq = "herald.dlq"
    /// The changelogs of the services' partition databases (docs/partitions.md): each row's last image, read back
    /// when a partition moves to an instance without its database.
    case stateOrchestrator = "herald.state.orchestrator"
    case stateNotifier = "herald.state.notifier"
    /// Which instance owns each partition of a service, and its address (`OwnerAnnouncement`): reads go to the owner.
    case owners = "herald.owners"
    /// Each webhook endpoint's state (`WebhookEndpointState`, key `<project>/<endpoint>`): disabled by a 410, enabled
    /// again by `herald webhook replay`. Read whole by every notifier instance.
    case webhooks = "herald.webhooks"
    /// The suppression list (`SuppressionEntry`, key `<project>/<channel>/<digest>`): addresses and numbers never sent
    /// to, whatever their profile says. Read whole by every notifier instance (docs/data-rights.md).
    case suppressions = "herald.suppressions"
    /// What each service removed when a profile was erased (`ErasureReceipt`, keyed by profile): the receipt of a
    /// delete, one part per service (docs/data-rights.md).
    case erasures = "herald.erasures"
    /// An export's question to the notifier instances (`ExportQuestion`) and their answers (`ExportAnswer`, the rows
    /// of a person): each read from its end by whoever waits (docs/data-rights.md, "Export"). Kept an hour.
    case exportQuestions = "herald.export.questions"
    case exportAnswers = "herald.export.answers"

    package var name: String { rawValue }

    /// Compacted topics keep the latest record per key (a tombstone deletes it). The changelogs must never lose a
    /// row's last image to time-based retention.
    package var isCompacted: Bool {
        self == .config || self == .contacts || self == .stateOrchestrator || self == .stateNotifier || self == .owners
            || self == .webhooks || self == .suppressions
    }

    /// `herald.config`, `herald.owners`, `herald.webhooks` and `herald.suppressions` are read whole by every instance and
    /// keep one partition; every other topic is keyed by profile.
    package var isKeyedByProfile: Bool { ![.config, .owners, .webhooks, .suppressions, .exportQuestions, .exportAnswers].contains(self) }

    /// An export's answers hold a person's rows, and matter only while their asker waits (seconds): they are not kept
    /// past an hour (`retention.ms`), which an operator may change; a question, which names the person, neither.
    package var retention: Duration? { self == .exportQuestions || self == .exportAnswers ? .seconds(3600) : nil }

    /// The topic's specification for a cluster whose keyed topics have `partitions` partitions.
    package func spec(partitions: Int32, replicationFactor: Int32 = -1) -> TopicSpec {
        TopicSpec(
            name: name,
            partitions: isKeyedByProfile ? partitions : 1,
            replicationFactor: replicationFactor,
            config: isCompacted
                ? ["cleanup.policy": "compact"]
                : retention.map { ["retention.ms": String($0.components.seconds * 1000)] } ?? [:]
        )
    }

    package static func specs(partitions: Int32, replicationFactor: Int32 = -1) -> [TopicSpec] {
        allCases.map { $0.spec(partitions: partitions, replicationFactor: replicationFactor) }
    }
}

/// A topic to create or check.
package struct TopicSpec: Sendable, Hashable {
    package var name: String
    package var partitions: Int32
    /// -1 takes the broker's default.
    package var replicationFactor: Int32
    package var config: [String: String]

    package init(name: String, partitions: Int32, replicationFactor: Int32 = -1, config: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.config = config
    }
}
