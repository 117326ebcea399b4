import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Shared

/// The lines of an export (docs/data-rights.md, "Export"), NDJSON, one per stored row: `{"service", "partition",
/// "profile_key", "table", "row"}`, and the response that carries them.
package enum ProfileExportResponse {
    /// One exported row: where it is, whose, and its columns.
    package typealias Row = (partition: Int32, profileKey: String, table: String, row: JSONValue)

    /// A row's line, without its line break.
    package static func line(service: String, _ row: Row) -> String {
        String(
            decoding: JSONValue.object([
                JSONMember("service", .string(service)), JSONMember("partition", .number(String(row.partition))),
                JSONMember("profile_key", .string(row.profileKey)), JSONMember("table", .string(row.table)),
                JSONMember("row", row.row),
            ]).serialized, as: UTF8.self)
    }

    /// 200 with the lines, or 404 naming what was asked when there are none.
    package static func response(asked: String, lines: [String]) -> Response {
        guard !lines.isEmpty else { return .jsonError(.notFound, "not_found", "Herald holds nothing of \(asked)") }
        var buffer = ByteBuffer()
        buffer.reserveCapacity(lines.reduce(0) { $0 + $1.utf8.count + 1 })
        for line in lines {
            buffer.writeString(line)
            buffer.writeInteger(UInt8(10))
        }
        return Response(status: .ok, headers: [.contentType: "application/x-ndjson"], body: ResponseBody(byteBuffer: buffer))
    }
}
