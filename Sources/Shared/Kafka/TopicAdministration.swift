/// What a service's start asks of the cluster's admin API. `KafkaAdmin` answers it; tests fake it at this boundary
/// for what the embedded broker cannot answer (CreateTopics, DescribeConfigs).
package protocol TopicAdministration: Sendable {
    /// Every topic of the cluster, as the metadata shows it.
    func topicStates() async throws -> [String: TopicState]
    /// The configuration of `names` (DescribeConfigs); nil when the brokers do not answer it (the embedded broker).
    func topicConfigs(_ names: [String]) async throws -> [String: [String: String]]?
    /// Creates `specs`; a topic that already exists is not an error.
    func createTopics(_ specs: [TopicSpec], timeout: Duration) async throws
}

/// What `ensureTopics` did: the topics it created, and whether the brokers answered for their configuration.
package struct TopicsPrepared: Sendable, Equatable {
    package var created: [String]
    package var configurationChecked: Bool

    package init(created: [String], configurationChecked: Bool) {
        self.created = created
        self.configurationChecked = configurationChecked
    }
}

extension TopicAdministration {
    /// Makes sure `specs` exist: creates the missing ones (unless `create` is false), then checks what would break a
    /// guarantee (`TopicCheck`): partition counts, replicas, and the settings Herald creates topics with. A missing
    /// topic throws `KafkaError.unknownTopic`; any other problem `TopicSettingsRefused`, naming each topic and setting.
    @discardableResult
    package func ensureTopics(_ specs: [TopicSpec], create: Bool = true, timeout: Duration = .seconds(30)) async throws
        -> TopicsPrepared
    {
        var states = try await topicStates()
        let missing = create ? specs.filter { states[$0.name] == nil } : []
        if !missing.isEmpty {
            try await createTopics(missing, timeout: timeout)
            states = try await topicStates()
            let deadline = ContinuousClock.now + timeout
            // A new topic's metadata reaches every broker shortly after creation.
            while specs.contains(where: { states[$0.name] == nil }), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(200))
                states = try await topicStates()
            }
        }
        var problems = TopicCheck.problems(specs, states: states)
        if let absent = problems.first(where: { $0.setting == TopicProblem.absent }) {
            throw KafkaError(code: .unknownTopic, reason: absent.description)
        }
        let configured = specs.filter { !$0.config.isEmpty }
        let configs = configured.isEmpty ? [:] : try await topicConfigs(configured.map(\.name))
        if let configs { problems += TopicCheck.problems(configured, configs: configs) }
        guard problems.isEmpty else { throw TopicSettingsRefused(problems: problems) }
        return TopicsPrepared(created: missing.map(\.name), configurationChecked: configs != nil)
    }
}
