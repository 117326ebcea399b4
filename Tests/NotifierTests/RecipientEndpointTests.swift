import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import ProviderSimulators
import ServiceSupport
import Shared
import Testing

@testable import Notifier

/// The notifier's HTTP endpoints that recipients and providers call, through Hummingbird's router, over the harness's
/// partitions and broker.
@Suite("Notifier: unsubscribe and SMS webhook endpoints", .serialized, .timeLimit(.minutes(5)))
struct RecipientEndpointTests {
    static let publicURL = "https://notify.example.com"
    static let links = UnsubscribeLinks(secret: "0123456789abcdef-secret", publicURL: publicURL)

    /// The sending numbers: `demo` sends from the notifier's number (`HERALD_SMS_FROM`), `shop` from its own.
    static let senders = SMSSenders(defaultFrom: "+15550001111", own: ["shop": "+15550002222"], projects: ["demo", "shop"])

    func application(_ harness: NotifierHarness, smsToken: String? = "sms-token") -> some ApplicationProtocol {
        let router = Router(context: ServiceRequestContext.self)
        RecipientEndpoints(
            partitions: harness.partitions, peers: harness.peers, partitionCount: 1, producer: harness.producer, publicURL: Self.publicURL, links: Self.links,
            smsWebhookToken: smsToken, smsSenders: Self.senders, logger: harness.logger
        ).register(on: router)
        return Application(router: router)
    }

