import Foundation
import HTTPTypes
import Hummingbird
import Liquid
import Logging
import NIOCore
import ServiceSupport
import Shared

/// What recipients and providers call: one-click unsubscribe (RFC 8058) and inbound SMS replies. An SMS reply names a
/// phone number, which profiles in any partition may hold: the instance it reaches records it in the partitions it runs
/// and asks the owners of the others to (`PartitionPeers`).
struct RecipientEndpoints: Sendable {
    let partitions: NotifierPartitions
    /// The other instances, for the partitions this one does not run.
    let peers: PartitionPeers
    /// How many partitions the topics have (`HERALD_TOPIC_PARTITIONS`).
    let partitionCount: Int32
    let producer: KafkaProducer
    let publicURL: String
    let links: UnsubscribeLinks?
    let smsWebhookToken: String?
    /// Whose a reply is, by the number it was sent to.
    let smsSenders: SMSSenders
    /// How long a body may take to arrive (then the connection is closed).
    var bodyTimeout: Duration = .seconds(30)
    let logger: Logger

    func register(on router: Router<ServiceRequestContext>) {
        let partitions = partitions
        peers.answer(RecipientChange.self, at: RecipientChange.path, on: router) { change, numbers in
            try await partitions.recordRecipientFeedback(change, in: numbers)
        }
        // GET shows a confirmation (link scanners fetch URLs; only a POST unsubscribes).
        router.get("v1/unsubscribe/:token") { _, context in
            guard let claim = links?.verify(context.parameters.get("token") ?? "") else { return Self.invalidLink }
            let action = "\(publicURL)/v1/unsubscribe/\(context.parameters.get("token") ?? "")"
            return Self.html(.ok, """
                <!doctype html><meta charset="utf-8"><title>Unsubscribe</title>
                <p>Stop marketing email to \(Self.escape(claim.address))?</p>
                <form method="post" action="\(Self.escape(action))"><button type="submit">Unsubscribe</button></form>
                """)
        }
        router.post("v1/unsubscribe/:token") { request, context in
            guard let claim = links?.verify(context.parameters.get("token") ?? "") else { return Self.invalidLink }
            _ = try await body(request, context)
            try await unsubscribe(claim)
            return Self.html(.ok, "<!doctype html><meta charset=\"utf-8\"><p>You will not receive marketing email any more.</p>")
        }
        router.post("v1/webhooks/sms") { request, context in
            let body = try await body(request, context)
            let form = FormEncoding.decode(Array(buffer: body))
            // Never unsigned: anyone reaching this port could otherwise STOP or START any number.
            guard let token = smsWebhookToken else {
                return Response.jsonError(
                    .forbidden, "sms_webhook_not_configured",
                    "this notifier has no SMS webhook token (HERALD_SMS_WEBHOOK_TOKEN or the SMS provider's token): replies are refused")
            }
            let signature = request.headers[.twilioSignature] ?? ""
            // Twilio signs the webhook's URL as configured, query string included (`?project=demo`).
            let url = "\(publicURL)/v1/webhooks/sms" + (request.uri.query.map { "?\($0)" } ?? "")
            guard SMSReplies.verify(signature: signature, url: url, parameters: form, token: token)
            else { return Response.jsonError(.forbidden, "invalid_signature", "X-Twilio-Signature does not match the request") }
            guard let from = form.first(where: { $0.0 == "From" })?.1, from.hasPrefix("+"), from.count >= 2 else {
                return Response.jsonError(.badRequest, "invalid_field", "From: expected an E.164 phone number")
            }
            guard let to = form.first(where: { $0.0 == "To" })?.1, (try? Rules.phone(to)) != nil else {
                return Response.jsonError(.badRequest, "invalid_field", "To: expected the E.164 number the reply was sent to")
            }
            let text = form.first(where: { $0.0 == "Body" })?.1 ?? ""
            if let outcome = SMSReplies.outcome(text) {
                // Only the projects that send from the number replied to: the same person may hear from several.
                let projects = smsSenders.projects(sendingFrom: to)
                let change = RecipientChange(
                    key: nil, phoneNumber: from, projects: projects, channel: .sms, outcome: outcome, address: from,
                    reason: "reply \(text.trimmingCharacters(in: .whitespacesAndNewlines).uppercased())", at: Date())
                let recorded: Int
                do {
                    recorded = projects.isEmpty ? 0 : try await record(change)
                } catch let unavailable as PartitionPeers.Unavailable {
                    // The provider is asked to try again; the partitions that recorded it record it again (a state, not a count).
                    logger.warning("sms reply not recorded everywhere: a partition is not answered", metadata: ["reason": "\(unavailable)"])
                    return unavailable.response
                }
                logger.info(
                    "sms reply", metadata: ["outcome": "\(outcome.rawValue)", "profiles": "\(recorded)"])
                if projects.isEmpty {
                    logger.warning(
                        "sms reply to a number no project sends from (HERALD_SMS_FROM, a project's sms_from): ignored",
                        metadata: ["outcome": "\(outcome.rawValue)"])
                } else if recorded == 0 {
                    logger.warning("sms reply from a number no profile holds", metadata: ["outcome": "\(outcome.rawValue)"])
                }
            }
            return Response(
                status: .ok, headers: [.contentType: "text/xml"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response></Response>")))
        }
    }

    /// In `partitions` (every one by default), here and at their owners: how many profiles the change names.
    private func record(_ change: RecipientChange, in partitions: [Int32]? = nil) async throws -> Int {
        let local = self.partitions
        let counts: [Int] = try await peers.ask(change, about: partitions ?? Array(0..<partitionCount), at: RecipientChange.path) {
            try await local.recordRecipientFeedback(change, in: $0)
        }
        return counts.reduce(0, +)
    }

    /// Recorded by the partition that holds the profile (here, or asked of its owner), which reports it only if it
    /// changes the state: a link followed again is no new report. A profile no notifier holds yet (its snapshot is
    /// still on its way), or a partition that is moving, gets the report straight away, so that no unsubscribe is lost.
    private func unsubscribe(_ claim: UnsubscribeLinks.Claim) async throws {
        let change = RecipientChange(
            key: claim.profileKey, phoneNumber: nil, projects: nil, channel: .email, outcome: .unsubscribed, address: claim.address,
            reason: "one-click unsubscribe", at: Date())
        let partition = KeyPartitioner.partition(of: claim.profileKey, partitions: partitionCount)
        do {
            if try await record(change, in: [partition]) > 0 { return }
        } catch let unavailable as PartitionPeers.Unavailable {
            logger.info("unsubscribe reported without its partition: it is moving", metadata: ["reason": "\(unavailable)"])
        }
        let report = DeliveryReport.recipientFeedback(
            key: claim.profileKey, customID: nil, channel: .email, outcome: .unsubscribed, address: claim.address,
            reason: "one-click unsubscribe", sendID: claim.sendID, at: change.at)
        _ = try await producer.send([
            KafkaOutgoingRecord(topic: HeraldTopic.deliveries.name, key: Array(claim.profileKey.utf8), value: try Wire.encode(report))
        ])
    }

    /// The body, up to 64 KiB; `BodyTimeoutError` when it did not arrive within `bodyTimeout` (the connection is then
    /// closed).
    private func body(_ request: Request, _ context: ServiceRequestContext) async throws -> ByteBuffer {
        try await BodyDeadline.collect(request, upTo: 64 * 1024, within: bodyTimeout, channel: context.channel)
    }

    static var invalidLink: Response { .jsonError(.notFound, "invalid_link", "this unsubscribe link is not valid") }


    static func html(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "text/html; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// Text and attribute values of the page, escaped as Liquid's `escape` does (`'` too).
    static func escape(_ text: String) -> String { LiquidFilters.escapeHTML(text) }
}
