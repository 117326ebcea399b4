import Foundation
import Shared

extension IngestRecord {
    /// A record from its op's fields as the wire holds them (tests write scenarios in the stored shape), read back by
    /// `IngestRecord.read`: the fields must be what the op carries, or the test stops here, saying which.
    package init(
        op: IngestOp, id: String, project: String, source: IngestSource, customID: String?, installationID: String?,
        receivedAt: Date, fields: [JSONMember] = [], alias: UserAlias? = nil
    ) {
        let envelope = IngestRecord(
            .identify, id: id, project: project, source: source, customID: customID, installationID: installationID,
            receivedAt: receivedAt, alias: alias)
        guard case .object(var members) = envelope.json else { preconditionFailure("an envelope is an object") }
        if let index = members.firstIndex(where: { $0.key == "op" }) { members[index] = JSONMember("op", .string(op.rawValue)) }
        do {
            self = try IngestRecord.read(JSONValue.object(members + fields).serialized)
        } catch {
            preconditionFailure("\(op.rawValue) does not carry these fields: \(error)")
        }
    }
}
