import Foundation
import HeraldTestSupport
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// Geofences on the orchestrator (issue 60, item 3): the nearest an installation syncs, and the reports of its device
/// entering and leaving them, with a cooldown kept per profile.
@Suite("Geofences: the sync and the reports", .serialized)
struct GeofenceTests {
    static let sets = [
        #"{"kind":"app","id":"ios","project":"demo","platform":"ios","geofences":{"max":3,"reserved":1}}"#,
        #"{"kind":"app","id":"android","project":"demo","platform":"android"}"#,
        #"""
        {"kind":"geofence_set","id":"stores","project":"demo","apps":["ios"],"cooldown":"6h","geofences":[
          {"id":"louvre","latitude":48.8606,"longitude":2.3376,"radius":150},
          {"id":"montmartre","latitude":48.8867,"longitude":2.3431,"radius":200},
          {"id":"defense","latitude":48.8918,"longitude":2.2361,"radius":300}]}
        """#,
    ]

    func location(_ latitude: Double, _ longitude: Double, at time: Date) -> [JSONMember] {
        [JSONMember("location", .object([
            JSONMember("latitude", .number(JSONValue.literal(latitude))), JSONMember("longitude", .number(JSONValue.literal(longitude))),
            JSONMember("time", .string(WireTime.format(time))),
        ]))]
    }

    func report(_ kind: String, _ geofence: String, set: String = "stores", at time: Date) -> [JSONMember] {
        [JSONMember("geofence", .object([
            JSONMember("kind", .string(kind)), JSONMember("set", .string(set)), JSONMember("geofence", .string(geofence)),
            JSONMember("time", .string(WireTime.format(time))),
        ]))]
    }

    func sync(_ harness: EngagementHarness, installation: String = "I", app: String = "ios", tag: String? = nil) async throws -> GeofenceSync.Answer? {
        let config = harness.rules.config
        return try await harness.database.read { db in
            try GeofenceSync(db: db, config: config).answer(key: "demo/paul", installationID: installation, app: app) { $0 == tag }
        }
    }

    @Test("the sync: none without a location; the app's nearest, max less reserved; a 304 while they hold; nil for another's installation")
    func syncAnswers() async throws {
        let harness = try await EngagementHarness(try configuration([demoProject] + Self.sets))
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        let empty = try #require(try await sync(harness))
        #expect(empty.json?["located"] == .bool(false) && empty.json?["geofences"] == .array([]))
        try await harness.apply([harness.writer.record(.location, id: "l1", installationID: "I", fields: location(48.8566, 2.3522, at: t0))])
        let answer = try #require(try await sync(harness))
        guard case .array(let items)? = answer.json?["geofences"] else { Issue.record("\(String(describing: answer.json))"); return }
        #expect(items.map { $0["id"]?.stringValue } == ["louvre", "montmartre"])
        #expect(answer.json?["max"] == .number("2"))
        // Moved a few metres: the same geofences, the same tag, no body.
        try await harness.apply([harness.writer.record(.location, id: "l2", installationID: "I", fields: location(48.8567, 2.3523, at: t0 + 60))])
        let again = try #require(try await sync(harness, tag: answer.etag))
        #expect(again.etag == answer.etag && again.json == nil)
        // Another app of the project monitors none of these sets.
        #expect(try await sync(harness, app: "android")?.json?["geofences"] == .array([]))
        #expect(try await sync(harness, installation: "nobody's") == nil)
    }

    @Test("reports: an entry becomes GEOFENCE_ENTER once per cooldown per profile, whatever the device; exits count; others nowhere")
    func reports() async throws {
        let campaign = #"{"kind":"campaign","id":"welcome-in","project":"demo","type":"transactional","trigger":{"event":"GEOFENCE_ENTER","where":"event.geofence = \"louvre\""},"reeligibility":"always","messages":[{"channel":"push","template":"t"}]}"#
        let template = #"{"kind":"template","id":"t","project":"demo","channel":"push","variants":{"default":{"body":"Welcome to {{ event.geofence }}"}}}"#
        let harness = try await EngagementHarness(try configuration([demoProject, template, campaign] + Self.sets))
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"), harness.writer.record(.identify, id: "i2", installationID: "J"),
        ])
        try await harness.apply([
            harness.writer.record(.geofence, id: "g1", installationID: "I", fields: report("enter", "louvre", at: t0)),
            // The other device, an hour later: within the 6 h cooldown.
            harness.writer.record(.geofence, id: "g2", installationID: "J", fields: report("enter", "louvre", at: t0 + 3600)),
            harness.writer.record(.geofence, id: "g3", installationID: "I", fields: report("exit", "louvre", at: t0 + 3700)),
            // Unknown, and not this app's.
            harness.writer.record(.geofence, id: "g4", installationID: "I", fields: report("enter", "eiffel", at: t0 + 3800)),
        ])
        harness.writer.source = .app(id: "android", dev: false)
        try await harness.apply([harness.writer.record(.geofence, id: "g5", installationID: "J", fields: report("enter", "montmartre", at: t0 + 3900))])
        harness.writer.source = .app(id: "ios", dev: false)
        // Past the cooldown: counted again.
        try await harness.apply([harness.writer.record(.geofence, id: "g6", installationID: "J", fields: report("enter", "louvre", at: t0 + 6 * 3600))])
        let profile = try #require(try await harness.database.read { db in try ProfileView.json(db, key: "demo/paul") })
        #expect(profile["events"]?["e.GEOFENCE_ENTER"]?["count"] == .number("2"), "\(String(describing: profile["events"]))")
        #expect(profile["events"]?["e.GEOFENCE_EXIT"]?["count"] == .number("1"))
        #expect(profile["events"]?["e.GEOFENCE_ENTER"]?["attributes"]?["geofence.s"] == .string("louvre"))
        #expect(try harness.sends().map { $0.content["body"] } == ["Welcome to louvre", "Welcome to louvre"])
    }

    @Test("a location that changes the geofences given: a silent sync push to the installation, and an entry into one it is already inside")
    func locationChangesGeofences() async throws {
        let harness = try await EngagementHarness(try configuration([demoProject] + Self.sets))
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"),
            harness.writer.record(.pushToken, id: "t1", installationID: "I", fields: push(tokenA)),
            // New York: no geofence within 2,000 km.
            harness.writer.record(.location, id: "l1", installationID: "I", fields: location(40.7128, -74.0060, at: t0)),
        ])
        #expect(try harness.sends().isEmpty)
        // At the Louvre (inside its 150 m): louvre and montmartre given; a sync push; an entry into the Louvre only.
        try await harness.apply([harness.writer.record(.location, id: "l2", installationID: "I", fields: location(48.8607, 2.3377, at: t0 + 60))])
        let syncs = try harness.sends().filter { $0.campaign == "geofence-sync" }
        #expect(syncs.count == 1)
        #expect(syncs.first?.installationID == "I" && syncs.first?.payload?["herald_geofence_sync"] == .bool(true))
        #expect(syncs.first?.trigger.type == .geofenceSync && syncs.first?.isSilentSignal == true)
        var profile = try #require(try await harness.database.read { db in try ProfileView.json(db, key: "demo/paul") })
        #expect(profile["events"]?["e.GEOFENCE_ENTER"]?["count"] == .number("1"))
        #expect(profile["events"]?["e.GEOFENCE_ENTER"]?["attributes"]?["synthesized.b"] == .bool(true), "\(String(describing: profile["events"]))")
        // A few metres on: the same geofences, no push, no entry.
        try await harness.apply([harness.writer.record(.location, id: "l3", installationID: "I", fields: location(48.8608, 2.3378, at: t0 + 120))])
        #expect(try harness.sends().count == 1)
        profile = try #require(try await harness.database.read { db in try ProfileView.json(db, key: "demo/paul") })
        #expect(profile["events"]?["e.GEOFENCE_ENTER"]?["count"] == .number("1"))
    }

    @Test("an identification carries the anonymous profile's geofence entries: the cooldown goes on in the user's profile")
    func cooldownMerges() async throws {
        let cluster = try Cluster()
        cluster.rules = EngagementRules(config: try configuration([demoProject] + Self.sets))
        // Anonymous: the device enters the Louvre; then the user signs in; then the device reports the Louvre again,
        // an hour later, within the 6 h cooldown.
        cluster.app(.geofence, "g1", installation: "I", at: t0, report("enter", "louvre", at: t0))
        try await cluster.settle()
        cluster.app(.identify, "i1", installation: "I", customID: "paul", at: t0 + 60)
        try await cluster.settle()
        cluster.app(.geofence, "g2", installation: "I", customID: "paul", at: t0 + 3600, report("enter", "louvre", at: t0 + 3600))
        try await cluster.settle()
        let paul = try #require(try await cluster.profile("demo/paul"))
        #expect(paul["events"]?["e.GEOFENCE_ENTER"]?["count"] == .number("1"), "\(String(describing: paul["events"]))")
    }
}
