/// What the brokers report of one topic: its partition count, and the fewest replicas any of its partitions has.
package struct TopicState: Sendable, Equatable {
    package var partitions: Int32
    package var replicas: Int32

    package init(partitions: Int32, replicas: Int32) {
        self.partitions = partitions
        self.replicas = replicas
    }
}

/// A topic setting that would break one of Herald's guarantees, named by topic and setting: one line of the refusal.
package struct TopicProblem: Sendable, Equatable, CustomStringConvertible {
    package var topic: String
    package var setting: String
    package var message: String
    package var description: String { "topic \(topic): \(message)" }

    /// The `setting` of a topic that does not exist.
    package static let absent = "exists"
}

/// A service refuses to start on topics whose settings would break a guarantee (`TopicCheck`).
package struct TopicSettingsRefused: Error, Sendable, CustomStringConvertible {
    package var problems: [TopicProblem]
    package var description: String { problems.map(\.description).joined(separator: "; ") }
}

/// Herald's topics against what the brokers report. Pure: the admin client's answers come in (`TopicAdministration`),
/// the problems go out, so each rule is tested with any answer a broker could give.
package enum TopicCheck {
    /// The specs' topics as the metadata shows them: each exists, has the spec's partition count (a keyed topic with
    /// another count sends a profile's records to different partition numbers), and at least the replicas the
    /// operator asked for (`HERALD_TOPIC_REPLICATION`, the spec's replication factor when positive).
    package static func problems(_ specs: [TopicSpec], states: [String: TopicState]) -> [TopicProblem] {
        var problems: [TopicProblem] = []
        for spec in specs {
            guard let state = states[spec.name] else {
                problems.append(TopicProblem(topic: spec.name, setting: TopicProblem.absent, message: "does not exist and was not created"))
                continue
            }
            if state.partitions != spec.partitions {
                problems.append(
                    TopicProblem(
                        topic: spec.name, setting: "partitions",
                        message:
                            "has \(state.partitions) partitions, expected \(spec.partitions): every keyed topic must have the same partition count"
                    ))
            }
            if spec.replicationFactor > 0, state.replicas < spec.replicationFactor {
                problems.append(
                    TopicProblem(
                        topic: spec.name, setting: "replication.factor",
                        message:
                            "has \(state.replicas) replicas, HERALD_TOPIC_REPLICATION asks for \(spec.replicationFactor): losing a broker could lose its records"
                    ))
            }
        }
        return problems
    }

    /// The specs' topic configurations (`cleanup.policy`) as the brokers report them (DescribeConfigs): each setting
    /// Herald creates a topic with and a guarantee rests on (`checked`) must still be what it was created with; a
    /// retention is the operator's to change. A changelog or a contact topic
    /// with `cleanup.policy=delete` (or `compact,delete`) loses rows to retention, and a partition restored from it
    /// would miss them.
    package static func problems(_ specs: [TopicSpec], configs: [String: [String: String]]) -> [TopicProblem] {
        var problems: [TopicProblem] = []
        for spec in specs {
            for (key, expected) in spec.config.sorted(by: { $0.key < $1.key }) where checked.contains(key) {
                let actual = configs[spec.name]?[key]
                guard actual != expected else { continue }
                problems.append(
                    TopicProblem(
                        topic: spec.name, setting: key,
                        message: "has \(key)=\(actual ?? "(unset)"), Herald needs \(key)=\(expected): \(Self.why(key))"))
            }
        }
        return problems
    }

    /// The settings a guarantee rests on.
    package static let checked: Set<String> = ["cleanup.policy"]

    static func why(_ key: String) -> String {
        key == "cleanup.policy"
            ? "with deletion, retention removes rows the topic is the only copy of (a partition restored from it would miss them)"
            : "Herald created the topic with it"
    }
}
