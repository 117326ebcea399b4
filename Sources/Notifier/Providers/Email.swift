import CurlClient
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
    /// Open and click tracking (nil: off).
    var tracking: TrackingLinks? = nil
    var maxInFlight: Int { settings.connections }

    func deliver(_ attempt: DeliveryAttempt) async -> ProviderOutcome {
        // The orchestrator refuses these at rendering; a send request from elsewhere is refused here too, since a line
        // break in a header starts another header.
        let headers = [attempt.request.content["from"], attempt.request.content["reply_to"], attempt.target.address]
        if headers.contains(where: { $0?.contains(where: \.isNewline) == true }) {
            return .failed(reason: .herald(.invalidHeader, detail: "a line break in from, reply_to or the address"))
        }
        let from = attempt.request.content["from"] ?? settings.from
        // Without SMTPUTF8 (RFC 6531), which Herald does not ask for, an address is ASCII; a name need not be (encoded).
        if !EmailMessage.mailboxParts(from).address.utf8.allSatisfy({ $0 < 0x80 }) || !attempt.target.address.utf8.allSatisfy({ $0 < 0x80 }) {
            return .failed(reason: .herald(.invalidHeader, detail: "a non-ASCII email address (SMTPUTF8 is not used)"))
        }
        let message = EmailMessage.build(attempt, from: from, links: links, tracking: tracking, date: Date())
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
    static func envelopeAddress(_ from: String) -> String { EmailMessage.mailboxParts(from).address }

    /// SMTP's answer: a 5xx to the recipient is a hard bounce (the address is dead), another 5xx a failure, a 4xx
    /// (greylisting, a full mailbox, a busy server) and a broken connection are tried again.
    static func outcome(_ error: TransferError) -> ProviderOutcome {
        switch error.status {
        case 550, 551, 553: return .targetInvalid(reason: .status(.smtp, String(error.status), detail: "hard bounce"))
        case 500...599: return .failed(reason: .status(.smtp, String(error.status)))
        case 400...499: return .retry(reason: .status(.smtp, String(error.status)), after: nil)
        default:
            if error.code == 67 { return .failed(reason: .herald(.smtpAuth, detail: "the server refused the login")) }  // CURLE_LOGIN_DENIED
            return .transport(error)
        }
    }

    static func messageID(_ attempt: DeliveryAttempt) -> String {
        "<\(attempt.request.sendID).\(APNsProvider.messageID(sendID: attempt.request.sendID, target: attempt.target.id).prefix(8))@herald>"
    }
}
