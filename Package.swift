// swift-tools-version:6.1
import PackageDescription

/// One settings list for every target (house style).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald-ingest", targets: ["Ingest"]),
        .executable(name: "herald-orchestrator", targets: ["Orchestrator"]),
        .executable(name: "herald-notifier", targets: ["Notifier"]),
        .executable(name: "herald-devbroker", targets: ["DevBroker"]),
        .executable(name: "herald", targets: ["Herald"]),
        .executable(name: "herald-simulators", targets: ["Simulators"]),
        .executable(name: "herald-pipe", targets: ["Pipe"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/jpsim/Yams.git", from: "6.2.2"),
        // gzip request bodies (Segment's and RudderStack's libraries compress theirs), on the system's zlib.
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
    ],
    targets: [
        // C libraries from Debian's packages; shims wrap what Swift cannot import (variadic calls).
        .systemLibrary(
            name: "CRdKafka",
            pkgConfig: "rdkafka",
            providers: [.apt(["librdkafka-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // What the services share, by job in its folders: Kafka/ (the only code that touches librdkafka), Messages/ (one
        // type per wire message, JSONValue, WireTime), Config/ (the configuration, with the segment language, templates
        // and wall-clock time), Rules/ (the value rules the ingest and the configuration both check), Logging/. No
        // Hummingbird, GRDB or curl here.
        // Liquid templates: Shopify's language as Ruby Liquid answers it, with Braze's attribute forms. Generic: no Herald
        // type, Foundation only.
        .target(name: "Liquid", swiftSettings: swiftSettings),
        .target(
            name: "Shared",
            dependencies: [
                "CRdKafka", "Liquid",
                // SHA-256 of suppressed addresses (`SuppressionEntry`): the list keeps no address in the clear.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // What every service executable shares: the ops HTTP endpoints (/health, /metrics) and process bootstrap.
        .target(
            name: "ServiceSupport",
            dependencies: [
                "Shared",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Ingest",
            dependencies: [
                "Shared", "ServiceSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The generic partition layer under both stateful services: per-partition SQLite, offsets with the state,
        // record-id dedupe, the outbox and its publisher, and the owner that opens, drains and closes partitions.
        .target(
            name: "PartitionStore",
            dependencies: [
                "Shared",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // What both stateful services build on their partitions with ServiceSupport: the partitions' owners followed,
        // announced and asked (PartitionOwnership).
        .target(
            name: "PartitionService",
            dependencies: [
                "Shared", "ServiceSupport", "PartitionStore",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The orchestrator's domain: profiles, identity, segments, campaigns, on the partition store. A library, so
        // that the `herald` command can read a data directory.
        .target(
            name: "OrchestratorDomain",
            dependencies: [
                "Shared", "PartitionStore", "Liquid",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Orchestrator",
            dependencies: [
                "Shared", "ServiceSupport", "PartitionStore", "PartitionService", "OrchestratorDomain",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // The operator's command line.
        .executableTarget(
            name: "Herald",
            dependencies: [
                "Shared", "PartitionStore", "OrchestratorDomain", "Liquid",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The HTTP/1.1, HTTP/2 and SMTP client on libcurl's multi interface, one thread for every transfer: the notifier's
        // providers, and the pipe's provider calls.
        .target(name: "CurlClient", dependencies: ["CCurl", "Shared"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "Notifier",
            dependencies: [
                "Shared", "ServiceSupport", "CurlClient", "PartitionStore", "PartitionService", "Liquid",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "DevBroker",
            dependencies: [
                "Shared",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Not a service: the whole path's ceiling for scripts/bench/path (docs/performance.md, "The pipe"): the same
        // hops with the same clients and settings, and no domain work and no SQLite.
        .executableTarget(
            name: "Pipe",
            dependencies: [
                "Shared", "ServiceSupport", "CurlClient",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Local stand-ins for APNs, FCM, SMTP and SMS: the tests run them in-process, the dev stack as a process.
        .target(
            name: "ProviderSimulators",
            dependencies: [
                "Shared",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "Simulators",
            dependencies: [
                "ProviderSimulators",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldTestSupport",
            dependencies: ["Shared", .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift")],
            path: "Tests/Support",
            swiftSettings: swiftSettings
        ),
        // golden/: the golden-liquid conformance suite (MIT), the independent judge of the engine.
        .testTarget(name: "LiquidTests", dependencies: ["Liquid", "Shared", "HeraldTestSupport"], exclude: ["golden", "shopify-docs"], swiftSettings: swiftSettings),
        .testTarget(
            name: "SharedTests",
            dependencies: ["Shared", "Liquid", "HeraldTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "IngestTests",
            dependencies: [
                "Ingest", "Shared", "ServiceSupport", "HeraldTestSupport",
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "CompressNIO", package: "compress-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "PartitionStoreTests",
            dependencies: ["PartitionStore", "Shared", "HeraldTestSupport", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "OrchestratorTests",
            dependencies: [
                // Ingest: the tests write profile edits and events as its validation makes them.
                "Orchestrator", "OrchestratorDomain", "Ingest", "PartitionStore", "Shared", "Liquid", "HeraldTestSupport",
                "ServiceSupport", .product(name: "GRDB", package: "GRDB.swift"),
                // The in-app sync benchmark serves the orchestrator's read path (InAppSyncBenchmark); AppReadLimitTests
                // call it over a socket.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "NotifierTests",
            dependencies: [
                "Notifier", "CurlClient", "ProviderSimulators", "PartitionStore", "Shared", "HeraldTestSupport",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            exclude: ["fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                // ServiceSupport: the metric catalog the services' /metrics are checked against.
                "Shared", "ServiceSupport", "HeraldTestSupport", "ProviderSimulators",
                .product(name: "Crypto", package: "swift-crypto"),
                // The Kubernetes manifests, read as data (KubernetesTests).
                .product(name: "Yams", package: "Yams"),
                // A service group around the shutdown watchdog (ShutdownWatchdogTests).
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
