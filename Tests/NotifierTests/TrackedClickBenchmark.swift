import Foundation
import HeraldTestSupport
import Hummingbird
import Logging
import ServiceSupport
import Shared
import Testing

@testable import Notifier

/// Not a test: the server of scripts/bench/tracking (runs only with HERALD_BENCH_TRACKING_DIR, in release). The
/// notifier's tracking endpoints as production wires them (`TrackingEndpoints`: the token opened, the request
/// classified, the `clicked` report produced to the embedded broker and acknowledged before the redirect), next to
/// `/static`, a constant 200 of the same server (the ceiling). It writes the port and a tracked link's path to that
/// directory once listening, and stops when a file `stop` appears there, printing how many reports the broker took.
@Suite("Tracked click benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH_TRACKING_DIR"] != nil), .serialized)
struct TrackedClickBenchmark {
    @Test("serve tracked clicks and a static 200 until told to stop")
    func serve() async throws {
        let directory = try #require(ProcessInfo.processInfo.environment["HERALD_BENCH_TRACKING_DIR"])
        let logger = Logger(label: "bench", factory: { _ in SwiftLogNoOpLogHandler() })
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: logger)
        try cluster.createTopics(HeraldTopic.specs(partitions: 4))
        let client = KafkaClientSettings(bootstrapServers: cluster.bootstrapServers)
        let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(client: client, clientID: "bench"), logger: logger)
        let links = TrackingLinks(secret: "0123456789abcdef-bench", publicURL: "http://127.0.0.1")
        let claim = TrackingLinks.Claim(
            sendID: "0123456789abcdef0123456789abcdef", targetID: "reader@example.com", profileKey: "demo/reader", campaign: "news",
            experiment: "v0123456789abcdef", variant: "a", sentAt: Int64(Date().timeIntervalSince1970) - 3600)
        let path = String(links.clickURL(claim, link: 0, url: "https://shop.example.com/sale?utm_source=email").dropFirst("http://127.0.0.1".count))
        try path.write(toFile: "\(directory)/path", atomically: true, encoding: .utf8)

        let router = Router(context: ServiceRequestContext.self)
        router.get("static") { _, _ in "ok" }
        let endpoints = TrackingEndpoints(links: links, producer: producer, clients: ClientAddress(trustedProxies: []), logger: logger)
        endpoints.register(on: router)
        let app = Application(
            router: router,
            configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "herald-bench"),
            onServerRunning: { channel in
                try? "\(channel.localAddress?.port ?? 0)".write(toFile: "\(directory)/port", atomically: true, encoding: .utf8)
            },
            logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService() }
            while !FileManager.default.fileExists(atPath: "\(directory)/stop") {
                try await Task.sleep(for: .milliseconds(100))
            }
            group.cancelAll()
        }
        // Every click's report, acknowledged: the partitions' ends once none is waiting for the broker.
        while endpoints.unacknowledged.current > 0 { try await Task.sleep(for: .milliseconds(50)) }
        let reader = try KafkaPartitionReader(client: client, clientID: "bench-reader", groupID: "bench-reader", logger: logger)
        var written: Int64 = 0
        for partition in 0..<4 { written += try await reader.watermarks(TopicPartition(HeraldTopic.deliveries.name, Int32(partition))).high }
        print("figure-line reports_written=\(written)")
        await reader.shutdown()
        await producer.shutdown()
        await cluster.shutdown()
    }
}
