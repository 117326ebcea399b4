import Foundation
import Hummingbird
import ServiceSupport
import Shared

/// Every error the API returns. Herald's own endpoints answer in one shape:
/// `{"error":{"code":…,"message":…,"details":[{"path","code","message"}]}}`; the compatibility endpoints in their
/// vendor's, which its client libraries read (`Dialect`).
struct APIError: Error, HTTPResponseError, CodedError {
    var status: HTTPResponse.Status
    var code: String
    var message: String
    var details = ProblemList()
    var headers: HTTPFields = [:]
    var dialect: Dialect = .herald

    enum Dialect {
        case herald
        /// `{"message": …, "errors": [{"type": …, "input_array": …, "index": …, "path": …, "code": …}]}`: braze-client
        /// raises on a `message` other than `success`.
        case braze
        /// `{"code": …, "message": …, "details": […]}`: Segment's and RudderStack's libraries read `code` and
        /// `message`.
        case segment
    }

    /// The same error in another API's shape.
    func `in`(_ dialect: Dialect) -> APIError {
        var error = self
        error.dialect = dialect
        return error
    }

    func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers = headers
        headers[.contentType] = "application/json"
        let (list, omitted) = details.reported
        let body: JSONValue
        switch dialect {
        case .herald:
            var error = [
                JSONMember("code", .string(code)), JSONMember("message", .string(message)), JSONMember("details", list),
            ]
            if omitted > 0 { error.append(JSONMember("details_omitted", .number(String(omitted)))) }
            body = .object([JSONMember("error", .object(error))])
        case .braze:
            body = .object([
                JSONMember("message", .string(message)), JSONMember("code", .string(code)),
                JSONMember("errors", .array(details.kept.map(Self.brazeError))),
            ])
        case .segment:
            body = .object([JSONMember("code", .string(code)), JSONMember("message", .string(message)), JSONMember("details", list)])
        }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: body.serialized)))
    }

    /// A problem as Braze lists one (`type` is its message; `input_array` and `index` from a path such as
    /// `attributes[2].email`), with Herald's path and code beside.
    static func brazeError(_ problem: Problem) -> JSONValue {
        var members = [JSONMember("type", .string(problem.message))]
        if let bracket = problem.path.firstIndex(of: "["), let close = problem.path[bracket...].firstIndex(of: "]"),
            let index = Int(problem.path[problem.path.index(after: bracket)..<close])
        {
            members.append(JSONMember("input_array", .string(String(problem.path[..<bracket]))))
            members.append(JSONMember("index", .number(String(index))))
        }
        members.append(JSONMember("path", .string(problem.path)))
        members.append(JSONMember("code", .string(problem.code)))
        return .object(members)
    }

    static func unauthorized(_ code: String, _ message: String) -> APIError {
        APIError(status: .unauthorized, code: code, message: message)
    }

    static func badRequest(_ code: String, _ message: String, details: [Problem] = []) -> APIError {
        APIError(status: .badRequest, code: code, message: message, details: ProblemList(details))
    }

    static func validation(_ problems: [Problem]) -> APIError { validation(ProblemList(problems)) }

    static func validation(_ problems: ProblemList) -> APIError {
        APIError(
            status: .unprocessableContent, code: "validation_failed",
            message: "nothing was stored: every write in the request is invalid", details: problems)
    }
}
