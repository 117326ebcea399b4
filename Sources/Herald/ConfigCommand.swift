import ArgumentParser
import Foundation
import Liquid
import Logging
import Shared

/// `herald config validate DIR` and `herald config apply DIR` (docs/configuration.md).
struct ConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config", abstract: "Check and publish the configuration directory (segments, campaigns, templates).",
        subcommands: [Validate.self, Show.self, Apply.self])

    struct Validate: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every file of DIR (*.yaml, *.yml, *.json); print each problem as file:line: message.",
            discussion: """
                Exit status 0 when the directory is valid, 1 when a problem was found. Warnings (file:line: warning: \
                …) go to standard error and do not change the status.
                """)

        @Argument(help: "The configuration directory.")
        var directory: String

        func run() async throws {
            let config = try ConfigDirectory.load(directory)
            for warning in config.warnings { FileHandle.standardError.write(Data("\(warning)\n".utf8)) }
            print(config.summary)
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate DIR, then print each object as apply would publish it: one JSON line per object, by key.",
            discussion: """
                Shows what the files say once read: YAML 1.2 (`NO`, `on` and `21:00` are text, `true` and `false` \
                booleans). Each line: {"key": …, "file": …, "object": …}.
                """)

        @Argument(help: "The configuration directory.")
        var directory: String

        func run() async throws {
            let loaded = try ConfigDirectory.load(directory)
            for (key, object) in loaded.objects.sorted(by: { $0.key < $1.key }) {
                let line = JSONValue.object([
                    JSONMember("key", .string(key)), JSONMember("file", .string(object.file)), JSONMember("object", object.node.json),
                ])
                print(String(decoding: line.serialized, as: UTF8.self))
            }
        }
    }

    struct Apply: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Validate DIR, then publish what changed to herald.config (compacted); the services follow it live.",
            discussion: """
                Reads herald.config whole, then writes each new or changed object, and a tombstone for each object \
                no longer in DIR (unless --keep-removed). Prints the plan: + added, ~ changed, - removed.
                """)

        @Argument(help: "The configuration directory.")
        var directory: String

        @Option(help: "Kafka bootstrap servers (default: $KAFKA_BOOTSTRAP_SERVERS).")
        var bootstrap: String?

        @Flag(help: "Print the plan without publishing.")
        var dryRun = false

        @Flag(help: "Do not remove objects that are on the topic but not in DIR.")
        var keepRemoved = false

        func run() async throws {
            let loaded = try ConfigDirectory.load(directory)
            guard let servers = bootstrap ?? ProcessInfo.processInfo.environment["KAFKA_BOOTSTRAP_SERVERS"] else {
                throw ValidationError("set --bootstrap or KAFKA_BOOTSTRAP_SERVERS")
            }
            var logger = Logger(label: "herald")
            logger.logLevel = .warning
            let client = try ClusterOptions.client(servers)
            let current = try await ConfigTopic.readAll(client: client, logger: logger)
            // A journey's migration map must move every instance that may wait in the published version.
            var refused: [String] = []
            for (key, object) in loaded.objects.sorted(by: { $0.key < $1.key }) where key.hasPrefix("journey/") {
                guard let existing = current[key], let published = JourneyDefinition.stored(existing.node.json),
                    let journey = JourneyDefinition.stored(object.node.json)
                else { continue }
                refused += journey.migrationProblems(from: published).map { "\(object.file):\(object.node.line): journey \(journey.id): \($0)" }
            }
            guard refused.isEmpty else { throw ValidationError(refused.joined(separator: "\n")) }
            var records: [KafkaOutgoingRecord] = []
            var plan: [String] = []
            let now = Date()
            for (key, object) in loaded.objects.sorted(by: { $0.key < $1.key }) {
                let existing = current[key]
                guard existing?.node.json != object.node.json else { continue }
                plan.append("\(existing == nil ? "+" : "~") \(key) (\(object.file))")
                records.append(
                    KafkaOutgoingRecord(
                        topic: HeraldTopic.config.name, key: Array(key.utf8),
                        value: ConfigRecord(file: object.file, appliedAt: now, object: object.node).value))
            }
            if !keepRemoved {
                for key in current.keys.sorted() where loaded.objects[key] == nil {
                    plan.append("- \(key)")
                    records.append(KafkaOutgoingRecord(topic: HeraldTopic.config.name, key: Array(key.utf8), value: nil))
                }
            }
            print(plan.isEmpty ? "herald.config is up to date (\(loaded.objects.count) objects)" : plan.joined(separator: "\n"))
            guard !dryRun, !records.isEmpty else { return }
            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(client: client, clientID: "herald-config"), logger: logger)
            let runner = Task { try await producer.run() }
            defer { runner.cancel() }
            _ = try await producer.send(records)
            await producer.shutdown()
            print("published \(records.count) record(s) to \(HeraldTopic.config.name)")
        }
    }
}

