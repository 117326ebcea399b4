import Foundation
import Logging

/// Settings every service reads: Kafka, logging, the HTTP listener, topics.
package struct CommonConfig: Sendable, Equatable {
    package var kafka: KafkaClientSettings
    package var logLevel: Logger.Level
    package var logFormat: LogFormat
    package var httpHost: String
    package var httpPort: Int
    /// The partition count every keyed topic must have.
    package var topicPartitions: Int32
    /// Replication factor for topics Herald creates; -1 takes the broker's default.
    package var topicReplication: Int32
    /// Whether a service creates missing topics at start (admin API). Either way it checks their partition counts.
    package var createTopics: Bool
    /// Names this instance in client ids and logs.
    package var instanceID: String
    /// `HERALD_` variables nobody reads (likely typos), reported as a warning at start.
    package var unknownVariables: [String]
    /// `HERALD_OPERATOR_TOKEN`: when set, operator endpoints (`/metrics`, the orchestrator's reads) need
    /// `Authorization: Bearer <token>`; unset, they answer loopback peers only, which a service listening beyond
    /// loopback accepts only when told so (`HERALD_OPERATOR_WITHOUT_TOKEN=loopback`): every client of a proxy or
    /// sidecar on the same host is a loopback peer.
    package var operatorToken: String? = nil
    /// `HERALD_HTTP_IDLE_TIMEOUT_SECONDS`: a connection that sends no request for this long is closed (one opened and
    /// left silent included), so that idle clients cannot hold connections without bound.
    package var httpIdleTimeout: Int = 60
    /// `HERALD_SHUTDOWN_TIMEOUT_SECONDS`: how long a graceful stop (SIGTERM) may take before the process ends anyway
    /// (`ShutdownWatchdog`); the notifier's is at least its drain and 10 s more.
    package var shutdownTimeout: Duration = .seconds(60)

    static func read(_ env: inout EnvironmentReader, defaultPort: Int, service: String) throws(ConfigError) -> CommonConfig {
        let bootstrap = try env.required(
            "KAFKA_BOOTSTRAP_SERVERS", hint: "comma-separated host:port list of Kafka brokers, e.g. kafka:9092")
        try validateBootstrap(bootstrap)
        let operatorToken = env.string("HERALD_OPERATOR_TOKEN", default: "")
        if !operatorToken.isEmpty, operatorToken.utf8.count < 16 {
            throw ConfigError("HERALD_OPERATOR_TOKEN", "at least 16 characters")
        }
        var config = CommonConfig(
            kafka: KafkaClientSettings(bootstrapServers: bootstrap, overrides: try kafkaOverrides(env.values)),
            logLevel: try env.oneOf("HERALD_LOG_LEVEL", default: Logger.Level.info),
            logFormat: try env.oneOf("HERALD_LOG_FORMAT", default: LogFormat.json),
            httpHost: env.string("HERALD_HTTP_HOST", default: "127.0.0.1"),
            httpPort: try env.int("HERALD_HTTP_PORT", default: defaultPort, range: 0...65535),
            topicPartitions: Int32(try env.int("HERALD_TOPIC_PARTITIONS", default: 12, range: 1...10_000)),
            topicReplication: Int32(try env.int("HERALD_TOPIC_REPLICATION", default: -1, range: -1...32)),
            createTopics: try env.bool("HERALD_CREATE_TOPICS", default: true),
            instanceID: env.string("HERALD_INSTANCE_ID", default: "\(service)-\(hostName())"),
            unknownVariables: []
        )
        config.operatorToken = operatorToken.isEmpty ? nil : operatorToken
        let withoutToken = env.string("HERALD_OPERATOR_WITHOUT_TOKEN", default: "")
        guard withoutToken.isEmpty || withoutToken == "loopback" else {
            throw ConfigError("HERALD_OPERATOR_WITHOUT_TOKEN", "the only value is \"loopback\", got \"\(withoutToken)\"")
        }
        if config.operatorToken == nil, withoutToken.isEmpty, !isLoopback(host: config.httpHost) {
            throw ConfigError(
                "HERALD_OPERATOR_TOKEN",
                "required when HERALD_HTTP_HOST (\(config.httpHost)) is not a loopback address: without it, /metrics and the operator reads would answer every client of a proxy on this host; set it, or set HERALD_OPERATOR_WITHOUT_TOKEN=loopback to accept that")
        }
        config.httpIdleTimeout = try env.int("HERALD_HTTP_IDLE_TIMEOUT_SECONDS", default: 60, range: 1...3600)
        config.shutdownTimeout = .seconds(try env.int("HERALD_SHUTDOWN_TIMEOUT_SECONDS", default: 60, range: 1...3600))
        return config
    }

    /// `localhost`, `127.0.0.0/8` or `::1`: an address only this machine reaches.
    package static func isLoopback(host: String) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare == "::1" { return true }
        let parts = bare.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { part in UInt8(part) != nil }
    }

    static func validateBootstrap(_ value: String) throws(ConfigError) {
        for server in value.split(separator: ",", omittingEmptySubsequences: false) {
            let entry = server.trimmingCharacters(in: .whitespaces)
            guard let colon = entry.lastIndex(of: ":"), colon != entry.startIndex,
                let port = Int(entry[entry.index(after: colon)...]), (1...65535).contains(port)
            else {
                throw ConfigError("KAFKA_BOOTSTRAP_SERVERS", "expected host:port[,host:port…], got \"\(value)\"")
            }
        }
    }

    /// `KAFKA_SECURITY_PROTOCOL=SASL_SSL` → `security.protocol=SASL_SSL`: any librdkafka key, except those Herald's
    /// guarantees depend on. librdkafka itself refuses unknown keys when the client starts.
    package static func kafkaOverrides(_ values: [String: String]) throws(ConfigError) -> [String: String] {
        var overrides: [String: String] = [:]
        for (name, value) in values where name.hasPrefix("KAFKA_") && name != "KAFKA_BOOTSTRAP_SERVERS" {
            let key = name.dropFirst("KAFKA_".count).lowercased().replacingOccurrences(of: "_", with: ".")
            guard !key.isEmpty else { continue }
            if KafkaClientSettings.reservedKeys.contains(key) {
                throw ConfigError(name, "\(key) is set by Herald and cannot be overridden")
            }
            overrides[key] = value
        }
        return overrides
    }

    private static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "local" }
        return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }
}

