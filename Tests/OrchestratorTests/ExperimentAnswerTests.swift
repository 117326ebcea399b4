import Foundation
import Shared
import Testing

@testable import OrchestratorDomain

/// The experiment endpoint's answer is one Swift type on both sides: what the orchestrator encodes, `herald campaign
/// report` decodes, and a field the decoder does not recognise is an error, never a silent zero.
@Suite("Experiments: the endpoint's answer as a type")
struct ExperimentAnswerTests {
    static let bytes = Array(
        #"""
        {"arms":[{"assigned":10,"converted":[3],"events":[4],"revenue_usd":12.5,"sends":{"clicked_machine":2,"opened":5,"sent":9},
        "variant":"control","version":"v1"}],"campaign":"demo/welcome","conversions":[{"event":"BOUGHT","sources":"any","window_seconds":86400}],
        "split":{"control_basis_points":3000,"variants":{"a":1,"b":1}},"version":"v1"}
        """#.utf8)

    @Test("the answer's wire names decode to the typed figures, and encode back to the same")
    func roundTrip() throws {
        let answer = try ExperimentAnswer.decode(Self.bytes)
        #expect(answer.arms.first?.sends == [.clickedMachine: 2, .opened: 5, .sent: 9])
        #expect(answer.arms.first?.revenueUSD == 12.5)
        #expect(answer.conversions == [.init(event: "BOUGHT", windowSeconds: 86_400, sources: .any)])
        #expect(answer.split?.controlBasisPoints == 3000)
        #expect(try ExperimentAnswer.decode(answer.encoded()) == answer)
    }

    @Test("a figure or a source the type does not know is an error naming where it is", arguments: [
        (#""clicked_machine":2"#, #""teleported":2"#, "teleported"),
        (#""sources":"any""#, #""sources":"apps""#, "sources"),
        (#""revenue_usd":12.5"#, #""revenue":12.5"#, "revenue_usd"),
    ])
    func strict(field: String, replacement: String, named: String) throws {
        let text = String(decoding: Self.bytes, as: UTF8.self).replacingOccurrences(of: field, with: replacement)
        #expect(text != String(decoding: Self.bytes, as: UTF8.self))
        let error = #expect(throws: DecodingError.self) { try ExperimentAnswer.decode(Array(text.utf8)) }
        #expect(String(describing: error).contains(named), "\(String(describing: error))")
    }

    @Test("each arm's expected share: the variants by weight, or the configured messages, beside the control")
    func shares() {
        let split = ExperimentAnswer.Split(controlBasisPoints: 2000, variants: ["a": 1, "b": 3])
        let want = [Experiment.control: 0.2, "a": 0.2, "b": 0.6]
        #expect(split.shares.keys.sorted() == want.keys.sorted())
        #expect(want.allSatisfy { abs((split.shares[$0.key] ?? -1) - $0.value) < 1e-12 }, "\(split.shares)")
        // An experiment without variants tests the messages as configured against the control group.
        #expect(ExperimentAnswer.Split(controlBasisPoints: 5000, variants: [:]).shares == [Experiment.control: 0.5, Experiment.message: 0.5])
    }
}