/// A configuration directory read and checked.
struct ConfigDirectory {
    var objects: [String: (file: String, node: ConfigNode)]
    var configuration: HeraldConfiguration

    var summary: String {
        let c = configuration
        return "valid: \(c.projects.count) project(s), \(c.apps.count) app(s), \(c.segments.count) segment(s), "
            + "\(c.templates.count) template(s), \(c.contentBlocks.count) content block(s), \(c.campaigns.count) campaign(s), "
            + "\(c.inAppMessages.count) in-app message(s), \(c.contentCards.count) content card(s), \(c.geofenceSets.count) geofence set(s), "
            + "\(c.webhookEndpoints.count) webhook endpoint(s), \(c.journeys.count) journey(s)"
    }

    /// What still reads but should be rewritten: Herald's first default syntax (`{{ c.name | "there" }}`), which
    /// Liquid writes `{{ c.name | default: "there" }}`.
    var warnings: [ConfigIssue] {
        var warnings: [ConfigIssue] = []
        let texts = configuration.templates.values.flatMap { template in
            template.texts.map { (template.origin, "template \(template.id) \($0.field)", $0.text) }
        } + configuration.contentBlocks.values.map { ($0.origin, "content_block \($0.id)", $0.content) }
            + configuration.inAppMessages.values.flatMap { message in
                message.texts.map { (message.origin, "in_app_message \(message.id) \($0.field)", $0.text) }
            }
            + configuration.contentCards.values.flatMap { card in
                card.texts.map { (card.origin, "content_card \(card.id) \($0.field)", $0.text) }
            }
        for (origin, name, text) in texts where text.liquid.usesShorthandDefault {
            warnings.append(
                ConfigIssue(
                    file: origin.file, line: origin.line,
                    message: "warning: \(name): `| \"…\"` is Herald's first default syntax; Liquid writes `| default: \"…\"`"))
        }
        return warnings.sorted { ($0.file, $0.line, $0.message) < ($1.file, $1.line, $1.message) }
    }

    /// Reads every *.yaml, *.yml and *.json file under `path` (sorted); prints each problem and exits 1 if any.
    static func load(_ path: String) throws -> ConfigDirectory {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw ValidationError("\(path) is not a directory")
        }
        let files = (FileManager.default.enumerator(atPath: path)?.allObjects as? [String] ?? [])
            .filter { [".yaml", ".yml", ".json"].contains(where: $0.hasSuffix) }.sorted()
        var documents: [(file: String, node: ConfigNode)] = []
        var issues: [ConfigIssue] = []
        for file in files {
            let full = (path as NSString).appendingPathComponent(file)
            guard let data = FileManager.default.contents(atPath: full) else {
                issues.append(ConfigIssue(file: file, line: 0, message: "cannot read the file"))
                continue
            }
            do {
                for node in try YAMLFiles.documents(String(decoding: data, as: UTF8.self)) {
                    if case .array(let items) = node.value {
                        documents += items.map { (file, $0) }
                    } else {
                        documents.append((file, node))
                    }
                }
            } catch {
                let issue = error as? ConfigIssue ?? ConfigIssue(file: file, line: 0, message: "\(error)")
                issues.append(ConfigIssue(file: file, line: issue.line, message: issue.message))
            }
        }
        let (configuration, found) = HeraldConfiguration.read(documents)
        issues += found
        if files.isEmpty { issues.append(ConfigIssue(file: path, line: 0, message: "no *.yaml, *.yml or *.json file")) }
        guard issues.isEmpty else {
            for issue in issues { FileHandle.standardError.write(Data("\(issue)\n".utf8)) }
            FileHandle.standardError.write(Data("herald: \(issues.count) problem(s) in \(path)\n".utf8))
            throw ExitCode(1)
        }
        var objects: [String: (file: String, node: ConfigNode)] = [:]
        for (file, node) in documents {
            guard case .string(let kind)? = node["kind"]?.value, case .string(let id)? = node["id"]?.value else { continue }
            var project: String?
            if case .string(let name)? = node["project"]?.value { project = name }
            objects[HeraldConfiguration.key(kind: kind, project: project, id: id)] = (file, node)
        }
        return ConfigDirectory(objects: objects, configuration: configuration)
    }
}
