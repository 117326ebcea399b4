import Foundation
import HTTPTypes
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import ServiceSupport
import Shared
import Testing

@testable import Notifier

/// Email open and click tracking (issue 36, item 1): links rewritten at render time and signed, the notifier's redirect
/// and pixel, the reports they write, and machine opens told apart.
@Suite("Notifier: email opens and clicks", .serialized, .timeLimit(.minutes(5)))
struct EmailTrackingTests {
    static let publicURL = "https://notify.example.com"
    static let secret = "0123456789abcdef-secret"
    static let links = TrackingLinks(secret: secret, publicURL: publicURL)

    static func claim(_ link: Int? = nil, _ url: String? = nil) -> TrackingLinks.Claim {
        TrackingLinks.Claim(
            sendID: "mail-1", targetID: "paul@example.com", profileKey: "demo/paul", campaign: "news", experiment: "v1", variant: "b",
            sentAt: 1_700_000_000, link: link, url: url)
    }

    @Test("links: every <a href> to http(s) numbered in order, read as a browser reads it; others untouched; the pixel before </body>")
    func rewriting() {
        let html = """
            <html><body><a href="https://shop.example.com/a?x=1&amp;y=2">A</a> <A HREF='http://b.example.com'>B</A>
            <a class=x href=https://c.example.com/c>C</a><abbr href="https://no.example.com">no</abbr>
            <a href="mailto:x@example.com">m</a><a href="#top">t</a><a href="tel:+1555">p</a><a name=anchor>n</a>
            <a href="https://notify.example.com/v1/unsubscribe/x">u</a></BODY></html>
            """
        var seen: [(Int, String)] = []
        let rewritten = TrackedHTML.rewrite(html, pixel: "PIXEL") { index, url in
            if url.hasPrefix(Self.publicURL) { return nil }
            seen.append((index, url))
            return "T\(index)"
        }
        #expect(seen.map(\.0) == [0, 1, 2])
        #expect(seen.map(\.1) == ["https://shop.example.com/a?x=1&y=2", "http://b.example.com", "https://c.example.com/c"])
        #expect(rewritten.contains(#"<a href="T0">A</a>"#) && rewritten.contains(#"<A HREF="T1">B</A>"#))
        #expect(rewritten.contains(#"<a class=x href="T2">C</a>"#))
        for kept in [#"<abbr href="https://no.example.com">"#, #"href="mailto:x@example.com""#, ##"href="#top""##, #"href="tel:+1555""#,
            "<a name=anchor>", #"href="https://notify.example.com/v1/unsubscribe/x""#] {
            #expect(rewritten.contains(kept), "\(kept)")
        }
        #expect(rewritten.hasSuffix(#"<img src="PIXEL" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0"></BODY></html>"#))
        // No body: the pixel at the end; no pixel: only the links change.
        #expect(TrackedHTML.rewrite("<p>hi</p>", pixel: "P") { _, _ in nil }.hasSuffix(#"<img src="P" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">"#))
        #expect(TrackedHTML.rewrite("<p>hi</p>", pixel: nil) { _, _ in nil } == "<p>hi</p>")
    }

    @Test("tokens: what was sealed comes back; a forged, altered or foreign token is refused; a claim to a non-http URL is too")
    func tokens() throws {
        let token = Self.links.token(Self.claim(2, "https://shop.example.com/x"))
        #expect(Self.links.verify(token) == Self.claim(2, "https://shop.example.com/x"))
        #expect(Self.links.verify(Self.links.token(Self.claim())) == Self.claim())
        // The recipient cannot be read out of it.
        #expect(!token.contains("paul") && !(Base64URL.decode(String(token.dropFirst(3))).map { String(decoding: $0, as: UTF8.self).contains("paul") } ?? true))
        // Any character changed, anywhere.
        let characters = Array(token)
        for position in stride(from: TrackingLinks.prefix.count, to: characters.count, by: 7) {
            var altered = characters
            altered[position] = altered[position] == "A" ? "B" : "A"
            #expect(Self.links.verify(String(altered)) == nil, "altered at \(position)")
        }
        #expect(Self.links.verify(token + "A") == nil && Self.links.verify(String(token.dropLast())) == nil)
        #expect(TrackingLinks(secret: "another-secret-0123456", publicURL: Self.publicURL).verify(token) == nil)
        // An unsubscribe token is not a tracking token (another key), nor the other way round.
        let unsubscribe = UnsubscribeLinks(secret: Self.secret, publicURL: Self.publicURL)
        let foreign = unsubscribe.token(.init(profileKey: "demo/paul", address: "paul@example.com", sendID: "mail-1"))
        #expect(Self.links.verify(TrackingLinks.prefix + foreign.dropFirst(UnsubscribeLinks.prefix.count)) == nil)
        #expect(unsubscribe.verify(UnsubscribeLinks.prefix + token.dropFirst(TrackingLinks.prefix.count)) == nil)
        // Sealed with the key but to a javascript: URL (which the rewriting never makes): refused all the same.
        #expect(Self.links.verify(Self.links.token(Self.claim(0, "javascript:alert(1)"))) == nil)
    }

