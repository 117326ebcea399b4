import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain
@testable import PartitionStore

/// An erasure in the orchestrator's partition (issue 61, item 3): every row of the profile goes, whatever table holds
/// it; the receipt counts them; the contact tombstone names the erasure; `do_not_contact` suppresses its addresses.
@Suite("Erasure in the orchestrator", .serialized)
struct OrchestratorErasureTests {
    static let objects = [
        demoProject,
        #"{"kind":"segment","id":"buyers","project":"demo","condition":"e.PURCHASED.count >= 1"}"#,
        #"{"kind":"template","id":"t","project":"demo","channel":"email","variants":{"default":{"subject":"Hi","text":"Thanks"}}}"#,
        // A delayed follow-up (a timer), and an immediate one (a frequency log entry and a campaign decision).
        #"{"kind":"campaign","id":"later","project":"demo","trigger":{"event":"PURCHASED"},"delay":"1d","reeligibility":"always","messages":[{"channel":"email","template":"t"}]}"#,
        #"{"kind":"campaign","id":"now","project":"demo","trigger":{"event":"PURCHASED"},"reeligibility":"always","messages":[{"channel":"email","template":"t"}]}"#,
    ]

    @Test("a delete erases every row of the profile (nothing left anywhere, the segment membership included), with the receipt, a named tombstone and, with do_not_contact, its addresses suppressed")
    func erasesEverything() async throws {
        let harness = try await EngagementHarness(try configuration(Self.objects))
        try await harness.apply([
            try harness.writer.update(id: "u", #"{"$email_address":"Paul@Example.com","$phone_number":"+33612345678","$email_marketing":"subscribed","plan":"gold"}"#),
            try harness.writer.event(id: "e", #"{"name":"purchased","attributes":{"price":12}}"#),
        ])
        let before = try await harness.database.read { db in try ProfileRows.count(db, key: "demo/paul") }
        #expect(before["timers"] != nil && before["frequency_log"] != nil && before["segment_members"] != nil, "\(before)")
        harness.outbox = []
        try await harness.apply([harness.writer.record(.profileDelete, id: "erase-1", fields: [JSONMember("do_not_contact", .bool(true))])])

        let left = try await harness.database.read { db in
            (try ProfileRows.count(db, key: "demo/paul"), try storeHoldings(db, "demo/paul"), try storeHoldings(db, "example.com"),
             try storeHoldings(db, "+33612345678"))
        }
        #expect(left.0.isEmpty, "\(left.0)")
        // Nothing of the profile anywhere in the database (the outbox aside: what this write produced).
        for holdings in [left.1, left.2, left.3] { #expect(holdings.allSatisfy { $0.hasPrefix("outbox.") }, "\(holdings)") }

        let tombstone = try #require(harness.outbox.first { $0.topic == HeraldTopic.contacts.name })
        #expect(tombstone.value == nil && tombstone.headers.contains { $0.name == ErasureReceipt.header && $0.value == Array("erase-1".utf8) })
        let receipt = try Wire.decode(ErasureReceipt.self, from: try #require(harness.outbox.first { $0.topic == HeraldTopic.erasures.name }?.value))
        #expect(receipt.erasure == "erase-1" && receipt.service == "orchestrator" && receipt.profileKey == "demo/paul")
        // And the dedupe rows of its three writes (the delete's own included), whose ids name it.
        #expect(receipt.removed == before.merging(["applied_records": 3]) { $1 }, "\(receipt.removed)")
        #expect(receipt.suppressed.sorted() == ["email p***@example.com", "sms +336******78"])
        let suppressions = try harness.outbox.filter { $0.topic == HeraldTopic.suppressions.name }.map { try Wire.decode(SuppressionEntry.self, from: $0.value ?? []) }
        #expect(Set(suppressions.map(\.digest)) == [
            SuppressionEntry.digest(channel: .email, address: "paul@example.com"), SuppressionEntry.digest(channel: .sms, address: "+33612345678"),
        ])
        #expect(suppressions.allSatisfy { $0.reason == "erased" })
    }

    @Test("a delete without do_not_contact suppresses nothing; one of a profile this partition never held still answers its part")
    func plainDelete() async throws {
        let harness = try await EngagementHarness(try configuration(Self.objects))
        try await harness.apply([harness.writer.record(.profileDelete, id: "erase-2", customID: "nobody")])
        #expect(!harness.outbox.contains { $0.topic == HeraldTopic.suppressions.name })
        let receipt = try Wire.decode(ErasureReceipt.self, from: try #require(harness.outbox.first { $0.topic == HeraldTopic.erasures.name }?.value))
        #expect(receipt.removed == ["applied_records": 1] && receipt.profileKey == "demo/nobody", "\(receipt.removed)")
    }
}

/// Who an identifier reaches for an export (issue 61, item 2): every profile, not the first.
@Suite("Export: who an identifier reaches", .serialized)
struct ProfileLookupTests {
    @Test("an email address (in any case) reaches every profile that has it; a phone number and a custom ID theirs; an unknown one nobody")
    func lookups() async throws {
        let harness = try await EngagementHarness(try configuration([demoProject]))
        try await harness.apply([
            try harness.writer.update(id: "p", #"{"$email_address":"Shared@Example.com","$phone_number":"+33612345678"}"#),
            try harness.writer.update(id: "a", #"{"$email_address":"shared@example.com"}"#, customID: "ann"),
        ])
        let found = try await harness.database.read { db in
            (try ProfileLookup.keys(db, project: "demo", .email("SHARED@example.com")),
             try ProfileLookup.keys(db, project: "demo", .phone("+33612345678")),
             try ProfileLookup.keys(db, project: "demo", .customID("ann")),
             try ProfileLookup.keys(db, project: "demo", .customID("nobody")),
             try ProfileLookup.keys(db, project: "other", .email("shared@example.com")))
        }
        #expect(found.0 == ["demo/ann", "demo/paul"] && found.1 == ["demo/paul"] && found.2 == ["demo/ann"])
        #expect(found.3.isEmpty && found.4.isEmpty)
        let rows = try await harness.database.read { db in try ProfileRows.export(db, key: "demo/paul", tokens: false) }
        #expect(rows.first { $0.table == "profiles" }?.row["email"] == .string("Shared@Example.com"))
    }
}