/// The ingest service's configuration.
package struct IngestConfig: Sendable, Equatable {
    package var common: CommonConfig
    /// How long a write may wait for the broker's acknowledgement before the API answers 503.
    package var produceTimeout: Duration
    /// Projects, apps and keys.
    package var catalog: AppsCatalog
    /// Larger request bodies get 413.
    package var maxBodyBytes: Int
    /// Requests handled at once; more get 503 with `Retry-After` (memory stays bounded: each may hold a body while
    /// it waits for the broker).
    package var maxInFlight: Int = 256
    /// The bytes of request bodies handled at once (each request reserves its `Content-Length`, or the body limit);
    /// more get 503 with `Retry-After`: a parsed body costs several times its bytes.
    package var maxInFlightBytes: Int = 32 << 20
    /// How fast one client may write (`ClientLimits`).
    package var limits = ClientLimits()
    /// How long a request's body may take to arrive whole; a slower one gets 408 (a client trickling its body would
    /// otherwise hold a request slot, and its memory, for as long as it likes).
    package var bodyTimeout: Duration = .seconds(30)

    package static func fromEnvironment(_ values: [String: String]) throws(ConfigError) -> IngestConfig {
        var env = EnvironmentReader(values)
        var common = try CommonConfig.read(&env, defaultPort: 8080, service: "ingest")
        let timeout = try env.int("HERALD_PRODUCE_TIMEOUT_MS", default: 10_000, range: 100...300_000)
        let catalog = try AppsCatalog.read(&env, hint: "JSON file of projects, apps and keys, see config/apps.sample.json")
        let maxBody = try env.int("HERALD_MAX_BODY_BYTES", default: 2 << 20, range: 1024...(64 << 20))
        let maxInFlight = try env.int("HERALD_MAX_IN_FLIGHT_REQUESTS", default: 256, range: 1...100_000)
        let maxInFlightBytes = try env.int("HERALD_MAX_IN_FLIGHT_BYTES", default: 32 << 20, range: maxBody...(64 << 30))
        let limits = try ClientLimits.read(&env)
        let bodyTimeout = try env.int("HERALD_HTTP_BODY_TIMEOUT_SECONDS", default: 30, range: 1...3600)
        common.unknownVariables = env.unknownHeraldVariables
        var config = IngestConfig(
            common: common, produceTimeout: .milliseconds(timeout), catalog: catalog,
            maxBodyBytes: maxBody)
        config.maxInFlight = maxInFlight
        config.maxInFlightBytes = maxInFlightBytes
        config.limits = limits
        config.bodyTimeout = .seconds(bodyTimeout)
        return config
    }
}

