import Shared
import Synchronization
import Testing

/// The start-up check of Herald's topics against what a real broker reports, with the admin client faked at its
/// boundary (`TopicAdministration`): the embedded broker answers neither CreateTopics nor DescribeConfigs.
@Suite("Topic settings checked at start")
struct TopicCheckTests {
    /// A cluster whose answers the test writes: topic states, configurations (nil: DescribeConfigs unanswered).
    final class FakeAdmin: TopicAdministration {
        let states: Mutex<[String: TopicState]>
        let configs: Mutex<[String: [String: String]]?>
        let creations = Mutex<[[String]]>([])

        init(states: [String: TopicState], configs: [String: [String: String]]?) {
            self.states = Mutex(states)
            self.configs = Mutex(configs)
        }

        func topicStates() async throws -> [String: TopicState] { states.withLock { $0 } }
        func topicConfigs(_ names: [String]) async throws -> [String: [String: String]]? {
            configs.withLock { configs in configs.map { all in all.filter { names.contains($0.key) } } }
        }
        func createTopics(_ specs: [TopicSpec], timeout: Duration) async throws {
            creations.withLock { $0.append(specs.map(\.name)) }
            // As a real broker does: created with their settings.
            states.withLock { states in
                for spec in specs { states[spec.name] = TopicState(partitions: spec.partitions, replicas: max(spec.replicationFactor, 1)) }
            }
            configs.withLock { configs in
                for spec in specs where configs != nil { configs?[spec.name] = spec.config.merging(["retention.ms": "604800000"]) { a, _ in a } }
            }
        }
    }

    static let specs = HeraldTopic.specs(partitions: 12, replicationFactor: 3)

    /// The cluster as Herald creates it: every topic, 3 replicas, compacted ones compacted.
    static func healthy() -> ([String: TopicState], [String: [String: String]]) {
        var states: [String: TopicState] = [:]
        var configs: [String: [String: String]] = [:]
        for spec in specs {
            states[spec.name] = TopicState(partitions: spec.partitions, replicas: 3)
            configs[spec.name] = ["cleanup.policy": spec.config["cleanup.policy"] ?? "delete", "min.insync.replicas": "2"]
        }
        return (states, configs)
    }

    @Test("topics as Herald creates them pass, and their configuration was checked")
    func healthyPasses() async throws {
        let (states, configs) = Self.healthy()
        let prepared = try await FakeAdmin(states: states, configs: configs).ensureTopics(Self.specs)
        #expect(prepared == TopicsPrepared(created: [], configurationChecked: true))
    }

    @Test(
        "a compacted topic with deletion is refused, naming the topic and the setting",
        arguments: [
            (HeraldTopic.stateOrchestrator, "delete"), (.stateNotifier, "compact,delete"), (.contacts, "delete"),
            (.config, "delete,compact"),
        ])
    func deletionRefused(topic: HeraldTopic, policy: String) async throws {
        var (states, configs) = Self.healthy()
        configs[topic.name]?["cleanup.policy"] = policy
        let refused = await #expect(throws: TopicSettingsRefused.self) {
            try await FakeAdmin(states: states, configs: configs).ensureTopics(Self.specs)
        }
        #expect(refused?.problems.map(\.topic) == [topic.name])
        #expect(refused?.problems.first?.setting == "cleanup.policy")
        #expect(refused?.description.contains("topic \(topic.name): has cleanup.policy=\(policy), Herald needs cleanup.policy=compact") == true)
    }

    @Test("a topic that is not compacted may delete: herald.ingest's retention is the operator's")
    func deletionAllowedWhereNotCompacted() async throws {
        var (states, configs) = Self.healthy()
        configs[HeraldTopic.ingest.name]?["retention.ms"] = "86400000"
        states[HeraldTopic.ingest.name]?.replicas = 4
        #expect(try await FakeAdmin(states: states, configs: configs).ensureTopics(Self.specs).configurationChecked)
    }

    @Test("an export topic is created with an hour's retention, which the operator may change")
    func exportRetention() async throws {
        #expect(HeraldTopic.exportAnswers.spec(partitions: 16).config == ["retention.ms": "3600000"])
        #expect(HeraldTopic.exportQuestions.spec(partitions: 16).partitions == 1)
        let (states, healthy) = Self.healthy()
        var configs = healthy
        configs[HeraldTopic.exportAnswers.name]?["retention.ms"] = "600000"
        #expect(try await FakeAdmin(states: states, configs: configs).ensureTopics(Self.specs).configurationChecked)
    }

    @Test("too few replicas and another partition count are refused together, one problem a topic and setting")
    func replicasAndPartitions() async throws {
        var (states, configs) = Self.healthy()
        states[HeraldTopic.deliveries.name]?.replicas = 1
        states[HeraldTopic.sendsPush.name]?.partitions = 6
        let refused = await #expect(throws: TopicSettingsRefused.self) {
            try await FakeAdmin(states: states, configs: configs).ensureTopics(Self.specs)
        }
        let problems = refused?.problems.map { "\($0.topic) \($0.setting)" }.sorted()
        #expect(problems == ["herald.deliveries replication.factor", "herald.sends.push partitions"])
        #expect(refused?.description.contains("has 1 replicas, HERALD_TOPIC_REPLICATION asks for 3") == true)
        // Without a replication asked for (-1, the broker's default), replicas are not judged.
        #expect(try await FakeAdmin(states: states, configs: configs).ensureTopics(
            [TopicSpec(name: HeraldTopic.deliveries.name, partitions: 12)]).created.isEmpty)
    }

    @Test("missing topics are created with their settings, then checked; check-only mode names a missing one")
    func createdThenChecked() async throws {
        var (states, configs) = Self.healthy()
        states[HeraldTopic.stateNotifier.name] = nil
        configs[HeraldTopic.stateNotifier.name] = nil
        let admin = FakeAdmin(states: states, configs: configs)
        let prepared = try await admin.ensureTopics(Self.specs)
        #expect(prepared.created == [HeraldTopic.stateNotifier.name])
        #expect(admin.creations.withLock { $0 } == [[HeraldTopic.stateNotifier.name]])

        states[HeraldTopic.stateNotifier.name] = nil
        let missing = await #expect(throws: KafkaError.self) {
            try await FakeAdmin(states: states, configs: configs).ensureTopics(Self.specs, create: false)
        }
        #expect(missing?.code == .unknownTopic)
        #expect(missing?.reason == "topic herald.state.notifier: does not exist and was not created")
    }

    @Test("brokers that do not answer DescribeConfigs: the rest is checked, and the answer says the configuration was not")
    func configurationUnanswered() async throws {
        let (states, _) = Self.healthy()
        let prepared = try await FakeAdmin(states: states, configs: nil).ensureTopics(Self.specs)
        #expect(prepared == TopicsPrepared(created: [], configurationChecked: false))
    }
}