    /// The email as the SMTP provider writes it, and its HTML part decoded.
    static func html(of send: SendRequest, tracking: TrackingLinks? = links) throws -> String {
        let attempt = DeliveryAttempt(request: send, target: DeliveryTarget(id: "paul@example.com", address: "paul@example.com"), attempt: 1)
        let message = String(decoding: EmailMessage.build(attempt, from: "news@example.com", links: nil, tracking: tracking, date: Date()), as: UTF8.self)
        let part = try #require(message.components(separatedBy: "Content-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n").last)
        let base64 = part.components(separatedBy: "\r\n--").first?.replacingOccurrences(of: "\r\n", with: "") ?? ""
        return String(decoding: try #require(Data(base64Encoded: base64)), as: UTF8.self)
    }

    static func emailSend(tracking: Bool? = nil) -> SendRequest {
        var send = sendRequest(
            id: "mail-1", channel: .email,
            content: ["subject": "S", "text": "T", "html": #"<body><a href="https://shop.example.com/sale?a=1&amp;b=2">Sale</a></body>"#])
        (send.experiment, send.variant, send.tracking) = ("v1", "b", tracking)
        return send
    }

    @Test("a tracked email, followed: the pixel and the link write opened and clicked for the send's arm, the link goes where it pointed; a forged one is refused and counted nowhere")
    func followed() async throws {
        let harness = try await NotifierHarness()
        let html = try Self.html(of: Self.emailSend())
        let urls = html.components(separatedBy: "\"").filter { $0.hasPrefix(Self.publicURL) }
        #expect(urls.count == 2, "\(html)")
        let click = try #require(urls.first { $0.contains("/v1/t/c/") }).dropFirst(Self.publicURL.count)
        let open = try #require(urls.first { $0.contains("/v1/t/o/") }).dropFirst(Self.publicURL.count)
        // Tracking off for the campaign, or for the notifier: the HTML as the template made it.
        #expect(try Self.html(of: Self.emailSend(tracking: false)).contains(#"href="https://shop.example.com/sale?a=1&amp;b=2""#))
        #expect(try !Self.html(of: Self.emailSend(), tracking: nil).contains(Self.publicURL))

        // Followed again 31 days after it left (past the dedupe window, when a second report would count again): the page
        // all the same, and no report. First, so that a report it made would be read before the others.
        let late = Router(context: ServiceRequestContext.self)
        TrackingEndpoints(
            links: Self.links, producer: harness.producer, clients: ClientAddress(trustedProxies: []),
            clock: { Date().addingTimeInterval(31 * 86_400) }, logger: harness.logger
        ).register(on: late)
        try await Application(router: late).test(.router) { client in
            try await client.execute(uri: String(click), method: .get) { response in
                #expect(response.status == .found && response.headers[.location] == "https://shop.example.com/sale?a=1&b=2")
            }
            try await client.execute(uri: String(open), method: .get) { #expect($0.status == .ok) }
        }
        let router = Router(context: ServiceRequestContext.self)
        // The recipient reads it 10 minutes after it left.
        TrackingEndpoints(
            links: Self.links, producer: harness.producer, clients: ClientAddress(trustedProxies: []), clock: { Date().addingTimeInterval(600) },
            logger: harness.logger
        ).register(on: router)
        let reader: HTTPFields = [.userAgent: "Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Thunderbird/115.11.0"]
        try await Application(router: router).test(.router) { client in
            try await client.execute(uri: String(open), method: .get, headers: reader) { response in
                #expect(response.status == .ok && response.headers[.contentType] == "image/gif")
                #expect(Array(response.body.readableBytesView) == TrackingEndpoints.pixel)
            }
            try await client.execute(uri: String(click), method: .get, headers: reader) { response in
                #expect(response.status == .found)
                #expect(response.headers[.location] == "https://shop.example.com/sale?a=1&b=2")
            }
            // A scanner's HEAD: redirected all the same, a machine's click.
            try await client.execute(uri: String(click), method: .head, headers: reader) { response in
                #expect(response.status == .found)
            }
            // Forged, altered, or an open token used as a click: 404, no report.
            var altered = Array(click)
            altered[altered.count - 5] = altered[altered.count - 5] == "A" ? "B" : "A"
            for uri in ["/v1/t/c/t1.AAAA", String(altered), "/v1/t/c/" + open.dropFirst("/v1/t/o/".count)] {
                try await client.execute(uri: uri, method: .get, headers: reader) { response in
                    #expect(response.status == .notFound, "\(uri)")
                    #expect(response.headers[.location] == nil)
                }
            }
        }
        // Produced as the requests came, acknowledged in any order.
        let reports = try await harness.reports { $0.count >= 3 }.sorted { $0.id < $1.id }
        #expect(reports.map(\.id) == ["mail-1/paul@example.com/clicked", "mail-1/paul@example.com/clicked/machine", "mail-1/paul@example.com/opened"])
        #expect(reports.allSatisfy {
            $0.key == "demo/paul" && $0.campaign == "cart" && $0.experiment == "v1" && $0.variant == "b" && $0.channel == .email
        })
        #expect(reports.map(\.figure) == [.clicked, .clickedMachine, .opened])
        #expect(reports[0].action == "link 0" && reports[2].action == nil)
        await harness.shutdown()
    }

    @Test("machine opens and clicks: each request of the fixture classified as documented")
    func machineFixture() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: repositoryFile("Tests/NotifierTests/fixtures/tracking-requests.json")))
        guard case .array(let requests)? = try JSONParser.parse(Array(data))["requests"] else { throw Failure("no requests in the fixture") }
        #expect(requests.count >= 20)
        for request in requests {
            var seconds = 0.0
        if case .number(let text)? = request["seconds"] { seconds = Double(text) ?? 0 }
            let reason = MachineEngagement.reason(
                request["kind"]?.stringValue == "click" ? .click : .open, method: request["method"]?.stringValue ?? "GET",
                userAgent: request["user_agent"]?.stringValue, address: request["address"]?.stringValue, secondsSinceSend: seconds)
            #expect(reason == request["machine"]?.stringValue, "\(request["client"]?.stringValue ?? "?")")
        }
    }
}
