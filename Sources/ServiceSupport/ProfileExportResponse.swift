import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Shared

/// `GET /v1/profiles/{project}/{custom_id}/export` on the orchestrator and the notifier (operator endpoints): every row
/// this instance's partitions hold of the profile, as NDJSON, one line per row: `{"service", "partition", "table",
/// "row"}` (docs/data-rights.md, "Export"). `herald profile export` asks every instance of both services and prints
/// their lines together.
package enum ProfileExportResponse {
    package static func response(service: String, profileKey: String, rows: [(partition: Int32, table: String, row: JSONValue)]) -> Response {
        guard !rows.isEmpty else { return .jsonError(.notFound, "not_found", "no partition of this instance holds \(profileKey)") }
        var bytes: [UInt8] = []
        for (partition, table, row) in rows {
            bytes += JSONValue.object([
                JSONMember("service", .string(service)), JSONMember("partition", .number(String(partition))),
                JSONMember("table", .string(table)), JSONMember("row", row),
            ]).serialized
            bytes.append(10)
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The profile key of the request's path (`project`, `custom_id`, percent-decoded).
    package static func key(parameters: Parameters) -> String {
        func decoded(_ name: String) -> String {
            let raw = parameters.get(name) ?? ""
            return raw.removingPercentEncoding ?? raw
        }
        return ProfileKey.profile(decoded("project"), decoded("custom_id"))
    }
}
