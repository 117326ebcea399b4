import Foundation
import HeraldTestSupport
import Shared
import Testing

/// `herald.ingest` records as Herald wrote them before they had typed payloads (`IngestGoldens`, captured at 89ff821
/// from every endpoint of the ingest and from the orchestrator's identity scenario): each reads into its op's typed
/// payload and writes back to the same bytes, so that records already in a topic stay readable and a change to the
/// format is a visible decision.
@Suite("herald.ingest: golden records")
struct IngestRecordGoldenTests {
    @Test("every record the ingest wrote reads and writes back byte for byte, under the same key")
    func ingestRecords() throws {
        let goldens = IngestGoldens.ingestRecords
        #expect(goldens.count == 46)
        for golden in goldens {
            let record = try IngestRecord.read(Array(golden.value.utf8))
            #expect(String(decoding: record.value, as: UTF8.self) == golden.value, "\(golden.name)")
            #expect(record.key == golden.key, "\(golden.name)")
        }
    }

    @Test("every record the orchestrator wrote reads and writes back byte for byte")
    func orchestratorRecords() throws {
        let goldens = IngestGoldens.orchestratorRecords
        #expect(goldens.count == 35)
        for golden in goldens {
            let record = try IngestRecord.read(Array(golden.value.utf8))
            #expect(String(decoding: record.value, as: UTF8.self) == golden.value, "\(golden.key)")
        }
    }

    @Test("every op has a golden record (install_drop among the orchestrator's: a refused identify)")
    func everyOp() throws {
        var ops: Set<IngestOp> = []
        for value in IngestGoldens.ingestRecords.map(\.value) + IngestGoldens.orchestratorRecords.map(\.value) {
            ops.insert(try IngestRecord.read(Array(value.utf8)).op)
        }
        #expect(Set(IngestOp.allCases).subtracting(ops) == [])
    }

    @Test("the payloads are typed: a golden profile update, event, purchase and identity move read as values")
    func typedPayloads() throws {
        func golden(_ name: String) throws -> IngestRecord {
            let line = try #require(IngestGoldens.ingestRecords.first { $0.name == name })
            return try IngestRecord.read(Array(line.value.utf8))
        }
        guard case .profileUpdate(let update) = try golden("server-update#0").payload, let profile = update.profile,
            let events = update.events
        else { throw Failure("not a profile update") }
        #expect(profile.natives.map(\.key) == ["email", "email_marketing", "phone_number", "sms_marketing", "language", "region", "timezone"])
        #expect(profile.attributes.first { $0.name == "visits" }?.edit == .arrayEdit(add: ["x"], remove: ["y"]))
        #expect(profile.attributes.first { $0.name == "since" }?.edit == .set(.date(WireTime.parse("2026-01-01T00:00:00Z")!)))
        #expect(profile.attributes.first { $0.name == "gone" }?.edit == .remove)
        #expect(events.map(\.name) == ["PURCHASED", "APP_OPEN"] && events[0].tags == ["spring", "sale"])
        guard case .purchase(let purchase) = try golden("braze-track#4").payload else { throw Failure("not a purchase") }
        #expect(purchase.productID == "sku-1" && purchase.quantity == 2 && purchase.revenueUSD == 21.58)
        guard case .installation(let report) = try golden("app-installation-erase#0").payload else { throw Failure("not an installation") }
        #expect(report.fields.contains(InstallationReport.Field("device_model", nil)))
        let updateOnly = try golden("braze-track#1")
        #expect(updateOnly.updateExistingOnly && updateOnly.alias == UserAlias(label: "crm", name: "42"))
        let move = try #require(IngestGoldens.orchestratorRecords.first { $0.value.contains(#""op":"install_move""#) && $0.value.contains("merge") })
        guard case .installMove(let installMove) = try IngestRecord.read(Array(move.value.utf8)).payload, let history = installMove.merge
        else { throw Failure("not a move with history") }
        #expect(history.natives == [JSONMember("language", .string("fr"))] && history.attributes.map(\.name) == ["plan", "since"])
    }

    @Test("a record whose payload is not its op's is refused, naming the field")
    func refusedPayloads() {
        func reason(_ text: String) -> String? {
            do {
                _ = try IngestRecord.read(Array(text.utf8))
                return nil
            } catch {
                return error.reason
            }
        }
        let envelope = #""v":1,"kind":"ingest","id":"x","project":"demo","source":"server","custom_id":"paul","received_at":"2026-11-18T11:06:40.000Z""#
        #expect(reason(#"{\#(envelope),"op":"event"}"#) == "event: missing")
        #expect(reason(#"{\#(envelope),"op":"event","event":{"name":"A","attributes":{"price":1}}}"#) == "event.attributes.price: an attribute without a type suffix")
        #expect(reason(#"{\#(envelope),"op":"profile_update","profile":{"custom_attributes":{"plan":"gold"}}}"#) == "profile.custom_attributes.plan: an attribute without a type suffix is removed by null")
        #expect(reason(#"{\#(envelope),"op":"location","location":{"latitude":"north","longitude":2}}"#) == "location.latitude: expected a number")
        #expect(reason(#"{\#(envelope),"op":"token_claim","token":"t"}"#) == "owner_key: missing")
    }
}
