import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain

/// Send ids are derived, never drawn: a decision made again is the same send, which the notifier dedupes. Each
/// derivation ever used is pinned here by its output, and a `push_send` record says which one it was derived with, so
/// that a record applied again after an upgrade keeps its id (89ff821 changed the transactional one without saying).
@Suite("Send ids: every derivation pinned, a record's own one used")
struct SendIDTests {
    /// Computed apart, with Python's hashlib (`hashlib.sha256(b"push_send\\x00demo/paul\\x00order-42").hexdigest()[:32]`).
    @Test("golden ids of each derivation")
    func golden() {
        #expect(SendIDDerivation.v1.transactional(key: "demo/paul", recordID: "order-42") == "37619d1ed481fbaf9e840a52fd552aa1")
        #expect(SendIDDerivation.v2.transactional(key: "demo/paul", recordID: "order-42") == "031072bc9804c75077f7a97f3559c686")
        #expect(
            SendIDDerivation.campaign(campaign: "demo/welcome", step: "0", profileKey: "demo/paul", occurrence: "event e-1")
                == "ea951bf752bac1e532219c06964b1226")
    }

    @Test("a record's version chooses; one without it by its receipt: before 89ff821, the first derivation")
    func chosen() throws {
        let push = TransactionalPush(campaign: nil, notification: [JSONMember("body", .string("b"))])
        let before = SendIDDerivation.v2Since - 60
        let after = SendIDDerivation.v2Since + 60
        #expect(SendIDDerivation.of(push, receivedAt: before) == .v1)
        #expect(SendIDDerivation.of(push, receivedAt: after) == .v2)
        var versioned = push
        versioned.sendIDVersion = 1
        #expect(SendIDDerivation.of(versioned, receivedAt: after) == .v1)
        versioned.sendIDVersion = 2
        #expect(SendIDDerivation.of(versioned, receivedAt: before) == .v2)
        #expect(SendIDDerivation.current == .v2)
    }

    @Test("a push_send record written before send_id_version reads without it and writes back the same bytes")
    func oldRecord() throws {
        let old = #"{"v":1,"kind":"ingest","op":"push_send","id":"order-42","project":"demo","source":"server","installation_id":"I-1","received_at":"2026-11-18T11:06:40.000Z","push":{"notification":{"body":"b"}}}"#
        let record = try IngestRecord.read(Array(old.utf8))
        guard case .pushSend(let push) = record.payload else {
            Issue.record("not a push_send")
            return
        }
        #expect(push.sendIDVersion == nil)
        #expect(String(decoding: record.value, as: UTF8.self) == old)
        #expect(SendIDDerivation.of(push, receivedAt: record.receivedAt) == .v1)
    }
}
