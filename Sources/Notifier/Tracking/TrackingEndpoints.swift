import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import ServiceSupport
import Shared
import Synchronization

/// What an email's recipient's mail client calls: the open pixel and the tracked links (`TrackingLinks`).
///
///     GET|HEAD /v1/t/o/{token}   a 1×1 transparent GIF
///     GET|HEAD /v1/t/c/{token}   302 to the link's URL
///
/// Each valid request writes an `opened` or `clicked` report on `herald.deliveries` for the send's profile, its
/// campaign and experiment arm, marked when a machine made it (`MachineEngagement`); the orchestrator counts each
/// target's first human and first machine one. A token this notifier did not make gets 404, and no report.
///
/// The answer does not wait for the broker: a click is a person waiting for a page, and the broker's acknowledgement
/// took 6 ms at the median and 400 ms at the 99th percentile on the embedded broker (scripts/bench/tracking, 16
/// connections: 2,506 clicks/s and a p99 of 389 ms waiting, 7,986/s and 6.7 ms not). At most `maxUnacknowledged`
/// reports wait for the broker at once; beyond, a request waits for its own, so that a broker outage slows clicks
/// rather than filling memory. A report the broker refuses is counted (`herald_tracking_reports_lost_total`); one in
/// flight when the process is killed is lost.
///
/// A token is reported only within `reportWindow` of its send (the dedupe window, `HERALD_DEDUPE_RETENTION_DAYS`): a
/// target's report is one by its id only while the orchestrator remembers the id, so an old email's link followed
/// again, once forgotten, counted again. Past the window the link still leads to its page and the pixel still
/// answers, but nothing is reported (`herald_tracking_refused_total{kind="expired"}`).
struct TrackingEndpoints: Sendable {
    let links: TrackingLinks
    let producer: KafkaProducer
    /// Who the client is, behind the operator's proxies (`HERALD_TRUSTED_PROXIES`).
    let clients: ClientAddress
    var clock: @Sendable () -> Date = { Date() }
    /// How long after its send a token's requests are reported.
    var reportWindow: Duration = .seconds(30 * 86_400)
    let logger: Logger
    /// Reports produced and not acknowledged yet.
    let unacknowledged = Unacknowledged()

    static let maxUnacknowledged = 10_000

    final class Unacknowledged: Sendable {
        private let count = Mutex(0)

        /// Takes a slot; false when every one is taken.
        func reserve() -> Bool {
            count.withLock { count in
                guard count < TrackingEndpoints.maxUnacknowledged else { return false }
                count += 1
                return true
            }
        }

        func release() { count.withLock { $0 -= 1 } }

        var current: Int { count.withLock { $0 } }
    }

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
                    headers: [.location: url, .cacheControl: "no-store, private", .referrerPolicy: "no-referrer"])
            }
        }
    }

    private func refused(_ kind: String) -> Response {
        Counter(label: "herald_tracking_refused_total", dimensions: [("kind", kind)]).increment()
        return .jsonError(.notFound, "invalid_link", "this link is not valid")
    }

    /// The report, handed to the producer (above: the answer does not wait for the broker).
    private func report(_ claim: TrackingLinks.Claim, _ request: Request, _ context: ServiceRequestContext) async {
        let now = clock()
        guard now.timeIntervalSince1970 - Double(claim.sentAt) <= reportWindow.timeInterval else {
            Counter(label: "herald_tracking_refused_total", dimensions: [("kind", "expired")]).increment()
            return
        }
        let kind: MachineEngagement.Kind = claim.url == nil ? .open : .click
        let address = clients.of(
            peer: context.remoteAddress?.ipAddress, forwardedFor: request.headers[values: .forwardedFor])
        let machine = MachineEngagement.reason(
            kind, method: request.method.rawValue, userAgent: request.headers[.userAgent], address: address,
            secondsSinceSend: now.timeIntervalSince1970 - Double(claim.sentAt))
        let report = Self.report(claim, machine: machine != nil, at: now)
        Counter(
            label: "herald_tracking_requests_total",
            dimensions: [("campaign", "\(report.project)/\(claim.campaign ?? "")"), ("kind", kind.rawValue), ("machine", machine ?? "no")]
        ).increment()
        guard let value = try? Wire.encode(report) else { return }
        let record = KafkaOutgoingRecord(topic: HeraldTopic.deliveries.name, key: Array(claim.profileKey.utf8), value: value)
        guard unacknowledged.reserve() else { return await produce(record, sendID: claim.sendID) }
        Task { [self] in
            await produce(record, sendID: claim.sendID)
            unacknowledged.release()
        }
    }

    private func produce(_ record: KafkaOutgoingRecord, sendID: String) async {
        do {
            _ = try await producer.send(record)
        } catch {
            Counter(label: "herald_tracking_reports_lost_total").increment()
            logger.warning("tracking report not written", metadata: ["send_id": "\(sendID)", "error": "\(error)"])
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