/// How fast one client may call a service's public endpoints (the ingest's writes, the orchestrator's app reads), in
/// requests a second, each with bursts of twice as many (0: no limit).
package struct ClientLimits: Sendable, Equatable {
    /// `HERALD_RATE_LIMIT_PER_ADDRESS`: per client address (an IPv6 one by its /64), for keys that ship in apps and web
    /// pages, and requests without a valid key.
    package var perAddress: Double = 50
    /// `HERALD_RATE_LIMIT_PER_KEY`: per key that stays on servers (a REST key, a backend's Segment source). An app key
    /// is not limited as a whole: one sender could spend it for every device of the app.
    package var perKey: Double = 5_000
    /// `HERALD_RATE_LIMIT_PER_INSTALLATION`: per installation a request names.
    package var perInstallation: Double = 10
    /// `HERALD_TRUSTED_PROXIES`: the proxies (addresses or CIDR ranges) whose `X-Forwarded-For` names the client.
    package var trustedProxies: [AddressRange] = []

    package init() {}

    package static func read(_ env: inout EnvironmentReader) throws(ConfigError) -> ClientLimits {
        var limits = ClientLimits()
        limits.perAddress = Double(try env.int("HERALD_RATE_LIMIT_PER_ADDRESS", default: 50, range: 0...10_000_000))
        limits.perKey = Double(try env.int("HERALD_RATE_LIMIT_PER_KEY", default: 5_000, range: 0...10_000_000))
        limits.perInstallation = Double(try env.int("HERALD_RATE_LIMIT_PER_INSTALLATION", default: 10, range: 0...10_000_000))
        limits.trustedProxies = try env.trustedProxies()
        return limits
    }
}

