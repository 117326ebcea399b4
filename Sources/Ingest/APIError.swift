import Foundation
import Hummingbird
import Shared

/// Every error the API returns, in one shape: `{"error":{"code":…,"message":…,"details":[{"path","code","message"}]}}`.
struct APIError: Error, HTTPResponseError {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var details: [Problem] = []
    var headers: HTTPFields = [:]

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        let (list, omitted) = details.reported
        var error = [
            JSONMember("code", .string(code)), JSONMember("message", .string(message)), JSONMember("details", list),
        ]
        if omitted > 0 { error.append(JSONMember("details_omitted", .number(String(omitted)))) }
        let body = JSONValue.object([JSONMember("error", .object(error))])
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body.serialized)))
    }

    static func unauthorized(_ code: String, _ message: String) -> APIError {
        APIError(status: .unauthorized, code: code, message: message)
    }

    static func badRequest(_ code: String, _ message: String, details: [Problem] = []) -> APIError {
        APIError(status: .badRequest, code: code, message: message, details: details)
    }

    static func validation(_ problems: [Problem]) -> APIError {
        APIError(
            status: .unprocessableContent, code: "validation_failed",
            message: "nothing was stored: every write in the request is invalid", details: problems)
    }
}
