import Foundation
import HeraldTestSupport
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// Segments that read where a profile is (issue 60, item 2): evaluated again at each location an app reports, and when
/// the location grows too old for the condition.
@Suite("Segments: location", .serialized)
struct LocationSegmentTests {
    static let project = #"{"kind":"project","id":"demo","places":{"paris-store":{"latitude":48.8566,"longitude":2.3522}}}"#

    func location(_ latitude: Double, _ longitude: Double, at time: Date) -> [JSONMember] {
        [JSONMember("location", .object([
            JSONMember("latitude", .number(JSONValue.literal(latitude))), JSONMember("longitude", .number(JSONValue.literal(longitude))),
            JSONMember("accuracy", .number("20")), JSONMember("time", .string(WireTime.format(time))),
        ]))]
    }

    @Test("near a place: entered at a location inside, left at one outside; a campaign's segment_entry fires once")
    func entersAndLeaves() async throws {
        let config = try configuration(
            Self.project,
            #"{"kind":"segment","id":"near-store","project":"demo","condition":"location within 5km of \"paris-store\""}"#,
            #"{"kind":"template","id":"hello","project":"demo","channel":"push","variants":{"default":{"body":"We are around the corner"}}}"#,
            #"{"kind":"campaign","id":"nearby","project":"demo","type":"transactional","trigger":{"segment_entry":"near-store"},"reeligibility":"always","messages":[{"channel":"push","template":"hello"}]}"#)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([harness.writer.record(.identify, id: "i1", installationID: "I")])
        #expect(try await harness.segments() == [])
        // Versailles (17 km): not near. The Arc de Triomphe (4.6 km), a minute later: near.
        try await harness.apply([harness.writer.record(.location, id: "l1", installationID: "I", fields: location(48.8049, 2.1204, at: t0))])
        #expect(try await harness.segments() == [])
        try await harness.apply([harness.writer.record(.location, id: "l2", installationID: "I", fields: location(48.8738, 2.2950, at: t0 + 60))])
        #expect(try await harness.segments() == ["demo/near-store"])
        #expect(try harness.sends().map(\.campaign) == ["nearby"])
        // An update 10 s later (ignored: at most one every 30 s) changes nothing; Lyon, later, leaves.
        try await harness.apply([harness.writer.record(.location, id: "l3", installationID: "I", fields: location(45.76, 4.83, at: t0 + 70))])
        #expect(try await harness.segments() == ["demo/near-store"])
        try await harness.apply([harness.writer.record(.location, id: "l4", installationID: "I", fields: location(45.76, 4.83, at: t0 + 120))])
        #expect(try await harness.segments() == [])
        #expect(try harness.sends().count == 1)
    }

    @Test("seen there lately: the profile leaves when its last location grows older than the window, on time")
    func freshness() async throws {
        let config = try configuration(
            Self.project,
            #"{"kind":"segment","id":"seen-near","project":"demo","condition":"location within 5km of \"paris-store\" and location.at > now - 7d"}"#)
        let harness = try await EngagementHarness(config)
        harness.writer.source = .app(id: "ios", dev: false)
        try await harness.apply([
            harness.writer.record(.identify, id: "i1", installationID: "I"),
            harness.writer.record(.location, id: "l1", installationID: "I", fields: location(48.86, 2.34, at: t0)),
        ])
        #expect(try await harness.segments() == ["demo/seen-near"])
        // The timer of the flip: exactly 7 days after the location was taken.
        #expect(try await harness.advance(to: t0 + 7 * 86_400 - 1) == 0)
        #expect(try await harness.segments() == ["demo/seen-near"])
        #expect(try await harness.advance(to: t0 + 7 * 86_400 + 0.001) == 1)
        #expect(try await harness.segments() == [])
    }
}