/// Settings of the stateful services (orchestrator, notifier), which own partitions and keep SQLite per partition.
package struct StatefulServiceConfig: Sendable, Equatable {
    package var common: CommonConfig
    /// Where the per-partition databases live.
    package var dataDirectory: String
    package var consumerGroup: String
    package var sessionTimeout: Duration
    /// How long a record id is remembered for dedupe (orchestrator).
    package var dedupeRetention: Duration
    /// `HERALD_SQLITE_MEMORY_MIB`: the memory SQLite may take for all the partitions of the process (page caches,
    /// statements); past it, each connection reuses its cache's pages instead of growing (SQLite's soft heap limit).
    package var sqliteMemoryMiB: Int = 64
    /// `HERALD_ADVERTISED_URL`: where the other instances of the service reach this one's HTTP port, for reads it owns
    /// (`http://10.0.0.7:8081`); unset, `http://<HERALD_HTTP_HOST or the host name>:<the port it listens on>`.
    package var advertisedURL: String?

    static func read(_ values: [String: String], service: String, defaultPort: Int) throws(ConfigError)
        -> StatefulServiceConfig
    {
        var env = EnvironmentReader(values)
        var config = try read(&env, service: service, defaultPort: defaultPort)
        config.common.unknownVariables = env.unknownHeraldVariables
        return config
    }

    /// Reads the shared settings from `env`, for a service that reads more variables after them (and then reports the
    /// unknown ones itself).
    package static func read(_ env: inout EnvironmentReader, service: String, defaultPort: Int) throws(ConfigError)
        -> StatefulServiceConfig
    {
        var config = StatefulServiceConfig(
            common: try CommonConfig.read(&env, defaultPort: defaultPort, service: service),
            dataDirectory: env.string("HERALD_DATA_DIR", default: "data/\(service)"),
            consumerGroup: env.string("HERALD_CONSUMER_GROUP", default: "herald-\(service)"),
            sessionTimeout: .milliseconds(try env.int("HERALD_SESSION_TIMEOUT_MS", default: 10_000, range: 1000...300_000)),
            dedupeRetention: .seconds(86_400 * (try env.int("HERALD_DEDUPE_RETENTION_DAYS", default: 30, range: 1...3650)))
        )
        config.sqliteMemoryMiB = try env.int("HERALD_SQLITE_MEMORY_MIB", default: 64, range: 8...65_536)
        let advertised = env.string("HERALD_ADVERTISED_URL", default: "")
        if !advertised.isEmpty {
            let lower = advertised.lowercased()
            guard lower.hasPrefix("http://") || lower.hasPrefix("https://"), let url = URL(string: advertised), url.host != nil,
                url.path.isEmpty || url.path == "/", url.query == nil
            else {
                throw ConfigError("HERALD_ADVERTISED_URL", "expected http(s)://host:port, got \"\(advertised)\"")
            }
            config.advertisedURL = advertised.hasSuffix("/") ? String(advertised.dropLast()) : advertised
        }
        return config
    }
}

/// The orchestrator's settings: the stateful service's, and the apps file when the in-app endpoints are to answer
/// (`HERALD_APPS_FILE`: the apps' keys and identity secrets; without it they answer 503).
package struct OrchestratorConfig: Sendable {
    package var service: StatefulServiceConfig
    package var catalog: AppsCatalog?
    /// `HERALD_IN_APP_CACHED_TAGS`: how many in-app sync tags the instance keeps, so that a revalidation whose tag is
    /// current is answered without reading the database (0: none kept); about 250 bytes each.
    package var inAppCachedTags = OrchestratorConfig.defaultInAppCachedTags
    package static let defaultInAppCachedTags = 100_000
    /// How fast one client may call the apps' reads (per address and per installation; no key is limited as a whole).
    package var limits = ClientLimits()
    /// `HERALD_MAX_IN_FLIGHT_REQUESTS`: the apps' reads answered at once; more get 503 `overloaded` (they share the
    /// CPU and SQLite's readers with the apply loop).
    package var maxInFlight = 256

    package static func fromEnvironment(_ values: [String: String]) throws(ConfigError) -> OrchestratorConfig {
        var env = EnvironmentReader(values)
        var service = try StatefulServiceConfig.read(&env, service: "orchestrator", defaultPort: 8081)
        var catalog: AppsCatalog?
        if values["HERALD_APPS_FILE"].map({ !$0.trimmingCharacters(in: .whitespaces).isEmpty }) == true {
            catalog = try AppsCatalog.read(&env, hint: "JSON file of projects and apps, see config/apps.sample.json")
        } else {
            _ = try env.bool("HERALD_ALLOW_SAMPLE_KEYS", default: false)
        }
        let cachedTags = try env.int("HERALD_IN_APP_CACHED_TAGS", default: defaultInAppCachedTags, range: 0...100_000_000)
        let limits = try ClientLimits.read(&env)
        let maxInFlight = try env.int("HERALD_MAX_IN_FLIGHT_REQUESTS", default: 256, range: 1...100_000)
        service.common.unknownVariables = env.unknownHeraldVariables
        return OrchestratorConfig(service: service, catalog: catalog, inAppCachedTags: cachedTags, limits: limits, maxInFlight: maxInFlight)
    }
}
