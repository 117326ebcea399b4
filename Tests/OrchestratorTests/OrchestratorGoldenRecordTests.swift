import Foundation
import GRDB
import HeraldTestSupport
import Ingest
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// The orchestrator's own records on herald.ingest (identity moves, claims, forwarded writes), from a scenario that
/// makes each kind, are the ones it wrote before they had typed payloads (`IngestGoldens.orchestrator`, captured at
/// 89ff821 by this scenario): the same keys, the same bytes. Since a device moves to another user only once its user
/// logs it out (issue 55), the scenario logs paul out before zoe, and adds mallory's refused identify (a drop); those
/// lines were captured then, and the later ones differ from 89ff821's in their times only (two more steps of the
/// scenario's clock). `HERALD_DUMP_GOLDENS=<file>` writes what the scenario produced, to capture it again.
@Suite("herald.ingest: the orchestrator writes the golden records")
struct OrchestratorGoldenRecordTests {
    @Test("identity moves, claims and forwarded writes are the golden ones, byte for byte")
    func goldenRecords() async throws {
        let cluster = try Cluster(partitions: 3, seed: 7)
        func profile(_ json: String) throws -> [JSONMember] {
            let (edit, problems) = ProfileValidation.validate(try JSONParser.parse(Array(json.utf8)), path: "a", identified: true)
            guard problems.isEmpty else { throw Failure("\(problems)") }
            return [JSONMember("profile", edit.json)]
        }
        func event(_ json: String) throws -> [JSONMember] {
            guard case .valid(let event) = EventValidation.validate(try JSONParser.parse(Array(json.utf8)), path: "e") else {
                throw Failure("invalid event \(json)")
            }
            return [JSONMember("event", event.json)]
        }
        let token = String(repeating: "ab", count: 32)
        // An anonymous installation with history, identified as paul (link, move with the merged history).
        cluster.app(.installation, "a1", installation: "i-1", [JSONMember("installation", .object([
            JSONMember("app_version", .string("1.0")), JSONMember("timezone", .string("Europe/Paris")),
            JSONMember("notification_permission", .string("allowed"))]))])
        cluster.app(.pushToken, "a2", installation: "i-1", [JSONMember("push", .object([JSONMember("token", .string(token)), JSONMember("environment", .string("production"))]))])
        cluster.app(.profileUpdate, "a3", installation: "i-1", try profile(#"{"$language":"fr","plan":"free","since":{"$date":"2026-01-01T00:00:00Z"}}"#))
        cluster.app(.event, "a4", installation: "i-1", try event(#"{"name":"app_open","attributes":{"n":1,"$tags":["a"],"$label":"l"}}"#))
        cluster.app(.location, "a5", installation: "i-1", [JSONMember("location", .object([JSONMember("latitude", .number("48.5")), JSONMember("longitude", .number("2.25"))]))])
        try await cluster.settle()
        cluster.app(.identify, "a6", installation: "i-1", customID: "paul")
        try await cluster.settle()
        // A write naming only the installation is forwarded to paul.
        cluster.app(.event, "a7", installation: "i-1", try event(#"{"name":"opened"}"#))
        try await cluster.settle()
        // Logged out by paul and at once identified as zoe: paul gives it back (detach, move home, forwarded to zoe, who
        // has it by then).
        cluster.app(.logout, "a8a", installation: "i-1", [JSONMember("from_custom_id", .string("paul"))])
        cluster.app(.identify, "a8", installation: "i-1", customID: "zoe")
        try await cluster.settle()
        // Identified as mallory while zoe holds it: refused, mallory forgets it (drop).
        cluster.app(.identify, "a8b", installation: "i-1", customID: "mallory")
        try await cluster.settle()
        // The same token on another installation: claimed there, released here.
        cluster.app(.pushToken, "a9", installation: "i-2", customID: "bob", [JSONMember("push", .object([JSONMember("token", .string(token)), JSONMember("environment", .string("sandbox"))]))])
        try await cluster.settle()
        // Logout, then wipe by an identified app.
        cluster.app(.logout, "a10", installation: "i-1")
        try await cluster.settle()
        cluster.app(.identify, "a11", installation: "i-1", customID: "zoe")
        try await cluster.settle()
        cluster.app(.wipe, "a12", installation: "i-1", customID: "zoe")
        try await cluster.settle()
        // Aliases: an alias-only profile with a purchase, claimed by ann (merged), refused for bob, replaced for ann.
        let crm = UserAlias(label: "crm", name: "42")
        cluster.server(.profileUpdate, "s1", alias: crm, try profile(#"{"$email_address":"x@example.com","tier":"b"}"#))
        cluster.server(.purchase, "s2", alias: crm, [JSONMember("purchase", Purchase(
            productID: "sku-1", currency: "EUR", price: 9.99, quantity: 2, revenueUSD: 21.58, time: nil,
            properties: [("color", .string("red"))]).json)])
        try await cluster.settle()
        cluster.server(.alias, "s3", customID: "ann", alias: crm)
        try await cluster.settle()
        cluster.server(.alias, "s4", customID: "bob", alias: crm)
        try await cluster.settle()
        cluster.server(.alias, "s5", customID: "ann", alias: UserAlias(label: "crm", name: "43"))
        try await cluster.settle()
        // A write naming the alias, forwarded to ann.
        cluster.server(.event, "s6", alias: UserAlias(label: "crm", name: "43"), try event(#"{"name":"opened"}"#))
        try await cluster.settle()
        // Delete bob (an installation, no alias) and ann (aliases).
        cluster.server(.profileDelete, "s7", customID: "bob")
        cluster.server(.profileDelete, "s8", customID: "ann")
        try await cluster.settle()
        let lines = cluster.producedIngest.map { "\($0.key)\t\(String(decoding: $0.value, as: UTF8.self))" }
        let goldens = IngestGoldens.orchestrator.split(separator: "\n").map(String.init)
        if let path = ProcessInfo.processInfo.environment["HERALD_DUMP_GOLDENS"] {
            try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        }
        #expect(lines.count == goldens.count)
        for (line, golden) in zip(lines, goldens) { #expect(line == golden) }
    }
}
