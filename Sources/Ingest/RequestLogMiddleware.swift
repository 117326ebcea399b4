import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceSupport
import Shared

/// Gives every request an id (the caller's `X-Request-Id` if sane, else a new one), returns it, and logs one JSON line
/// per request: method, route (the template, so that a custom ID in a path is not logged), status, duration. No
/// bodies, keys or personal data.
struct RequestLogMiddleware: RouterMiddleware {
    typealias Context = IngestContext

    /// Whether the `Prefer` headers ask for `handling=strict` (preferences are comma-separated, case-insensitive
    /// tokens, with optional parameters after `;`).
    static func prefersStrictHandling(_ values: [String]) -> Bool {
        values.flatMap { $0.split(separator: ",") }.contains { preference in
            let token = preference.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            return token?.replacingOccurrences(of: " ", with: "") == "handling=strict"
        }
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        var context = context
        let supplied = request.headers[.requestID]
        context.requestID =
            supplied.flatMap { id in
                Rules.isVisibleASCII(id, length: 1...128) ? id : nil
            } ?? UUID().uuidString.lowercased()
        context.logger[metadataKey: "request_id"] = .string(context.requestID)
        context.strict = Self.prefersStrictHandling(request.headers[values: .prefer])
        let started = ContinuousClock.now
        let status: Int
        do {
            var response = try await next(request, context)
            response.headers[.requestID] = context.requestID
            if context.strict { response.headers[.preferenceApplied] = "handling=strict" }
            status = response.status.code
            log(request, context: context, status: status, started: started)
            return response
        } catch let error as APIError {
            var error = error
            error.headers[.requestID] = context.requestID
            if context.strict { error.headers[.preferenceApplied] = "handling=strict" }
            log(request, context: context, status: error.status.code, started: started, code: error.code)
            throw error
        } catch let error as any HTTPResponseError {
            log(request, context: context, status: error.status.code, started: started, code: (error as? any CodedError)?.code)
            throw error
        } catch {
            log(request, context: context, status: 500, started: started)
            throw error
        }
    }

    private func log(_ request: Request, context: Context, status: Int, started: ContinuousClock.Instant, code: String? = nil) {
        let route = context.endpointPath ?? "unmatched"
        var metadata: Logger.Metadata = [
            "method": .string(request.method.rawValue), "route": .string(route),
            "status": .stringConvertible(status),
            "duration_ms": .stringConvertible((ContinuousClock.now - started).milliseconds),
        ]
        if let code { metadata["error_code"] = .string(code) }
        // Health probes and scrapes come every few seconds: keep them out of the info log.
        let level: Logger.Level = status >= 500 ? .warning : (route == "/health" || route == "/metrics") ? .debug : .info
        context.logger.log(level: level, "request", metadata: metadata)
    }
}
