import Foundation
import HeraldTestSupport
import Logging
@testable import Shared
import Testing

@Suite("Environment configuration")
struct ConfigTests {
    static let base = [
        "KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9092,kafka-2:9092", "HERALD_APPS_FILE": sampleAppsFile,
        "HERALD_ALLOW_SAMPLE_KEYS": "true",
    ]

    @Test("defaults when only the bootstrap list is set")
    func defaults() throws {
        let ingest = try IngestConfig.fromEnvironment(Self.base)
        #expect(ingest.common.kafka.bootstrapServers == "kafka-1:9092,kafka-2:9092")
        #expect(ingest.common.httpPort == 8080)
        #expect(ingest.common.httpHost == "127.0.0.1")
        #expect(ingest.common.logLevel == .info)
        #expect(ingest.common.logFormat == .json)
        #expect(ingest.common.topicPartitions == 12)
        #expect(ingest.common.topicReplication == -1)
        #expect(ingest.common.createTopics)
        #expect(ingest.produceTimeout == .seconds(10))
        #expect(ingest.maxBodyBytes == 2 << 20)
        #expect(ingest.catalog.credential(for: "rest_demo_0123456789abcdef") == .rest(project: "demo"))
        #expect(ingest.catalog.credential(for: "DEV_demo_ios_0123456789") == .app(project: "demo", app: "demo-ios", dev: true))
        let orchestrator = try OrchestratorConfig.fromEnvironment(Self.base).service
        #expect(orchestrator.common.httpPort == 8081)
        #expect(orchestrator.consumerGroup == "herald-orchestrator")
        #expect(orchestrator.dataDirectory == "data/orchestrator")
        #expect(orchestrator.dedupeRetention == .seconds(30 * 86_400))
        #expect(orchestrator.sqliteMemoryMiB == 64)
        #expect(orchestrator.advertisedURL == nil)
        // The orchestrator reads the apps file when given (its in-app endpoints check the apps' keys), and runs without.
        #expect(try OrchestratorConfig.fromEnvironment(Self.base).catalog?.credential(for: "live_demo_ios_0123456789") != nil)
        #expect(try OrchestratorConfig.fromEnvironment(["KAFKA_BOOTSTRAP_SERVERS": "kafka-1:9092"]).catalog == nil)
    }

    @Test(
        "HERALD_ADVERTISED_URL: where the other instances reach this one",
        arguments: [
            ("http://10.0.0.7:8081", "http://10.0.0.7:8081"), ("https://orchestrator-0.herald:8081/", "https://orchestrator-0.herald:8081"),
            ("10.0.0.7:8081", nil), ("http://10.0.0.7:8081/reads", nil), ("http://", nil), ("ftp://host:1", nil),
        ] as [(String, String?)])
    func advertisedURL(value: String, expected: String?) throws {
        let environment = Self.base.merging(["HERALD_ADVERTISED_URL": value]) { $1 }
        if let expected {
            #expect(try OrchestratorConfig.fromEnvironment(environment).service.advertisedURL == expected)
        } else {
            #expect(throws: ConfigError.self) { try OrchestratorConfig.fromEnvironment(environment) }
        }
    }

