import Foundation
import HeraldTestSupport
import Testing
import Yams

/// The deploy files target a real Apache Kafka and a Docker engine, neither of which runs here: the compose file is
/// validated by docker-compose's own parser (`config`, no engine needed), which scripts/setup.sh installs.
@Suite("Deployment files")
struct DeployTests {
    @Test("deploy/compose.yaml is a valid compose file: Kafka in KRaft mode, the three services with volumes, the config job")
    func composeFile() async throws {
        let path = try dockerCompose()
        let file = repositoryFile("deploy/compose.yaml")
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_APPS_FILE"] = "/srv/herald/apps.json"
        environment["HERALD_OPERATOR_TOKEN"] = "operator-token-0123456789"
        let (status, output) = try await runCommand(path, ["-f", file, "config"], environment: environment)
        #expect(status == 0, "\(output)")
        let (_, services) = try await runCommand(path, ["-f", file, "config", "--services"], environment: environment)
        #expect(Set(services.split(separator: "\n").map(String.init)) == ["kafka", "ingest", "orchestrator", "notifier", "config"])
        #expect(output.contains("KAFKA_PROCESS_ROLES: broker,controller"))
        #expect(output.contains("KAFKA_BOOTSTRAP_SERVERS: kafka:9092"))
        for target in ["ingest", "orchestrator", "notifier", "cli"] { #expect(output.contains("target: \(target)"), "\(target)") }
        #expect(output.contains("HERALD_DATA_DIR"))
        #expect(output.contains("condition: service_healthy"))
        #expect(output.contains("/srv/herald/apps.json:/etc/herald/apps.json:ro"))
    }

    @Test(
        "deploy/compose.yaml refuses to start without an apps file of one's own (the sample's keys are public) or an operator token",
        arguments: ["HERALD_APPS_FILE", "HERALD_OPERATOR_TOKEN"])
    func composeRequires(variable: String) async throws {
        let path = try dockerCompose()
        var environment = ProcessInfo.processInfo.environment
        environment["HERALD_APPS_FILE"] = "/srv/herald/apps.json"
        environment["HERALD_OPERATOR_TOKEN"] = "operator-token-0123456789"
        environment[variable] = nil
        let (status, output) = try await runCommand(path, ["-f", repositoryFile("deploy/compose.yaml"), "config"], environment: environment)
        #expect(status != 0)
        #expect(output.contains("set \(variable)"), "\(output)")
        #expect(!output.contains("apps.sample.json"))
    }

    /// Seconds of a compose duration (`70s`, `1m10s`, `1m`).
    static func seconds(_ text: String) -> Int? {
        var total = 0
        var number = ""
        for character in text {
            if character.isNumber {
                number.append(character)
            } else {
                guard let value = Int(number), let unit = ["h": 3600, "m": 60, "s": 1][String(character)] else { return nil }
                total += value * unit
                number = ""
            }
        }
        return number.isEmpty ? total : nil
    }

    /// Both compose files as docker-compose resolves them: each Herald service's stop grace period outlasts what a stop
    /// may take (`HERALD_SHUTDOWN_TIMEOUT_SECONDS`, 60 s by default: the notifier's drain and leaving the group;
    /// Docker's default of 10 s once killed a draining notifier, whose emails in flight were then sent again), and the
    /// ports published are the public ones: the ingest's API, the orchestrator's app syncs, the notifier's endpoints.
    @Test("compose: every Herald service has longer than its stop to stop, and only the public ports are published", arguments: ["deploy/compose.yaml", "deploy/compose.cluster.yaml"])
    func composeStopsAndPorts(file: String) async throws {
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in [
            "HERALD_APPS_FILE": "/srv/herald/apps.json", "HERALD_OPERATOR_TOKEN": "operator-token-0123456789",
            "KAFKA_KEYSTORE_PASSWORD": "keystore-secret-1", "HERALD_KAFKA_PASSWORD": "herald-kafka-secret",
        ] { environment[name] = value }
        let (status, output) = try await runCommand(try dockerCompose(), ["-f", repositoryFile(file), "config"], environment: environment)
        try #require(status == 0, "\(output)")
        let services = try #require((try Yams.load(yaml: output) as? [String: Any])?["services"] as? [String: Any])
        let published = ["ingest": 8080, "orchestrator": 8081, "notifier": 8082]
        for (name, port) in published {
            let service = try #require(services[name] as? [String: Any], "\(name)")
            let environment = service["environment"] as? [String: Any] ?? [:]
            let shutdown = (environment["HERALD_SHUTDOWN_TIMEOUT_SECONDS"] as? String).flatMap(Int.init) ?? 60
            let grace = (service["stop_grace_period"] as? String).flatMap(Self.seconds)
            #expect((grace ?? 0) > shutdown, "\(file) \(name): stop_grace_period \(grace.map { "\($0) s" } ?? "unset (10 s)"), a stop may take \(shutdown) s")
            let ports = (service["ports"] as? [[String: Any]] ?? []).compactMap { $0["published"] as? Int }
            #expect(ports == [port], "\(file) \(name): \(ports)")
        }
    }

    /// The Dockerfile, read as text: no engine here to build it, so its references are checked against the repository
    /// and the built executables.
    struct Dockerfile {
        var lines: [String]

        init() throws {
            lines = try String(contentsOfFile: repositoryFile("deploy/Dockerfile"), encoding: .utf8)
                .split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
        }

        /// `FROM image AS name` → name.
        var stages: [String] {
            lines.filter { $0.hasPrefix("FROM ") }.compactMap { line in
                let words = line.split(separator: " ")
                return words.count == 4 && words[2].uppercased() == "AS" ? String(words[3]) : nil
            }
        }

        /// The stage each ENTRYPOINT belongs to, and its executable.
        var entrypoints: [String: String] {
            var stage = ""
            var result: [String: String] = [:]
            for line in lines {
                if line.hasPrefix("FROM ") { stage = String(line.split(separator: " ").last ?? "") }
                if line.hasPrefix("ENTRYPOINT "), let start = line.firstIndex(of: "\""),
                    let end = line[line.index(after: start)...].firstIndex(of: "\"")
                {
                    result[stage] = String(line[line.index(after: start)..<end])
                }
            }
            return result
        }

        /// The packages the runtime stage installs with apt-get.
        /// The runtime stage's base image (`FROM <image> AS runtime`).
        var runtimeBase: String? {
            lines.first { $0.hasPrefix("FROM ") && $0.hasSuffix(" AS runtime") }?.split(separator: " ").dropFirst().first.map(String.init)
        }

        var runtimePackages: Set<String> {
            guard let start = lines.firstIndex(where: { $0.hasPrefix("FROM ") && $0.hasSuffix(" AS runtime") }) else { return [] }
            let stage = lines[start...].prefix { !$0.hasPrefix("FROM ") || $0 == lines[start] }
            let install = stage.first { $0.contains("apt-get install") } ?? ""
            return Set(install.split(separator: " ").map(String.init).filter { !$0.hasPrefix("-") && !["&&", "\\", "apt-get", "install"].contains($0) })
        }
    }

    @Test("deploy/Dockerfile: each compose target is a stage, each ENTRYPOINT a product, each COPY source exists")
    func dockerfileReferences() throws {
        let dockerfile = try Dockerfile()
        let stages = Set(dockerfile.stages)
        let compose = try String(contentsOfFile: repositoryFile("deploy/compose.yaml"), encoding: .utf8)
        let targets = compose.split(separator: "\n").compactMap { line -> String? in
            guard let range = line.range(of: "target: ") else { return nil }
            return String(line[range.upperBound...].prefix { $0 != " " && $0 != "}" && $0 != "," })
        }
        #expect(Set(targets) == ["ingest", "orchestrator", "notifier", "cli"], "\(targets)")
        for target in targets { #expect(stages.contains(target), "compose target \(target) is not a stage of \(stages)") }

        let package = try String(contentsOfFile: repositoryFile("Package.swift"), encoding: .utf8)
        #expect(dockerfile.entrypoints.count == 5, "\(dockerfile.entrypoints)")
        for (stage, path) in dockerfile.entrypoints {
            let name = URL(fileURLWithPath: path).lastPathComponent
            #expect(path == "/usr/local/bin/\(name)" && package.contains(#".executable(name: "\#(name)""#), "\(stage): \(path)")
        }
        for line in dockerfile.lines where line.hasPrefix("COPY ") && !line.contains("--from") {
            let sources = line.split(separator: " ").dropFirst().dropLast()
            for source in sources {
                #expect(FileManager.default.fileExists(atPath: repositoryFile(String(source))), "COPY \(source)")
            }
        }
    }

    @Test("the runtime image installs the Debian package of every shared library the executables need")
    func runtimeLibraries() async throws {
        let dockerfile = try Dockerfile()
        // Ubuntu 24.04 renamed the libraries whose ABI has a 64-bit time_t (libcurl4 is libcurl4t64 there): this
        // machine's Debian names the package without the suffix.
        let installed = Set(dockerfile.runtimePackages.map { $0.hasSuffix("t64") ? String($0.dropLast(3)) : $0 })
        #expect(installed.isSuperset(of: ["librdkafka1", "libsqlite3-0", "libcurl4", "ca-certificates"]), "\(installed)")
        // In the base image already (apt needs them; zlib1g is a required package).
        let base: Set<String> = ["libc6", "libgcc-s1", "libstdc++6", "zlib1g"]
        for executable in Set(dockerfile.entrypoints.values.map { URL(fileURLWithPath: $0).lastPathComponent }) {
            let (status, dynamic) = try await runCommand("/usr/bin/readelf", ["-d", binDirectory.appendingPathComponent(executable).path])
            #expect(status == 0, "\(dynamic)")
            let needed = dynamic.split(separator: "\n").compactMap { line -> String? in
                guard line.contains("(NEEDED)"), let open = line.lastIndex(of: "["), let close = line.lastIndex(of: "]") else { return nil }
                return String(line[line.index(after: open)..<close])
            }
            #expect(needed.contains("librdkafka.so.1"), "\(executable): \(needed)")
            // The Swift runtime and Foundation are linked in by --static-swift-stdlib in the image's release build.
            for library in needed
            where !library.hasPrefix("libswift") && !library.hasPrefix("libFoundation") && !["libdispatch.so", "libBlocksRuntime.so"].contains(library) {
                let (found, owner) = try await runCommand("/usr/bin/dpkg", ["-S", "*/\(library)"])
                #expect(found == 0, "\(executable): no Debian package has \(library): \(owner)")
                let packages = Set(owner.split(separator: "\n").compactMap { $0.split(separator: ":").first.map(String.init) })
                #expect(!packages.isDisjoint(with: installed.union(base)), "\(executable): \(library) comes from \(packages), not installed by the runtime image")
            }
        }
    }

    /// librdkafka before 2.3.0 aborts a process whose consumer is destroyed before its first assignment
    /// (confluentinc/librdkafka#4312); the services work around it (`KafkaCloseTests`), the images avoid it.
    @Test("the runtime image's base ships a librdkafka with the fix of #4312 (2.3.0 or later)")
    func runtimeLibrdkafka() throws {
        // What each base's package archive holds (packages.ubuntu.com, packages.debian.org).
        let librdkafka: [String: (Int, Int, Int)] = ["ubuntu:24.04": (2, 3, 0), "debian:bookworm-slim": (2, 0, 2), "debian:trixie-slim": (2, 8, 0)]
        let base = try #require(try Dockerfile().runtimeBase)
        let version = try #require(librdkafka[base], "\(base): which librdkafka does it ship? Add it here")
        #expect(version >= (2, 3, 0), "\(base) ships librdkafka \(version)")
    }
}
