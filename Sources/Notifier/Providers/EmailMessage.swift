import Foundation
import Shared

/// An email as it goes on the wire: RFC 5322 header fields, folded so that no line is longer than 998 octets (76 where
/// the text allows), non-ASCII text as RFC 2047 encoded words of at most 75 characters on lines of at most 76, a MIME
/// multipart/alternative body (text, and HTML when the template has it), lines ending in CRLF. A real server refused
/// (`500`) a 1,000-character subject line; a raw UTF-8 display name needs SMTPUTF8 (RFC 6532), which not every server
/// offers, so names are encoded instead.
enum EmailMessage {
    /// The message of an attempt. The Message-ID is derived from the send, so that a repeated attempt is recognisable.
    /// `tracking`: the HTML's links go through the notifier and an open pixel is added (`TrackedHTML`), unless the send
    /// says not to.
    static func build(
        _ attempt: DeliveryAttempt, from: String, links: UnsubscribeLinks?, tracking: TrackingLinks? = nil, date: Date
    ) -> [UInt8] {
        let send = attempt.request
        let boundary = "herald-\(send.sendID)"
        var headers = [
            mailbox("From", from),
            "To: <\(attempt.target.address)>",
            unstructured("Subject", send.content["subject"] ?? ""),
            "Date: \(rfc5322Date(date))",
            "Message-ID: \(SMTPProvider.messageID(attempt))",
            "MIME-Version: 1.0",
            "X-Herald-Send-ID: \(send.sendID)",
            "X-Herald-Campaign: \(send.campaign)",
        ]
        if let replyTo = send.field("reply_to") { headers.append(mailbox("Reply-To", replyTo)) }
        if send.marketing, let links {
            let url = links.url(.init(profileKey: send.profileKey, address: attempt.target.address, sendID: send.sendID))
            headers.append("List-Unsubscribe: <\(url)>")
            headers.append("List-Unsubscribe-Post: List-Unsubscribe=One-Click")
        }
        var parts: [(String, String)] = [("text/plain", send.content["text"] ?? "")]
        if var html = send.field("html") {
            if let tracking, send.tracking != false {
                let claim = TrackingLinks.claim(send, target: attempt.target, at: date)
                html = TrackedHTML.rewrite(html, pixel: tracking.openURL(claim)) { index, url in
                    url.hasPrefix(tracking.publicURL + "/") ? nil : tracking.clickURL(claim, link: index, url: url)
                }
            }
            parts.append(("text/html", html))
        }
        headers.append("Content-Type: multipart/alternative; boundary=\"\(boundary)\"")
        var lines = headers + [""]
        for (type, body) in parts {
            lines += ["--\(boundary)", "Content-Type: \(type); charset=utf-8", "Content-Transfer-Encoding: base64", ""]
            lines += chunks(Data(body.utf8).base64EncodedString(), of: 76)
        }
        lines.append("--\(boundary)--")
        return Array((lines.joined(separator: "\r\n") + "\r\n").utf8)
    }

    // MARK: Header fields

    /// The longest line written: RFC 2047's limit for a line that carries an encoded word (section 2), within RFC
    /// 5322's 78 that a line should keep to; 998 is the most one may hold (2.1.1).
    static let lineLength = 76
    static let maxLine = 998
    /// The octets of UTF-8 one encoded word holds: 52 characters of base64, 64 with its `=?UTF-8?B?` and `?=`, so that
    /// it fits a line after a field's name or after the folding space.
    static let wordOctets = 39

    /// An unstructured field (`Subject`): printable ASCII as it is, folded at spaces; anything else (non-ASCII or
    /// control characters, text that reads as an encoded word, a word too long to fold) as encoded words.
    static func unstructured(_ name: String, _ text: String) -> String {
        if isPlain(text), let folded = foldAtSpaces("\(name): \(text)") { return folded }
        return foldAtSpaces("\(name): " + encodedWords(text).joined(separator: " "))!
    }

