import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceSupport
import Shared

/// What an email's recipient's mail client calls: the open pixel and the tracked links (`TrackingLinks`).
///
///     GET|HEAD /v1/t/o/{token}   a 1×1 transparent GIF
///     GET|HEAD /v1/t/c/{token}   302 to the link's URL
///
/// Each valid request writes an `opened` or `clicked` report on `herald.deliveries` for the send's profile, its
/// campaign and experiment arm, marked when a machine made it (`MachineEngagement`); the orchestrator counts each
/// target's first human and first machine one. A token this notifier did not make gets 404, and no report.
struct TrackingEndpoints: Sendable {
    let links: TrackingLinks
    let producer: KafkaProducer
    /// Who the client is, behind the operator's proxies (`HERALD_TRUSTED_PROXIES`).
    let clients: ClientAddress
    var clock: @Sendable () -> Date = { Date() }
    let logger: Logger

    /// A 1×1 transparent GIF.
    static let pixel: [UInt8] = [
        0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF,
        0x21, 0xF9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2C, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0x02,
        0x02, 0x44, 0x01, 0x00, 0x3B,
    ]

    func register(on router: Router<ServiceRequestContext>) {
        for method in [HTTPTypes.HTTPRequest.Method.get, .head] {
            router.on("v1/t/o/:token", method: method) { request, context in
                guard let claim = links.verify(context.parameters.get("token") ?? ""), claim.link == nil else {
                    return refused("open")
                }
                await report(claim, request, context)
                return Response(
                    status: .ok, headers: [.contentType: "image/gif", .cacheControl: "no-store, private"],
                    body: ResponseBody(byteBuffer: ByteBuffer(bytes: Self.pixel)))
            }
            router.on("v1/t/c/:token", method: method) { request, context in
                guard let claim = links.verify(context.parameters.get("token") ?? ""), let url = claim.url else {
                    return refused("click")
                }
                await report(claim, request, context)
                return Response(
                    status: .found,
                    headers: [.location: url, .cacheControl: "no-store, private", HTTPField.Name("Referrer-Policy")!: "no-referrer"])
            }
        }
    }

    private func refused(_ kind: String) -> Response {
        Counter(label: "herald_tracking_refused_total", dimensions: [("kind", kind)]).increment()
        return .jsonError(.notFound, "invalid_link", "this link is not valid")
    }

    /// The report, once the broker has it. The recipient gets the page or the image either way: a report the broker
    /// refused is logged and counted (`herald_tracking_reports_lost_total`), not retried.
    private func report(_ claim: TrackingLinks.Claim, _ request: Request, _ context: ServiceRequestContext) async {
        let now = clock()
        let kind: MachineEngagement.Kind = claim.url == nil ? .open : .click
        let address = clients.of(
            peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[values: HTTPField.Name("X-Forwarded-For")!])
        let machine = MachineEngagement.reason(
            kind, method: request.method.rawValue, userAgent: request.headers[.userAgent], address: address,
            secondsSinceSend: now.timeIntervalSince1970 - Double(claim.sentAt))
        let report = Self.report(claim, machine: machine != nil, at: now)
        Counter(
            label: "herald_tracking_requests_total",
            dimensions: [("campaign", "\(report.project)/\(claim.campaign ?? "")"), ("kind", kind.rawValue), ("machine", machine ?? "no")]
        ).increment()
        do {
            _ = try await producer.send(
                KafkaOutgoingRecord(topic: HeraldTopic.deliveries.name, key: Array(claim.profileKey.utf8), value: try Wire.encode(report)))
        } catch {
            Counter(label: "herald_tracking_reports_lost_total").increment()
            logger.warning("tracking report not written", metadata: ["send_id": "\(claim.sendID)", "error": "\(error)"])
        }
    }

    /// The `opened` or `clicked` report of a tracked request: its id names the target and whether a machine made it,
    /// so that each target counts one of each at most.
    static func report(_ claim: TrackingLinks.Claim, machine: Bool, at time: Date) -> DeliveryReport {
        let outcome: DeliveryReport.Outcome = claim.url == nil ? .opened : .clicked
        var report = DeliveryReport(
            id: "\(claim.sendID)/\(claim.targetID)/\(outcome.rawValue)\(machine ? "/machine" : "")", sendID: claim.sendID,
            project: ProfileKey.project(of: claim.profileKey), customID: nil, channel: .email, outcome: outcome, at: time)
        report.targetID = claim.targetID
        report.profileKey = claim.profileKey
        report.campaign = claim.campaign
        report.experiment = claim.experiment
        report.variant = claim.variant
        report.machine = machine
        report.action = claim.link.map { "link \($0)" }
        return report
    }
}
