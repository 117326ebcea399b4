import Foundation
import GRDB
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

@testable import Notifier
@testable import PartitionStore

/// The suppression list (issue 61, item 4): an address on it is never sent to, transactional or not, whatever its
/// profile says; a hard bounce puts it there; nothing is sent before the list is read.
@Suite("Suppression list", .timeLimit(.minutes(5)))
struct SuppressionTests {
    static func record(_ entry: SuppressionEntry?, key: String? = nil) throws -> KafkaRecord {
        KafkaRecord(
            topic: HeraldTopic.suppressions.name, partition: 0, offset: 0, key: Array((key ?? entry!.key).utf8),
            value: try entry.map { try Wire.encode($0) })
    }

    @Test("an email address and a phone number on the list are suppressed at the attempt (transactional too); off the list, sent")
    func suppressedAtSend() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        // Written as an operator would (case and blanks aside: the list compares normalised addresses).
        let email = SuppressionEntry(project: "demo", channel: .email, address: " Paul@Example.com", reason: "operator", by: "herald", at: Date())
        let phone = SuppressionEntry(project: "demo", channel: .sms, address: "+33612345678", reason: "operator", by: "herald", at: Date())
        harness.partitions.suppressions.apply(try Self.record(email))
        harness.partitions.suppressions.apply(try Self.record(phone))
        try await harness.startWorkers([.email, .sms])
        try await harness.send(sendRequest(id: "e-1", channel: .email, marketing: false, content: ["subject": "S", "text": "T"]))
        try await harness.send(sendRequest(id: "s-1", channel: .sms, content: ["text": "T"]))
        let reports = try await harness.reports { reports in ["e-1", "s-1"].allSatisfy { id in reports.contains { $0.sendID == id } } }
        for id in ["e-1", "s-1"] {
            let report = try #require(reports.first { $0.sendID == id })
            #expect(report.outcome == .suppressed && report.reason == "suppressed_address", "\(report)")
        }
        #expect(harness.simulators.count("smtp") == 0 && harness.simulators.count("sms") == 0)

        // Removed (a tombstone): sent again; another project's list never held it.
        harness.partitions.suppressions.apply(try Self.record(nil, key: email.key))
        try await harness.send(sendRequest(id: "e-2", channel: .email, marketing: false, content: ["subject": "S", "text": "T"]))
        let sent = try await harness.reports { $0.contains { $0.sendID == "e-2" } }
        #expect(sent.first { $0.sendID == "e-2" }?.outcome == .sent)
        #expect(!harness.partitions.suppressions.contains(project: "other", channel: .sms, address: "+33612345678"))
        await harness.shutdown()
    }

    @Test("a hard bounce writes the address to the project's suppression list (herald.suppressions), digested and masked")
    func hardBounce() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        try await harness.startWorkers([.email])
        harness.simulators.markInvalid(["paul@example.com"])
        try await harness.send(sendRequest(id: "b-1", channel: .email, content: ["subject": "S", "text": "T"]))
        _ = try await harness.reports { $0.contains { $0.sendID == "b-1" && $0.outcome == .bounced } }
        let records = try await readTopic(HeraldTopic.suppressions.name, bootstrap: harness.cluster.bootstrapServers, logger: harness.logger) {
            !$0.isEmpty
        }
        let entry = try Wire.decode(SuppressionEntry.self, from: try #require(records.first?.value))
        #expect(entry.project == "demo" && entry.channel == .email && entry.reason == "hard_bounce" && entry.by == "notifier")
        #expect(entry.hint == "p***@example.com" && entry.digest == SuppressionEntry.digest(channel: .email, address: "paul@example.com"))
        #expect(records.first?.keyString == entry.key)
        // Nothing of the address in the clear.
        #expect(!String(decoding: try #require(records.first?.value), as: UTF8.self).contains("paul@"))
        // Read back, it suppresses the address for any profile.
        harness.partitions.suppressions.apply(try #require(records.first))
        #expect(harness.partitions.suppressions.contains(project: "demo", channel: .email, address: "PAUL@example.com"))
        await harness.shutdown()
    }

    @Test("no email or SMS is claimed before the list is read; push is not held back")
    func waitsForTheList() async throws {
        let list = SuppressionList(ready: false)
        let harness = try await NotifierHarness(suppressions: list)
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.email, .push])
        try await harness.send(sendRequest(id: "e-wait", channel: .email, marketing: false, content: ["subject": "S", "text": "T"]))
        try await harness.send(sendRequest(id: "p-go"))
        _ = try await harness.reports { $0.contains { $0.sendID == "p-go" && $0.outcome == .sent } }
        #expect(harness.simulators.count("smtp") == 0, "an email left before the list was read")
        list.markReady()
        let reports = try await harness.reports { $0.contains { $0.sendID == "e-wait" } }
        #expect(reports.first { $0.sendID == "e-wait" }?.outcome == .sent)
        await harness.shutdown()
    }
}

/// An erasure in the notifier's partition (issue 61, item 3): the contact tombstone that names an erasure takes every row
/// of the profile with it (contact, feedback, inbox, installations and badges, sends and ledger) and answers the
/// notifier's part of the receipt.
@Suite("Erasure in the notifier", .timeLimit(.minutes(5)))
struct NotifierErasureTests {
    @Test("the named tombstone leaves nothing of the profile in the partition's database, and the receipt counts what went")
    func erasesEverything() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.startWorkers([.push, .email])
        var badged = sendRequest(id: "p-1")
        badged.content["badge"] = "+1"
        try await harness.send(badged)
        try await harness.send(sendRequest(id: "e-1", channel: .email, content: ["subject": "S", "text": "T"]))
        _ = try await harness.reports { reports in ["p-1", "e-1"].allSatisfy { id in reports.contains { $0.sendID == id && $0.outcome == .sent } } }
        await harness.stopWorkers()
        let database = try #require(await harness.partitions.owner.database(0))
        let before = try await database.read { db in try ProfileRows.count(db, key: "demo/paul") }
        #expect(Set(before.keys).isSuperset(of: ["contacts", "inbox", "inbox_installations", "ledger", "sends"]), "\(before)")

        try await harness.erase(erasure: "erase-7")
        let left = try await database.read { db in
            try ["demo/paul", "paul@example.com", "+33612345678", token64, "i-ios"].flatMap { needle in
                try storeHoldings(db, needle).filter { !$0.hasPrefix("outbox.") }.map { "\(needle): \($0)" }
            }
        }
        #expect(left.isEmpty, "\(left)")
        let records = try await readTopic(HeraldTopic.erasures.name, bootstrap: harness.cluster.bootstrapServers, logger: harness.logger) {
            !$0.isEmpty
        }
        let receipt = try Wire.decode(ErasureReceipt.self, from: try #require(records.first?.value))
        #expect(receipt.erasure == "erase-7" && receipt.service == "notifier" && receipt.profileKey == "demo/paul")
        #expect(receipt.removed == before.merging(["installation_badges": 1]) { $1 }, "\(receipt.removed)")
        #expect(receipt.tombstones[HeraldTopic.stateNotifier.name] == receipt.removed.values.reduce(0, +))
        await harness.shutdown()
    }
}
