import Foundation
import Shared

/// Email over SMTP through libcurl: STARTTLS and authentication as configured, a multipart text + HTML message, and
/// for marketing sends the one-click unsubscribe headers.
struct SMTPProvider: DeliveryProvider {
    struct Settings: Sendable {
        var url: String
        var from: String
        var user: String?
        var password: String?
        var startTLS: SMTPRequest.StartTLS = .required
        var connections = 4
        var timeout: Duration = .seconds(30)
    }

    let name = "smtp"
    let driver: CurlDriver
    let settings: Settings
    let links: UnsubscribeLinks
    var maxInFlight: Int { settings.connections }

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome {
        // The orchestrator refuses these at rendering; a send request from elsewhere is refused here too, since a line
        // break in a header starts another header.
        let headers = [attempt.request.content["from"], attempt.request.content["reply_to"], attempt.target.address]
        if headers.contains(where: { $0?.contains(where: \.isNewline) == true }) {
            return .failed(reason: "invalid_header: a line break in from, reply_to or the address")
        }
        let message = Self.message(attempt, from: attempt.request.content["from"] ?? settings.from, links: links, date: Date())
        let request = SMTPRequest(
            url: settings.url, from: Self.envelopeAddress(settings.from), recipients: [attempt.target.address],
            message: message, user: settings.user, password: settings.password, startTLS: settings.startTLS,
            timeout: settings.timeout)
        switch await driver.perform(request) {
        case .success:
            return .accepted(messageID: Self.messageID(attempt))
        case .failure(let error):
            return Self.outcome(error)
        }
    }

    /// `Name <a@b>` → `a@b`.
    static func envelopeAddress(_ from: String) -> String {
        if let open = from.lastIndex(of: "<"), let close = from.lastIndex(of: ">"), open < close {
            return String(from[from.index(after: open)..<close])
        }
        return from
    }

    /// SMTP's answer: a 5xx to the recipient is a hard bounce (the address is dead), another 5xx a failure, a 4xx
    /// (greylisting, a full mailbox, a busy server) and a broken connection are tried again.
    static func outcome(_ error: TransferError) -> ProviderOutcome {
        switch error.status {
        case 550, 551, 553: return .targetInvalid(reason: "hard bounce: \(error.status)")
        case 500...599: return .failed(reason: "smtp \(error.status)")
        case 400...499: return .retry(reason: "smtp \(error.status)", after: nil)
        default:
            if error.code == 67 { return .failed(reason: "smtp_auth: the server refused the login") }  // CURLE_LOGIN_DENIED
            return .transport(error)
        }
    }

    static func messageID(_ attempt: DeliveryAttempt) -> String {
        "<\(attempt.request.sendID).\(APNsProvider.messageID(sendID: attempt.request.sendID, target: attempt.target.id).prefix(8))@herald>"
    }

    /// The RFC 5322 message with a MIME multipart/alternative body (text, and HTML when the template has it), lines
    /// ending in CRLF. The Message-ID is derived from the send, so that a repeated attempt is recognisable.
    static func message(_ attempt: DeliveryAttempt, from: String, links: UnsubscribeLinks?, date: Date) -> [UInt8] {
        let send = attempt.request
        let boundary = "herald-\(send.sendID)"
        var headers = [
            "From: \(from)",
            "To: <\(attempt.target.address)>",
            "Subject: \(encodedWord(send.content["subject"] ?? ""))",
            "Date: \(rfc5322Date(date))",
            "Message-ID: \(messageID(attempt))",
            "MIME-Version: 1.0",
            "X-Herald-Send-ID: \(send.sendID)",
            "X-Herald-Campaign: \(send.campaign)",
        ]
        if let replyTo = send.field("reply_to") { headers.append("Reply-To: \(replyTo)") }
        if send.marketing, let links {
            let url = links.url(.init(profileKey: send.profileKey, address: attempt.target.address, sendID: send.sendID))
            headers.append("List-Unsubscribe: <\(url)>")
            headers.append("List-Unsubscribe-Post: List-Unsubscribe=One-Click")
        }
        var parts: [(String, String)] = [("text/plain", send.content["text"] ?? "")]
        if let html = send.field("html") { parts.append(("text/html", html)) }
        headers.append("Content-Type: multipart/alternative; boundary=\"\(boundary)\"")
        var lines = headers + [""]
        for (type, body) in parts {
            lines += ["--\(boundary)", "Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: base64", ""]
            lines += wrapped(Data(body.utf8).base64EncodedString())
        }
        lines.append("--\(boundary)--")
        return Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
    }

    /// RFC 2047: non-ASCII header text as `=?UTF-8?B?…?=`.
    static func encodedWord(_ text: String) -> String {
        guard text.utf8.contains(where: { $0 >= 0x80 || $0 < 0x20 }) else { return text }
        return "=?UTF-8?B?\(Data(text.utf8).base64EncodedString())?="
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss +0000"
        return formatter.string(from: date)
    }

    private static func wrapped(_ text: String) -> [String] {
        var lines: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(76)))
            rest = rest.dropFirst(76)
        }
        return lines
    }
}