    @Test("GET shows a confirmation and changes nothing; POST unsubscribes: the queued marketing email is suppressed and reported")
    func oneClickUnsubscribe() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        try await harness.send(sendRequest(id: "mail-1", channel: .email, content: ["subject": "S", "text": "T"]))
        let token = Self.links.token(.init(profileKey: "demo/paul", address: "paul@example.com", sendID: "mail-0"))
        try await application(harness).test(.router) { client in
            try await client.execute(uri: "/v1/unsubscribe/\(token)", method: .get) { response in
                #expect(response.status == .ok)
                let page = String(buffer: response.body)
                #expect(page.contains("paul@example.com") && page.contains(#"method="post""#))
                #expect(page.contains("\(Self.publicURL)/v1/unsubscribe/\(token)"))
            }
            try await client.execute(uri: "/v1/unsubscribe/\(token)x", method: .post) { response in
                #expect(response.status == .notFound)
                #expect(String(buffer: response.body).contains("invalid_link"))
            }
            try await client.execute(uri: "/v1/unsubscribe/\(token)", method: .get) { response in
                #expect(response.status == .ok)
            }
            // RFC 8058: the mail client POSTs "List-Unsubscribe=One-Click".
            try await client.execute(
                uri: "/v1/unsubscribe/\(token)", method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: "List-Unsubscribe=One-Click")
            ) { response in
                #expect(response.status == .ok)
            }
        }
        try await harness.startWorkers([.email])
        let reports = try await harness.reports { $0.contains { $0.sendID == "mail-1" } }
        let unsubscribed = reports.filter { $0.outcome == .unsubscribed }
        #expect(unsubscribed.count == 1)
        #expect(unsubscribed.first?.profileKey == "demo/paul" && unsubscribed.first?.channel == .email)
        #expect(unsubscribed.first?.address == "paul@example.com" && unsubscribed.first?.reason == "one-click unsubscribe")
        #expect(reports.first { $0.sendID == "mail-1" }?.outcome == .suppressed)
        #expect(harness.simulators.count("smtp") == 0)
        await harness.shutdown()
    }

    @Test("an unsubscribe for a profile no partition here holds is still reported, with the send it came from")
    func unsubscribeElsewhere() async throws {
        let harness = try await NotifierHarness()
        let token = Self.links.token(.init(profileKey: "demo/zoe", address: "zoe@example.com", sendID: "mail-9"))
        try await application(harness).test(.router) { client in
            try await client.execute(uri: "/v1/unsubscribe/\(token)", method: .post) { response in
                #expect(response.status == .ok)
            }
        }
        let reports = try await harness.reports { $0.contains { $0.outcome == .unsubscribed } }
        let report = try #require(reports.first)
        #expect(report.profileKey == "demo/zoe" && report.sendID == "mail-9" && report.project == "demo")
        await harness.shutdown()
    }

    /// A person repeating themselves: a mail client following a link twice, a phone sending STOP again. 50 POSTs of one
    /// link once made 50 `unsubscribed` records on herald.deliveries; each change of state is one report now.
    @Test("an unsubscribe link followed again, a STOP or START sent again: one report per change of state")
    func repeatedChangesReportOnce() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        let url = "\(Self.publicURL)/v1/webhooks/sms"
        let token = Self.links.token(.init(profileKey: "demo/paul", address: "paul@example.com", sendID: "mail-0"))
        @Sendable func reply(_ text: String) -> [(String, String)] { [("From", "+33612345678"), ("To", "+15550001111"), ("Body", text)] }
        try await application(harness).test(.router) { client in
            for _ in 0..<5 {
                try await client.execute(uri: "/v1/unsubscribe/\(token)", method: .post) { #expect($0.status == .ok) }
            }
            for text in ["STOP", "stop", "STOP", "START", "START", "UNSTOP"] {
                let form = reply(text)
                let answer = try await Self.postSMS(form, signature: SMSReplies.signature(url: url, parameters: form, token: "sms-token"), client: client)
                #expect(answer.0 == .ok)
            }
            // The last change, which the wait below ends on: everything before it was produced before it.
            let form = reply("STOP")
            _ = try await Self.postSMS(form, signature: SMSReplies.signature(url: url, parameters: form, token: "sms-token"), client: client)
        }
        let reports = try await harness.reports { $0.filter { $0.channel == .sms }.count >= 3 }
        #expect(reports.filter { $0.channel == .email }.map(\.outcome) == [.unsubscribed])
        #expect(reports.filter { $0.channel == .sms }.map(\.outcome) == [.unsubscribed, .subscribed, .unsubscribed])
        await harness.shutdown()
    }

    @Sendable static func postSMS(
        _ fields: [(String, String)], signature: String?, path: String = "/v1/webhooks/sms", client: any TestClientProtocol
    ) async throws
        -> (HTTPResponse.Status, String)
    {
        var headers: HTTPFields = [.contentType: "application/x-www-form-urlencoded"]
        if let signature { headers[HTTPField.Name("X-Twilio-Signature")!] = signature }
        return try await client.execute(
            uri: path, method: .post, headers: headers, body: ByteBuffer(bytes: FormEncoding.encode(fields))
        ) { ($0.status, String(buffer: $0.body)) }
    }

    @Test("without a webhook token, SMS replies are refused, signed or not: nobody can STOP a number unsigned")
    func smsWebhookWithoutToken() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        let stop = [("From", "+33612345678"), ("Body", "STOP")]
        try await application(harness, smsToken: nil).test(.router) { client in
            let unsigned = try await Self.postSMS(stop, signature: nil, client: client)
            #expect(unsigned.0 == .forbidden && unsigned.1.contains("sms_webhook_not_configured"), "\(unsigned)")
            let signed = try await Self.postSMS(stop, signature: "anything", client: client)
            #expect(signed.0 == .forbidden)
        }
        // Nothing was recorded: an SMS send still goes out.
        try await harness.startWorkers([.sms])
        try await harness.send(sendRequest(id: "sms-after", channel: .sms, content: ["text": "Sale"]))
        let reports = try await harness.reports { $0.contains { $0.sendID == "sms-after" } }
        #expect(reports.first { $0.sendID == "sms-after" }?.outcome == .sent)
        #expect(!reports.contains { $0.outcome == .unsubscribed })
        await harness.shutdown()
    }

    /// Signatures computed by Twilio's own validator (twilio 9.8.7, `RequestValidator("sms-token").compute_signature(url,
    /// {"From": "+33612345678", "To": "+15550001111", "Body": " stop "})`), which signs the URL as configured in its
    /// console, query string included.
    @Test("a webhook URL with a query string: Twilio's signature over the whole URL is accepted, one without it refused")
    func smsWebhookWithQuery() async throws {
        let harness = try await NotifierHarness()
        let stop = [("From", "+33612345678"), ("To", "+15550001111"), ("Body", " stop ")]
        let path = "/v1/webhooks/sms?project=demo&note=a%20b"
        try await application(harness).test(.router) { client in
            let whole = try await Self.postSMS(stop, signature: "cohaLuF/1O8pHu1TYyRvKL8eLck=", path: path, client: client)
            #expect(whole.0 == .ok, "\(whole)")
            // Twilio's signature of the URL without its query does not sign this request.
            let partial = try await Self.postSMS(stop, signature: "8y+zFN4XC+K4ku03yH8mgU2n9EI=", path: path, client: client)
            #expect(partial.0 == .forbidden)
            let plain = try await Self.postSMS(stop, signature: "8y+zFN4XC+K4ku03yH8mgU2n9EI=", client: client)
            #expect(plain.0 == .ok, "\(plain)")
        }
        await harness.shutdown()
    }

    @Test("SMS replies: the signature is checked, From is validated, STOP unsubscribes and START subscribes again")
    func smsWebhook() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        let url = "\(Self.publicURL)/v1/webhooks/sms"
        
        let stop = [("From", "+33612345678"), ("To", "+15550001111"), ("Body", " stop ")]
        try await application(harness).test(.router) { client in
            let unsigned = try await Self.postSMS(stop, signature: nil, client: client)
            #expect(unsigned.0 == .forbidden && unsigned.1.contains("invalid_signature"))
            let wrong = try await Self.postSMS(stop, signature: SMSReplies.signature(url: url, parameters: stop, token: "other"), client: client)
            #expect(wrong.0 == .forbidden)
            let noTo = [("From", "+33612345678"), ("Body", "STOP")]
            let withoutTo = try await Self.postSMS(noTo, signature: SMSReplies.signature(url: url, parameters: noTo, token: "sms-token"), client: client)
            #expect(withoutTo.0 == .badRequest && withoutTo.1.contains("To"))
            let noFrom = [("Body", "STOP")]
            let missing = try await Self.postSMS(noFrom, signature: SMSReplies.signature(url: url, parameters: noFrom, token: "sms-token"), client: client)
            #expect(missing.0 == .badRequest && missing.1.contains("From"))
            let accepted = try await Self.postSMS(stop, signature: SMSReplies.signature(url: url, parameters: stop, token: "sms-token"), client: client)
            #expect(accepted.0 == .ok && accepted.1.contains("<Response>"))
        }
        try await harness.startWorkers([.sms])
        try await harness.send(sendRequest(id: "sms-1", channel: .sms, content: ["text": "Sale"]))
        _ = try await harness.reports { $0.contains { $0.sendID == "sms-1" } }
        let start = [("From", "+33612345678"), ("To", "+15550001111"), ("Body", "START")]
        try await application(harness).test(.router) { client in
            let accepted = try await Self.postSMS(start, signature: SMSReplies.signature(url: url, parameters: start, token: "sms-token"), client: client)
            #expect(accepted.0 == .ok)
        }
        try await harness.send(sendRequest(id: "sms-2", channel: .sms, content: ["text": "Sale"]))
        let reports = try await harness.reports { $0.contains { $0.sendID == "sms-2" } }
        #expect(reports.first { $0.sendID == "sms-1" }?.outcome == .suppressed)
        #expect(reports.first { $0.sendID == "sms-1" }?.reason == "unsubscribed")
        #expect(reports.first { $0.sendID == "sms-2" }?.outcome == .sent)
        #expect(reports.filter { $0.channel == .sms && $0.sendID == nil }.map(\.outcome) == [.unsubscribed, .subscribed])
        #expect(harness.simulators.count("sms") == 1)
        await harness.shutdown()
    }

    @Test("a STOP stops the project that sends from the number replied to, not every project that has the phone number")
    func smsReplyScopedByProject() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON())
        try await harness.contact(contactJSON(project: "shop"), key: "shop/paul")
        let url = "\(Self.publicURL)/v1/webhooks/sms"
        let toShop = [("From", "+33612345678"), ("To", "+15550002222"), ("Body", "STOP")]
        let elsewhere = [("From", "+33612345678"), ("To", "+15559999999"), ("Body", "STOP")]
        try await application(harness).test(.router) { client in
            let accepted = try await Self.postSMS(toShop, signature: SMSReplies.signature(url: url, parameters: toShop, token: "sms-token"), client: client)
            #expect(accepted.0 == .ok)
            // A number no project sends from: answered, and nobody is unsubscribed.
            let ignored = try await Self.postSMS(elsewhere, signature: SMSReplies.signature(url: url, parameters: elsewhere, token: "sms-token"), client: client)
            #expect(ignored.0 == .ok)
        }
        try await harness.startWorkers([.sms])
        try await harness.send(sendRequest(id: "demo-sms", channel: .sms, content: ["text": "Sale"]))
        var shop = sendRequest(id: "shop-sms", channel: .sms, content: ["text": "Sale"])
        shop.project = "shop"
        shop.profileKey = "shop/paul"
        try await harness.send(shop)
        let reports = try await harness.reports { $0.contains { $0.sendID == "demo-sms" } && $0.contains { $0.sendID == "shop-sms" } }
        #expect(reports.first { $0.sendID == "demo-sms" }?.outcome == .sent)
        #expect(reports.first { $0.sendID == "shop-sms" }?.outcome == .suppressed)
        #expect(reports.filter { $0.channel == .sms && $0.sendID == nil }.map(\.profileKey) == ["shop/paul"])
        await harness.shutdown()
    }
}