    @Test(
        "listening beyond loopback without HERALD_OPERATOR_TOKEN is refused at start, unless HERALD_OPERATOR_WITHOUT_TOKEN=loopback says so",
        arguments: [
            ("127.0.0.1", nil, nil, true), ("127.8.9.10", nil, nil, true), ("localhost", nil, nil, true), ("::1", nil, nil, true),
            ("[::1]", nil, nil, true), ("0.0.0.0", nil, nil, false), ("::", nil, nil, false), ("10.0.0.7", nil, nil, false),
            ("127.0.0.1.example.com", nil, nil, false), ("128.0.0.1", nil, nil, false),
            ("0.0.0.0", "operator-token-0123456789", nil, true), ("0.0.0.0", nil, "loopback", true),
        ] as [(String, String?, String?, Bool)])
    func operatorTokenBeyondLoopback(host: String, token: String?, withoutToken: String?, starts: Bool) throws {
        var environment = Self.base.merging(["HERALD_HTTP_HOST": host]) { $1 }
        environment["HERALD_OPERATOR_TOKEN"] = token
        environment["HERALD_OPERATOR_WITHOUT_TOKEN"] = withoutToken
        for read in [{ try IngestConfig.fromEnvironment($0).common }, { try OrchestratorConfig.fromEnvironment($0).service.common }] {
            if starts {
                #expect(try read(environment).httpHost == host)
            } else {
                let error = #expect(throws: ConfigError.self) { try read(environment) }
                #expect(error?.variable == "HERALD_OPERATOR_TOKEN")
                #expect(error?.problem.contains("HERALD_OPERATOR_WITHOUT_TOKEN=loopback") == true)
            }
        }
        environment["HERALD_OPERATOR_WITHOUT_TOKEN"] = "yes"
        #expect(throws: ConfigError.self) { try IngestConfig.fromEnvironment(environment) }
    }

