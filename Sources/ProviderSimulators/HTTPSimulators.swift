import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Shared
import Synchronization

/// The HTTP/1.1 simulators on one port: Google's OAuth2 token endpoint and FCM's HTTP v1 send, an SMS API of
/// Twilio's shape, and the control API (`/_sim/…`) that records and faults go through.
package enum HTTPSimulators {
    /// The router with every endpoint.
    package static func router(state: SimulatorState) -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        let issued = Atomic<Int>(0)

        // OAuth2 JWT grant (the service account's token_uri).
        router.post("token") { request, _ in
            let form = FormEncoding.fields(Array(buffer: try await request.body.collect(upTo: 1 << 20)))
            guard form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer",
                let assertion = form["assertion"], assertion.split(separator: ".").count == 3
            else {
                return json(.badRequest, #"{"error":"invalid_grant","error_description":"Invalid JWT"}"#)
            }
            let number = issued.add(1, ordering: .relaxed).newValue
            return json(.ok, #"{"access_token":"sim-token-\#(number)","expires_in":3599,"token_type":"Bearer"}"#)
        }

        // FCM HTTP v1.
        router.post("v1/projects/:project/messages:send") { request, context in
            let body = Array(buffer: try await request.body.collect(upTo: 1 << 20))
            let message = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
            let token = (message?["message"] as? [String: Any])?["token"] as? String ?? ""
            var status = 200
            var code: String?
            if !(request.headers[.authorization] ?? "").hasPrefix("Bearer sim-token-") {
                status = 401
                code = "UNAUTHENTICATED"
            } else if token.isEmpty {
                status = 400
                code = "INVALID_ARGUMENT"
            } else if state.isInvalid(token) {
                status = 404
                code = "UNREGISTERED"
            }
            var retryAfter: Int?
            if status == 200, let fault = try await applyFault("fcm", state) {
                status = fault.status
                code = fault.reason ?? (status == 429 ? "QUOTA_EXCEEDED" : status >= 500 ? "UNAVAILABLE" : "INVALID_ARGUMENT")
                retryAfter = fault.retryAfter
            }
            state.record(.init(
                provider: "fcm", target: token, headers: headers(request), body: String(decoding: body, as: UTF8.self),
                status: status, at: Date()))
            guard let code else {
                let project = context.parameters.get("project") ?? ""
                return json(.ok, #"{"name":"projects/\#(project)/messages/\#(UUID().uuidString)"}"#)
            }
            var response = json(
                .init(code: status),
                #"{"error":{"code":\#(status),"message":"simulated","status":"\#(status == 404 ? "NOT_FOUND" : code)","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#(code)"}]}}"#)
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }

        // SMS API (Twilio's shape).
        router.post("2010-04-01/Accounts/:account/Messages.json") { request, context in
            let body = Array(buffer: try await request.body.collect(upTo: 1 << 20))
            let form = FormEncoding.fields(body)
            let to = form["To"] ?? ""
            var status = 201
            var code: Int?
            let authorization = request.headers[.authorization] ?? ""
            let credentials = authorization.hasPrefix("Basic ")
                ? Data(base64Encoded: String(authorization.dropFirst(6))).map { String(decoding: $0, as: UTF8.self) } : nil
            if credentials?.hasPrefix("\(context.parameters.get("account") ?? ""):") != true {
                status = 401
                code = 20003
            } else if !to.hasPrefix("+") {
                status = 400
                code = 21211
            } else if state.isUnsubscribed(to) {
                status = 400
                code = 21610
            } else if state.isInvalid(to) {
                status = 400
                code = 21614
            }
            var retryAfter: Int?
            if status == 201, let fault = try await applyFault("sms", state) {
                status = fault.status
                code = Int(fault.reason ?? "") ?? (status == 429 ? 20429 : 20500)
                retryAfter = fault.retryAfter
            }
            state.record(.init(
                provider: "sms", target: to, headers: headers(request), body: String(decoding: body, as: UTF8.self),
                status: status, at: Date()))
            guard let code else {
                return json(.created, #"{"sid":"SM\#(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased())","status":"queued","to":"\#(to)"}"#)
            }
            var response = json(.init(code: status), #"{"code":\#(code),"message":"simulated error","status":\#(status)}"#)
            if let retryAfter { response.headers[.retryAfter] = String(retryAfter) }
            return response
        }

        WebhookReceiver.register(on: router, state: state)

        // Control.
        router.put("_sim/webhook-secrets") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 16)
            state.webhookSecrets = (try? JSONDecoder().decode([String].self, from: Data(Array(buffer: body)))) ?? []
            return json(.ok, #"{"ok":true}"#)
        }
        router.get("_sim/received/:provider") { _, context in
            let received = state.received(context.parameters.get("provider") ?? "")
            let encoder = JSONEncoder()
            encoder.dateEncodingStrategy = .iso8601
            let data = try encoder.encode(["count": state.count(context.parameters.get("provider") ?? "")])
            let list = try encoder.encode(received)
            return json(.ok, "{\"summary\":\(String(decoding: data, as: UTF8.self)),\"messages\":\(String(decoding: list, as: UTF8.self))}")
        }
        router.put("_sim/fault/:provider") { request, context in
            let body = try await request.body.collect(upTo: 1 << 16)
            guard let fault = try? JSONDecoder().decode(SimulatorState.Fault.self, from: Data(Array(buffer: body))) else {
                return json(.badRequest, #"{"error":"expected {\"status\":503,\"reason\":null,\"retry_after\":null,\"delay_ms\":null,\"count\":null}"}"#)
            }
            state.setFault(context.parameters.get("provider") ?? "", fault)
            return json(.ok, #"{"ok":true}"#)
        }
        router.delete("_sim/fault/:provider") { _, context in
            state.setFault(context.parameters.get("provider") ?? "", nil)
            return json(.ok, #"{"ok":true}"#)
        }
        router.post("_sim/invalid") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 20)
            state.markInvalid((try? JSONDecoder().decode([String].self, from: Data(Array(buffer: body)))) ?? [])
            return json(.ok, #"{"ok":true}"#)
        }
        router.post("_sim/unsubscribed") { request, _ in
            let body = try await request.body.collect(upTo: 1 << 20)
            state.markUnsubscribed((try? JSONDecoder().decode([String].self, from: Data(Array(buffer: body)))) ?? [])
            return json(.ok, #"{"ok":true}"#)
        }
        router.post("_sim/release") { _, _ in
            state.releaseHeld()
            return json(.ok, #"{"ok":true}"#)
        }
        router.post("_sim/reset") { _, _ in
            state.reset()
            return json(.ok, #"{"ok":true}"#)
        }
        return router
    }

    /// The fault for the next request, after its delay (or once released, when held); nil when none or when it only
    /// delays.
    static func applyFault(_ provider: String, _ state: SimulatorState) async throws -> SimulatorState.Fault? {
        guard let fault = state.takeFault(provider) else { return nil }
        if fault.held == true {
            await withCheckedContinuation { (released: CheckedContinuation<Void, Never>) in state.hold { released.resume() } }
        } else if let delay = fault.delayMilliseconds, delay > 0 {
            try await Task.sleep(for: .milliseconds(delay))
        }
        return fault.status == 0 ? nil : fault
    }

    static func headers(_ request: Request) -> [String: String] {
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.canonicalName] = field.value }
        return headers
    }

    static func json(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// Runs the HTTP simulators on `port` (0: any) until cancelled; `onListening` gets the bound port.
    package static func application(
        state: SimulatorState, host: String = "127.0.0.1", port: Int = 0, onListening: @escaping @Sendable (Int) async -> Void
    ) -> some Service {
        Application(
            router: router(state: state),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: "herald-simulators"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: Logger(label: "herald.simulators.http"))
    }
}
