import Foundation
import HeraldTestSupport
import PartitionStore
import Shared
import Testing

@testable import OrchestratorDomain

/// A campaign's push with a landing (issue 60, item 4): the send names the in-app message, for the notifier to put in
/// the notification.
@Suite("Landings: the send", .serialized)
struct LandingTests {
    @Test("the send of a push with a landing names it; one without, none")
    func sendNamesLanding() async throws {
        let config = try configuration(
            demoProject,
            #"{"kind":"template","id":"t","project":"demo","channel":"push","variants":{"default":{"body":"New looks"}}}"#,
            #"{"kind":"in_app_message","id":"land","project":"demo","type":"modal","triggers":[],"variants":{"default":{"message":"Hi"}}}"#,
            #"{"kind":"campaign","id":"promo","project":"demo","type":"transactional","trigger":{"event":"A"},"reeligibility":"always","messages":[{"channel":"push","template":"t","landing":"land"}]}"#,
            #"{"kind":"campaign","id":"plain","project":"demo","type":"transactional","trigger":{"event":"B"},"reeligibility":"always","messages":[{"channel":"push","template":"t"}]}"#)
        let harness = try await EngagementHarness(config)
        try await harness.apply([try harness.writer.event(id: "e1", #"{"name":"a"}"#), try harness.writer.event(id: "e2", #"{"name":"b"}"#)])
        #expect(try harness.sends().map(\.landing) == ["land", nil])
    }
}