    @Test("HERALD_SQLITE_MEMORY_MIB: 8 to 65536 MiB, anything else refused naming it")
    func sqliteMemory() throws {
        for (value, expected) in [("8", 8), ("65536", 65_536), ("256", 256)] {
            #expect(try OrchestratorConfig.fromEnvironment(Self.base.merging(["HERALD_SQLITE_MEMORY_MIB": value]) { $1 }).service.sqliteMemoryMiB == expected)
        }
        for value in ["7", "65537", "64MB"] {
            let error = #expect(throws: ConfigError.self) {
                try OrchestratorConfig.fromEnvironment(Self.base.merging(["HERALD_SQLITE_MEMORY_MIB": value]) { $1 })
            }
            #expect(error?.variable == "HERALD_SQLITE_MEMORY_MIB")
        }
    }

    @Test(
        "each invalid value is refused naming its variable",
        arguments: [
            ("KAFKA_BOOTSTRAP_SERVERS", ""),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka"),
            ("KAFKA_BOOTSTRAP_SERVERS", ":9092"),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka:0"),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka:65536"),
            ("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092,"),
            ("HERALD_HTTP_PORT", "-1"),
            ("HERALD_HTTP_PORT", "65536"),
            ("HERALD_HTTP_PORT", "80a"),
            ("HERALD_LOG_LEVEL", "verbose"),
            ("HERALD_LOG_FORMAT", "xml"),
            ("HERALD_TOPIC_PARTITIONS", "0"),
            ("HERALD_TOPIC_PARTITIONS", "10001"),
            ("HERALD_TOPIC_REPLICATION", "-2"),
            ("HERALD_CREATE_TOPICS", "maybe"),
            ("HERALD_PRODUCE_TIMEOUT_MS", "99"),
            ("HERALD_PRODUCE_TIMEOUT_MS", "300001"),
            ("KAFKA_ENABLE_IDEMPOTENCE", "false"),
            ("KAFKA_ACKS", "1"),
            ("KAFKA_GROUP_ID", "x"),
            ("HERALD_APPS_FILE", "/nonexistent/apps.json"),
            ("HERALD_MAX_BODY_BYTES", "1023"),
        ])
    func refused(variable: String, value: String) {
        var environment = Self.base
        environment[variable] = value
        if variable == "KAFKA_BOOTSTRAP_SERVERS" && value.isEmpty { environment.removeValue(forKey: variable) }
        let error = #expect(throws: ConfigError.self) { try IngestConfig.fromEnvironment(environment) }
        #expect(error?.variable == variable)
        #expect(error?.description.hasPrefix("configuration error: \(variable): ") == true)
    }

    @Test(
        "edges that are accepted",
        arguments: [
            ("HERALD_HTTP_PORT", "0"), ("HERALD_HTTP_PORT", "65535"), ("HERALD_TOPIC_PARTITIONS", "1"),
            ("HERALD_TOPIC_PARTITIONS", "10000"), ("HERALD_PRODUCE_TIMEOUT_MS", "100"),
            ("HERALD_PRODUCE_TIMEOUT_MS", "300000"), ("HERALD_CREATE_TOPICS", "no"), ("HERALD_LOG_LEVEL", "TRACE"),
            ("KAFKA_BOOTSTRAP_SERVERS", "[::1]:9092"),
        ])
    func accepted(variable: String, value: String) throws {
        var environment = Self.base
        environment[variable] = value
        _ = try IngestConfig.fromEnvironment(environment)
    }

    @Test("KAFKA_ variables pass through as librdkafka keys")
    func kafkaOverrides() throws {
        var environment = Self.base
        environment["KAFKA_SECURITY_PROTOCOL"] = "SASL_SSL"
        environment["KAFKA_SASL_MECHANISMS"] = "PLAIN"
        let config = try IngestConfig.fromEnvironment(environment)
        #expect(config.common.kafka.overrides == ["security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"])
    }

    @Test("an operator's KAFKA_ key wins over Herald's default for it (fetch wait, prefetch, linger)")
    func kafkaOverridesWin() throws {
        var environment = Self.base
        environment["KAFKA_FETCH_WAIT_MAX_MS"] = "5"
        environment["KAFKA_QUEUED_MAX_MESSAGES_KBYTES"] = "65536"
        environment["KAFKA_LINGER_MS"] = "1"
        let client = try IngestConfig.fromEnvironment(environment).common.kafka
        let consumer = KafkaConsumerConfiguration(client: client, clientID: "c", groupID: "g", topics: ["t"])
        let producer = KafkaProducerConfiguration(client: client, clientID: "p")
        #expect(consumer.rdKafka["fetch.wait.max.ms"] == "5")
        #expect(consumer.rdKafka["queued.max.messages.kbytes"] == "65536")
        #expect(producer.rdKafka["linger.ms"] == "1")
        let defaults = KafkaConsumerConfiguration(
            client: KafkaClientSettings(bootstrapServers: "127.0.0.1:9092"), clientID: "c", groupID: "g", topics: ["t"])
        #expect(defaults.rdKafka["fetch.wait.max.ms"] == "100")
        #expect(defaults.rdKafka["queued.max.messages.kbytes"] == "16384")
    }

    @Test("unknown HERALD_ variables are reported, others ignored")
    func unknownVariables() throws {
        var orchestrator = Self.base
        orchestrator["HERALD_APPS_FILE"] = nil
        orchestrator["HERALD_ALLOW_SAMPLE_KEYS"] = nil
        orchestrator["HERALD_HTTP_PROT"] = "1"
        orchestrator["HOME"] = "/root"
        #expect(try OrchestratorConfig.fromEnvironment(orchestrator).service.common.unknownVariables == ["HERALD_HTTP_PROT"])
        // A variable of another service is unknown to this one.
        var ingest = Self.base
        ingest["HERALD_HTTP_PROT"] = "1"
        ingest["HERALD_DATA_DIR"] = "/data"
        #expect(try IngestConfig.fromEnvironment(ingest).common.unknownVariables == ["HERALD_DATA_DIR", "HERALD_HTTP_PROT"])
        #expect(
            try OrchestratorConfig.fromEnvironment(Self.base.merging(["HERALD_NOTIFIER_ONLY": "x"]) { $1 }).service.common.unknownVariables
                == ["HERALD_NOTIFIER_ONLY"], "the apps file is the orchestrator's too (its in-app endpoints)")
    }

    @Test("an apps file with a key or secret of config/apps.sample.json is refused unless HERALD_ALLOW_SAMPLE_KEYS says a trial")
    func publishedSampleKeys() throws {
        var production = Self.base
        production["HERALD_ALLOW_SAMPLE_KEYS"] = nil
        let error = #expect(throws: ConfigError.self) { try IngestConfig.fromEnvironment(production) }
        #expect(error?.variable == "HERALD_APPS_FILE")
        #expect(error?.problem.contains("published in config/apps.sample.json (demo rest_api_keys, demo/demo-ios api_key, demo/demo-ios dev_api_key and 10 more)") == true, "\(String(describing: error))")
        production["HERALD_ALLOW_SAMPLE_KEYS"] = "false"
        #expect(throws: ConfigError.self) { try IngestConfig.fromEnvironment(production) }

        // Every key and secret of the sample file is listed as published, so that a new one cannot be forgotten.
        let sample = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: sampleAppsFile)))
        var credentials: [String] = []
        func collect(_ value: Any, field: String) {
            switch value {
            case let object as [String: Any]: for (key, member) in object { collect(member, field: key) }
            case let array as [Any]: for item in array { collect(item, field: field) }
            case let text as String where field.hasSuffix("key") || field.hasSuffix("keys") || field.contains("secret"):
                credentials.append(text)
            default: break
            }
        }
        collect(sample, field: "")
        #expect(credentials.count == 13)
        #expect(Set(credentials) == PublishedSampleKeys.values)

        // One published value among the operator's own is enough, and the line says where it is.
        let own = #"{"projects":[{"id":"shop","rest_api_keys":["shop_rest_0123456789abcdef"],"apps":[{"id":"ios","platform":"ios","api_key":"shop_live_0123456789","dev_api_key":"DEV_shop_0123456789","identity_secrets":["identity_secret_demo_ios"]}]}]}"#
        #expect(PublishedSampleKeys.uses(in: try AppsCatalog.parse(Array(own.utf8))) == ["shop/ios identity_secrets"])
        let clean = own.replacingOccurrences(of: "identity_secret_demo_ios", with: "shop_identity_0123456789")
        #expect(PublishedSampleKeys.uses(in: try AppsCatalog.parse(Array(clean.utf8))).isEmpty)
    }

    @Test(
        "the apps catalog is checked, every error naming the field",
        arguments: [
            (#"{"projects":{}}"#, "projects: expected an array"),
            (#"{"projects":[{"id":"Demo","rest_api_keys":[],"apps":[]}]}"#, "projects[0].id: ids are"),
            (#"{"projects":[{"id":"a/b","rest_api_keys":[],"apps":[]}]}"#, "projects[0].id: ids are"),
            (#"{"projects":[{"id":"d","rest_api_keys":["short"],"apps":[]}]}"#, "projects[0].rest_api_keys[0]: keys are at least 16"),
            (#"{"projects":[{"id":"d","rest_api_keys":["DEV_0123456789abcdef"],"apps":[]}]}"#, "only dev keys start with DEV"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"ios","api_key":"live_0123456789abcdef","dev_api_key":"dev_0123456789abcdef"}]}]}"#, "projects[0].apps[0].dev_api_key: dev keys start with DEV"),
            (#"{"projects":[{"id":"d","rest_api_keys":["key_0123456789abcdef"],"apps":[{"id":"i","platform":"ios","api_key":"key_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef"}]}]}"#, "projects[0].apps[0].api_key: this key is already used"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"tv","api_key":"live_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef"}]}]}"#, "projects[0].apps[0].platform: expected ios"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[]},{"id":"d","rest_api_keys":[],"apps":[]}]}"#, "projects[1].id: project \"d\" is defined twice"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"ios","api_key":"live_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef","require_signed_identity":true}]}]}"#, "projects[0].apps[0].identity_secrets: require_signed_identity needs at least one secret"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"ios","api_key":"live_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef","require_signed_identity":"yes"}]}]}"#, "projects[0].apps[0].require_signed_identity: expected true or false"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"ios","api_key":"live_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef","identity_secrets":["0123456789abcdef","short"]}]}]}"#, "projects[0].apps[0].identity_secrets[1]: secrets are at least 16"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"ios","api_key":"live_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef","identity_secrets":["0123456789abcdef"],"inbox_secret":"short"}]}]}"#, "projects[0].apps[0].inbox_secret: secrets are at least 16"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[],"compatibility":"amplitude"}]}"#, "projects[0].compatibility: expected \"batch\" or \"braze\""),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[],"usd_rates":{"EURO":1}}]}"#, "projects[0].usd_rates.EURO: not an ISO 4217"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[],"usd_rates":{"EUR":0}}]}"#, "projects[0].usd_rates.EUR: expected a positive number"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[],"sources":[{"id":"w","kind":"mixpanel","write_key":"seg_0123456789abcdef"}]}]}"#, "projects[0].sources[0].kind: expected \"segment\""),
            (#"{"projects":[{"id":"d","rest_api_keys":["seg_0123456789abcdef"],"apps":[],"sources":[{"id":"w","kind":"segment","write_key":"seg_0123456789abcdef"}]}]}"#, "projects[0].sources[0].write_key: this key is already used"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"ios","api_key":"live_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef","require_signed_identity":false}],"sources":[{"id":"i","kind":"segment","write_key":"seg_0123456789abcdef"}]}]}"#, "projects[0].sources[0].id: \"i\" already names an app"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[],"sources":[{"id":"w","kind":"segment","write_key":"seg_0123456789abcdef","require_signed_identity":false,"contact_fields":"no"}]}]}"#, "projects[0].sources[0].contact_fields: expected true or false"),
            // Signed identity is the default: an app or a source without secrets says so, or is refused.
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[{"id":"i","platform":"ios","api_key":"live_0123456789abcdef","dev_api_key":"DEV_0123456789abcdef"}]}]}"#, "projects[0].apps[0].identity_secrets: signed identity is the default"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[],"sources":[{"id":"w","kind":"segment","write_key":"seg_0123456789abcdef"}]}]}"#, "projects[0].sources[0].identity_secrets: signed identity is the default"),
            (#"{"projects":[{"id":"d","rest_api_keys":[],"apps":[],"sources":[{"id":"w","kind":"segment","write_key":"seg_0123456789abcdef","identity_secrets":["short"]}]}]}"#, "projects[0].sources[0].identity_secrets[0]: secrets are at least 16"),
            ("{", "not JSON: line 1, column 2"),
        ])
    func catalogErrors(text: String, message: String) {
        let error = #expect(throws: AppsCatalog.FormatError.self) { try AppsCatalog.parse(Array(text.utf8)) }
        #expect(error?.description.contains(message) == true, "\(error?.description ?? "")")
    }

    @Test("the sample catalog's compatibility settings: Braze's rules, USD rates, a Segment source and its write key")
    func compatibilitySettings() throws {
        let catalog = try AppsCatalog.load(path: sampleAppsFile)
        let demo = try #require(catalog.project("demo"))
        #expect(demo.compatibility == .braze && demo.usdRates["EUR"] == 1.08)
        var web = AppsCatalog.Source(id: "demo-web", kind: "segment", writeKey: "segment_demo_0123456789abcdef")
        web.identitySecrets = ["identity_secret_demo_web"]
        var backend = AppsCatalog.Source(id: "demo-backend", kind: "segment", writeKey: "segment_backend_demo_0123456789")
        (backend.requireSignedIdentity, backend.contactFields) = (false, true)
        #expect(demo.sources == [web, backend])
        #expect(web.requireSignedIdentity && !web.contactFields, "the defaults: signed identity, no contact fields")
        #expect(catalog.credential(for: "segment_demo_0123456789abcdef") == .source(project: "demo", source: "demo-web"))
        #expect(demo.apps.allSatisfy { $0.requireSignedIdentity && !$0.identitySecrets.isEmpty })
    }
}
