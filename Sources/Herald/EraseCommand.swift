import ArgumentParser
import Foundation
import Shared

/// `herald profile erase PROJECT CUSTOM_ID`: erases a person from every store of the services and prints the receipt
/// (docs/data-rights.md, "Erase").
struct EraseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "erase",
        abstract: "Erase a profile from every store of the services, and print the receipt.",
        discussion: """
            Writes the profile's delete to herald.ingest (as DELETE /v1/profiles/{custom_id} does), then waits on \
            herald.erasures for both services' parts of the receipt: the orchestrator's (its partition's rows, per \
            table, and the tombstones on herald.contacts and its changelog) and the notifier's (its contact, inbox, \
            sends, ledger rows, feedback and badges, and its changelog's tombstones). Prints the receipt as JSON; exit \
            status 1 when a part did not come within --timeout (a service not running: the erasure is applied when it \
            reads the delete). --do-not-contact also puts the profile's email address and phone number on the \
            project's suppression list.
            """)

    @OptionGroup var cluster: ClusterOptions
    @OptionGroup var person: PersonArguments

    @Flag(help: "Put the profile's email address and phone number on the suppression list.")
    var doNotContact = false

    @Option(help: "Seconds to wait for the receipt.")
    var timeout = 60

    var project: String { person.project }
    var customID: String { person.customID }

    func run() async throws {
        let client = try cluster.client()
        let id = "erase-" + UUID().uuidString.lowercased()
        let record = IngestRecord(
            .profileDelete(doNotContact: doNotContact), id: id, project: project, source: .server, customID: customID,
            installationID: nil, receivedAt: Date())
        // Read from the beginning in a group of its own: a part written before this reader joined is not missed.
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: client, clientID: "herald-cli", groupID: "herald-erase-\(UUID().uuidString)", topics: [HeraldTopic.erasures.name]),
            logger: ClusterOptions.logger)
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: client, clientID: "herald-cli"), logger: ClusterOptions.logger)
        do {
            _ = try await producer.send([
                KafkaOutgoingRecord(topic: HeraldTopic.ingest.name, key: Array(record.key.utf8), value: record.value, headers: record.headers(requestID: id))
            ])
        } catch {
            await producer.shutdown()
            throw fail("the broker did not take the delete: \(error)")
        }
        await producer.shutdown()
        var parts: [String: ErasureReceipt] = [:]
        let deadline = ContinuousClock.now + .seconds(timeout)
        let waiting = Task {
            try? await Task.sleep(until: deadline)
            consumer.stop()
        }
        do {
            loop: for try await batch in consumer.batches() {
                for record in batch.records {
                    guard let value = record.value, let part = try? Wire.decode(ErasureReceipt.self, from: value), part.erasure == id else { continue }
                    parts[part.service] = part
                    if parts.count == 2 { break loop }
                }
            }
        } catch {}
        waiting.cancel()
        consumer.stop()
        await consumer.close()
        let receipt = JSONValue.object([
            JSONMember("erasure", .string(id)), JSONMember("profile_key", .string(record.key)),
            JSONMember("parts", .array(try parts.values.sorted { $0.service < $1.service }.map { try JSONParser.parse(try Wire.encode($0)) })),
        ])
        print(String(decoding: receipt.serialized, as: UTF8.self))
        let missing = ["orchestrator", "notifier"].filter { parts[$0] == nil }
        if !missing.isEmpty {
            throw fail("no receipt from the \(missing.joined(separator: " and ")) within \(timeout) s: the delete is applied when it reads it (is it running?)")
        }
    }
}

/// A person, as `herald profile erase` names them: a project and a custom ID (checked as the ingest checks it).
struct PersonArguments: ParsableArguments {
    @Argument(help: "The project id.")
    var project: String

    @Argument(help: "The custom user ID.")
    var customID: String

    func validate() throws {
        do {
            _ = try Rules.customID(customID)
        } catch {
            throw ValidationError("\(customID): \(error.message)")
        }
    }
}
