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
    /// One exported row: where it is, whose, and its columns.
    package typealias Row = (partition: Int32, profileKey: String, table: String, row: JSONValue)

    package static func response(service: String, asked: String, rows: [Row]) -> Response {
        guard !rows.isEmpty else { return .jsonError(.notFound, "not_found", "no partition of this instance holds \(asked)") }
        var bytes: [UInt8] = []
        for (partition, key, table, row) in rows {
            bytes += JSONValue.object([
                JSONMember("service", .string(service)), JSONMember("partition", .number(String(partition))),
                JSONMember("profile_key", .string(key)), JSONMember("table", .string(table)), JSONMember("row", row),
            ]).serialized
            bytes.append(10)
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// A path parameter, percent-decoded.
    package static func decoded(_ parameters: Parameters, _ name: String) -> String {
        let raw = parameters.get(name) ?? ""
        return raw.removingPercentEncoding ?? raw
    }
}
