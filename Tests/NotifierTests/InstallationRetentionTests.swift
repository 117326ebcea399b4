import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import Notifier
@testable import PartitionStore

/// `feedback` and `installation_badges` were never pruned: a user looping new installations and tokens on one profile
/// left a row for each, forever. They now follow the contact snapshots (docs/retention.md).
@Suite("Retention: feedback and badge counts go with their installation")
struct InstallationRetentionTests {
    @Test("an installation that leaves its profile takes its badge (not when it moved to a profile here); moot feedback goes; a deleted profile's all")
    func pruned() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("herald-feedback-\(UUID().uuidString)").path
        let database = try PartitionDatabase.open(directory: directory, partition: 0, migrator: NotifierSchema.migrator)
        defer { try? database.close() }
        let now = Date(timeIntervalSince1970: 1_795_000_000)
        var offset: Int64 = 0
        func contact(_ key: String, _ json: String?) async throws {
            defer { offset += 1 }
            let record = KafkaRecord(
                topic: HeraldTopic.contacts.name, partition: 0, offset: offset, key: Array(key.utf8), value: json.map { Array($0.utf8) })
            _ = try await database.applyBatch([record]) { db, record in try NotifierApplier.apply(db, record: record, now: now) }
        }
        func anonymous(_ installation: String) throws -> String {
            let snapshot = ContactSnapshot(
                project: "demo", customID: nil, email: .init(address: nil, marketing: nil, marketingChangedAt: nil),
                sms: .init(phoneNumber: nil, marketing: nil, marketingChangedAt: nil),
                installations: [try JSONDecoder().decode(ContactSnapshot.Installation.self, from: Data(installationJSON(installation).utf8))],
                updatedAt: now, revision: 0)
            return String(decoding: try Wire.encode(snapshot), as: UTF8.self)
        }
        func badges() async throws -> [String: Int] {
            try await database.read { db in
                try Dictionary(uniqueKeysWithValues: Row.fetchAll(db, sql: "SELECT installation_id, count FROM installation_badges").map {
                    (String($0["installation_id"] as String), Int($0["count"] as Int))
                })
            }
        }
        func feedback() async throws -> [String] {
            try await database.read { db in
                try Row.fetchAll(db, sql: "SELECT kind, value FROM feedback WHERE profile_key = 'demo/paul' ORDER BY kind, value")
                    .map { "\($0["kind"] as String) \($0["value"] as String)" }
            }
        }

        try await contact("demo/paul", contactJSON(installations: [installationJSON("i-1", token: "token-a"), installationJSON("i-2", token: "token-b")]))
        try await database.write { db in
            try InstallationBadgesTable(db).set(project: "demo", installationID: "i-1", count: 3, at: Date())
            try InstallationBadgesTable(db).set(project: "demo", installationID: "i-2", count: 5, at: Date())
            let feedback = FeedbackTable(db)
            try feedback.record("demo/paul", .tokenInvalid, value: "token-a", at: now)
            try feedback.record("demo/paul", .tokenInvalid, value: "token-b", at: now)
            try feedback.record("demo/paul", .emailBounced, value: "paul@example.com", at: now)
            try feedback.record("demo/paul", .emailMarketing, value: "unsubscribed", at: now)
        }
        // The orchestrator has not caught up: the same snapshot keeps everything.
        try await contact("demo/paul", contactJSON(installations: [installationJSON("i-1", token: "token-a"), installationJSON("i-2", token: "token-b")]))
        #expect(try await feedback().count == 4)
        #expect(try await badges() == ["i-1": 3, "i-2": 5])
        // It has: i-2 left, i-1 has a new token, the address changed.
        try await contact("demo/paul", contactJSON(email: "new@example.com", installations: [installationJSON("i-1", token: "token-c")]))
        #expect(try await badges() == ["i-1": 3])
        #expect(try await feedback() == ["email_marketing unsubscribed"])

        // An installation that moves from its anonymous profile to paul's, in this partition, keeps its count.
        try await contact("demo/install/i-3", anonymous("i-3"))
        try await database.write { db in try InstallationBadgesTable(db).set(project: "demo", installationID: "i-3", count: 2, at: Date()) }
        try await contact("demo/paul", contactJSON(installations: [installationJSON("i-1", token: "token-c"), installationJSON("i-3")]))
        try await contact("demo/install/i-3", nil)
        #expect(try await badges() == ["i-1": 3, "i-3": 2])

        // The profile is deleted: its feedback and its installations' counts go with it.
        try await contact("demo/paul", nil)
        #expect(try await badges().isEmpty)
        #expect(try await feedback().isEmpty)
    }
}
