import Foundation
import HeraldTestSupport
import Testing

/// The deploy files target a real Apache Kafka and a Docker engine, neither of which runs here: the compose file is
/// validated by docker-compose's own parser (`config`, no engine needed), which scripts/setup.sh installs.
@Suite("Deployment files")
struct DeployTests {
    @Test("deploy/compose.yaml is a valid compose file: Kafka in KRaft mode, the three services with volumes, the config job")
    func composeFile() throws {
        let compose = ["/usr/bin/docker-compose", "/usr/local/bin/docker-compose"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let path = try #require(compose, "docker-compose is not installed (scripts/setup.sh installs it)")
        let file = repositoryFile("deploy/compose.yaml")
        let (status, output) = try runCommand(path, ["-f", file, "config"])
        #expect(status == 0, "\(output)")
        let (_, services) = try runCommand(path, ["-f", file, "config", "--services"])
        #expect(Set(services.split(separator: "\n").map(String.init)) == ["kafka", "ingest", "orchestrator", "notifier", "config"])
        #expect(output.contains("KAFKA_PROCESS_ROLES: broker,controller"))
        #expect(output.contains("KAFKA_BOOTSTRAP_SERVERS: kafka:9092"))
        for target in ["ingest", "orchestrator", "notifier", "cli"] { #expect(output.contains("target: \(target)"), "\(target)") }
        #expect(output.contains("HERALD_DATA_DIR"))
        #expect(output.contains("condition: service_healthy"))
    }
}
