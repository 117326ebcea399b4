import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared
import Testing

@testable import Notifier

/// The suppression list (issue 61, item 4): an address on it is never sent to, transactional or not, whatever its
/// profile says; a hard bounce puts it there; nothing is sent before the list is read.
@Suite("Suppression list", .timeLimit(.minutes(3)))
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
