import HTTPTypes
import Hummingbird
import NIOCore
import Shared

extension Response {
    /// A JSON body (`application/json`).
    package static func json(_ value: JSONValue, status: HTTPResponse.Status = .ok) -> Response {
        json(bytes: value.serialized, status: status)
    }

    /// A JSON body already encoded (a Swift type's answer).
    package static func json(bytes: [UInt8], status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// An error in the API's one shape: `{"error":{"code","message","details":[]}}`.
    package static func jsonError(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        json(
            .object([
                JSONMember("error", .object([
                    JSONMember("code", .string(code)), JSONMember("message", .string(message)), JSONMember("details", .array([])),
                ]))
            ]), status: status)
    }
}
