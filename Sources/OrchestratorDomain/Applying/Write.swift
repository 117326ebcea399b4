import Foundation
import GRDB
import PartitionStore
import Shared

/// One `herald.ingest` record, read (`IngestRecord`, the type the ingest writes with), with the Kafka record it came in.
/// A class: every stage holds it, and a reference is one retain where the record's fields were one each.
final class Write {
    let record: KafkaRecord
    let ingest: IngestRecord

    init(record: KafkaRecord, ingest: IngestRecord) {
        self.record = record
        self.ingest = ingest
    }

    var op: IngestOp { ingest.op }
    /// What the write does, with its typed fields.
    var payload: IngestPayload { ingest.payload }
    var id: String { ingest.id }
    var project: String { ingest.project }
    var customID: String? { ingest.customID }
    var installationID: String? { ingest.installationID }
    var receivedAt: Date { ingest.receivedAt }
    var forwarded: Bool { ingest.forwarded }
    var hops: Int { ingest.hops }
    var app: String? { if case .app(let id, _) = ingest.source { id } else { nil } }
    var dev: Bool { if case .app(_, let dev) = ingest.source { dev } else { false } }
    var isApp: Bool { if case .app = ingest.source { true } else { false } }
    var isInternal: Bool { ingest.source == .orchestrator }

    /// The ingest request that carried the write (`herald-request-id`): the correlation id a send and its delivery
    /// logs keep.
    var requestID: String? {
        record.headers.first { $0.name == HeraldHeader.requestID }?.value.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Reads a record, or says why it cannot be applied (it goes to the dead letters).
    static func read(_ record: KafkaRecord) -> Result<Write, ReadFailure> {
        guard let bytes = record.value else { return .failure("a null value on herald.ingest") }
        let ingest: IngestRecord
        do {
            ingest = try IngestRecord.read(bytes)
        } catch {
            return .failure(ReadFailure(stringLiteral: error.reason))
        }
        let op = ingest.op
        if case .app = ingest.source, ingest.installationID == nil {
            return .failure("\(op.rawValue) from app without installation_id")
        }
        if IngestOp.appOnlyOps.contains(op), !ingest.source.isApp {
            // What only an app reports about itself (braze-rules 23: a server's write never triggers as an app's).
            return .failure("\(op.rawValue) from \(ingest.source == .orchestrator ? "orchestrator" : "server"): only an app reports it")
        }
        if IngestOp.aliasOps.contains(op) {
            guard ingest.alias != nil else { return .failure("\(op.rawValue) without alias") }
        } else if case .pushSend(let push) = ingest.payload {
            guard ingest.installationID != nil || (ingest.deviceToken != nil && push.app != nil)
            else { return .failure("push_send without installation_id, or without device_token and its app") }
        } else if IngestOp.internalOps.contains(op) || op == .identify || op == .logout {
            guard ingest.installationID != nil || op == .tokenClaim || op == .tokenRelease || op == .journeyUpdate else {
                return .failure("\(op.rawValue) from \(ingest.source == .orchestrator ? "orchestrator" : "server") without installation_id")
            }
        }
        return .success(Write(record: record, ingest: ingest))
    }

    struct ReadFailure: Error, ExpressibleByStringLiteral, ExpressibleByStringInterpolation {
        let reason: String
        init(stringLiteral value: String) { reason = value }
        init(stringInterpolation: DefaultStringInterpolation) { reason = String(stringInterpolation: stringInterpolation) }
    }

    /// The installation's home key (anonymous profile and link).
    var homeKey: String { ProfileKey.home(project, installationID ?? "") }
    /// The Braze alias the write names its profile by, if any.
    var alias: UserAlias? { ingest.alias }
    /// The alias's home key (alias-only profile and link).
    var aliasKey: String? { alias.map { ProfileKey.alias(project, $0) } }
    /// The key this write applies to: the custom ID's profile, else the alias's home, else the installation's home.
    var profileKey: String { customID.map { ProfileKey.profile(project, $0) } ?? aliasKey ?? homeKey }
    /// The key the record came under (where it applies, or is routed from).
    var recordKey: String { record.keyString ?? profileKey }
    /// Braze's `_update_existing_only`: the write changes a profile that exists, and never creates one.
    var updateExistingOnly: Bool { ingest.updateExistingOnly }

    /// Whether this write is applied here for the first time (a replayed id is a no-op). Ids are remembered per project
    /// and per key where the write applies: a client id (or an `Idempotency-Key`) is the client's to choose, and one
    /// reused for another user's write must not silence it for the dedupe window (the same write replayed comes with
    /// the same key). The window counts from the ingest's time.
    func firstTime(_ db: Database) throws -> Bool {
        try RecordDedupe.firstTime(db, scope: project, id: "\(recordKey) \(id)", at: receivedAt)
    }

    /// This write again, for another key: the same id (applied once, where it lands), another custom ID, the same
    /// request id (the sends it triggers there log it).
    func rerouted(customID newCustomID: String?) -> PendingOutput {
        var again = ingest
        again.customID = newCustomID
        again.forwarded = true
        again.hops = hops + 1
        return PendingOutput(
            topic: HeraldTopic.ingest.name, key: again.key, value: again.value, headers: again.headers(requestID: requestID))
    }
}