    /// A mailbox field (`From`, `Reply-To`): `name <address>` or `address`. The name's ASCII words stay atoms (quoted
    /// when they hold specials: `"Demo, Inc."`), its other runs of words are encoded (`Café Müller`), each run in one
    /// encoded word where it fits: between two adjacent encoded words a reader should drop the space (RFC 2047, 6.2),
    /// and Python's parser keeps it, so a name split there would read differently.
    static func mailbox(_ field: String, _ value: String) -> String {
        let (name, address) = mailboxParts(value)
        guard let name, !name.isEmpty else { return "\(field): \(address)" }
        if isPlain(name) {
            let phrase = name.unicodeScalars.allSatisfy { atext.contains($0) || $0 == " " } ? name : quoted(name)
            if let folded = foldAtSpaces("\(field): \(phrase) <\(address)>") { return folded }
        }
        var tokens: [String] = []
        var run: [Substring] = []
        func endRun() {
            if !run.isEmpty { tokens += encodedWords(run.joined(separator: " ")) }
            run = []
        }
        for word in name.split(separator: " ", omittingEmptySubsequences: false) {
            if !word.isEmpty, isPlain(String(word)), word.utf8.count < 900 {
                endRun()
                tokens.append(word.unicodeScalars.allSatisfy { atext.contains($0) } ? String(word) : quoted(String(word)))
            } else {
                run.append(word)
            }
        }
        endRun()
        return foldAtSpaces("\(field): " + (tokens + ["<\(address)>"]).joined(separator: " "))!
    }

    /// `Name <a@b>` → (`Name`, `a@b`), a quoted name unquoted; `a@b` → (nil, `a@b`).
    static func mailboxParts(_ value: String) -> (name: String?, address: String) {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        guard trimmed.hasSuffix(">"), let open = trimmed.lastIndex(of: "<") else { return (nil, trimmed) }
        let address = String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)])
        var name = trimmed[..<open].trimmingCharacters(in: .whitespaces)
        if name.count >= 2, name.hasPrefix("\""), name.hasSuffix("\"") {
            var unquoted = ""
            var escaped = false
            for character in name.dropFirst().dropLast() {
                if !escaped, character == "\\" {
                    escaped = true
                    continue
                }
                escaped = false
                unquoted.append(character)
            }
            name = unquoted
        }
        return (name, address)
    }

    /// RFC 5322's atext: what a display name may hold unquoted, with spaces between its atoms.
    private static let atext = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&'*+-/=?^_`{|}~".unicodeScalars)

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// Printable ASCII (and space) that a reader would not decode as an encoded word.
    private static func isPlain(_ text: String) -> Bool {
        text.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } && !text.contains("=?")
    }

    /// The line folded before spaces (a space stays, first on its line, so unfolding gives the text back), lines kept
    /// to 76 characters where a space allows; nil when a word would leave a line over 998.
    private static func foldAtSpaces(_ line: String) -> String? {
        var lines: [Substring] = []
        var rest = Substring(line)
        while rest.count > lineLength {
            // The last space within the limit (not leading a line, so that no line is only blanks), else the first.
            let window = rest.prefix(lineLength + 1)
            let cut = window.indices.dropFirst().last { window[$0] == " " && window[window.index(before: $0)] != " " }
                ?? rest.indices.dropFirst().first { rest[$0] == " " && rest[rest.index(before: $0)] != " " }
            guard let cut else { break }
            lines.append(rest[..<cut])
            rest = rest[cut...]
        }
        lines.append(rest)
        guard lines.allSatisfy({ $0.utf8.count <= maxLine }) else { return nil }
        return lines.joined(separator: "\r\n")
    }

    /// The text as `=?UTF-8?B?…?=` words of at most `wordOctets` octets each, cut between code points (a word holds
    /// whole characters' octets: RFC 2047, section 5).
    private static func encodedWords(_ text: String) -> [String] {
        var words: [String] = []
        var bytes: [UInt8] = []
        func flush() {
            words.append("=?UTF-8?B?\(Data(bytes).base64EncodedString())?=")
            bytes = []
        }
        for scalar in text.unicodeScalars {
            let utf8 = Array(String(scalar).utf8)
            if !bytes.isEmpty, bytes.count + utf8.count > wordOctets { flush() }
            bytes += utf8
        }
        if !bytes.isEmpty || words.isEmpty { flush() }
        return words
    }

    static func rfc5322Date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss +0000"
        return formatter.string(from: date)
    }

    private static func chunks(_ text: String, of length: Int) -> [String] {
        var lines: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty {
            lines.append(String(rest.prefix(length)))
            rest = rest.dropFirst(length)
        }
        return lines
    }
}
