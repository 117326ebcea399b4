import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import Notifier

/// Every message the notifier builds, judged by Python's email package with its strict policy (a defect raises) and
/// by the line limits of RFC 5322 (998 octets) and RFC 2047 (encoded words of at most 75 characters, on lines of at
/// most 76), then read back: the subject and the display names as written, the bodies whole.
@Suite("Email messages per RFC 5322, 2047 and 6532", .timeLimit(.minutes(5)))
struct EmailMessageTests {
    static let judge = #"""
        import email, email.policy, json, re, sys
        from email.parser import BytesParser
        problems = []
        cases = json.load(open(sys.argv[1]))
        for case in cases:
            raw = open(case["file"], "rb").read()
            name = case["name"]
            head = raw.split(b"\r\n\r\n", 1)[0]
            for line in raw.split(b"\r\n"):
                if len(line) > 998: problems.append(f"{name}: a line of {len(line)} octets")
                if b"=?" in line and line in head.split(b"\r\n") and len(line) > 76:
                    problems.append(f"{name}: a line with an encoded word of {len(line)} characters: {line[:40]!r}")
            for word in re.findall(rb"=\?[^?]+\?[BbQq]\?[^?]*\?=", head):
                if len(word) > 75: problems.append(f"{name}: an encoded word of {len(word)} characters")
            if any(byte >= 0x80 for byte in head): problems.append(f"{name}: a non-ASCII octet in the header")
            try:
                message = BytesParser(policy=email.policy.strict).parsebytes(raw)
                subject = str(message["subject"])
                sender = message["from"].addresses[0]
                reply = message["reply-to"].addresses[0] if case.get("reply_to_name") is not None else None
                text = message.get_body(("plain",)).get_content()
            except Exception as error:
                problems.append(f"{name}: {type(error).__name__}: {error}")
                continue
            if subject != case["subject"]: problems.append(f"{name}: subject {subject!r} != {case['subject']!r}")
            if (sender.display_name, sender.addr_spec) != (case["from_name"], case["from_address"]):
                problems.append(f"{name}: from {sender.display_name!r} <{sender.addr_spec}>")
            if reply is not None and reply.display_name != case["reply_to_name"]:
                problems.append(f"{name}: reply-to {reply.display_name!r}")
            if text != case["text"]: problems.append(f"{name}: text {text!r}")
        print("\n".join(problems) or f"{len(cases)} messages conform")
        sys.exit(1 if problems else 0)
        """#

    static let subjects: [(String, String)] = [
        ("short ASCII", "Your cart is waiting"),
        ("long ASCII with spaces", Array(repeating: "Autumn sale, every size and colour", count: 12).joined(separator: " ")),
        ("a 1,200-character word", String(repeating: "x", count: 1200)),
        ("accents and an emoji", "Soldes d'été ☀️ : jusqu'à -50 %"),
        ("long non-ASCII", String(repeating: "Écharpe en laine mérinos ❄️ ", count: 9)),
        ("CJK", "秋のセール：全品半額、今すぐチェック"),
        ("text that reads as an encoded word", "Use =?UTF-8?B?SGk=?= literally"),
        ("double spaces and a tab", "Two  spaces\tand a tab"),
        ("empty", ""),
    ]

    static let senders: [(from: String, name: String, address: String)] = [
        ("Demo <news@example.com>", "Demo", "news@example.com"),
        ("Café Müller <news@example.com>", "Café Müller", "news@example.com"),
        ("Demo, Inc. <news@example.com>", "Demo, Inc.", "news@example.com"),
        (#""Quoted \"Name\"" <news@example.com>"#, #"Quoted "Name""#, "news@example.com"),
        ("news@example.com", "", "news@example.com"),
        (String(repeating: "Très long nom d'expéditeur ", count: 6) + "<news@example.com>",
         String(repeating: "Très long nom d'expéditeur ", count: 6).trimmingCharacters(in: .whitespaces), "news@example.com"),
    ]

    @Test("every subject and sender, as Python's strict parser reads them, within the line limits")
    func strictParser() async throws {
        let directory = try scratchDirectory("herald-email")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let links = UnsubscribeLinks(secret: "0123456789abcdef-secret", publicURL: "https://n.example.com")
        let target = DeliveryTarget(id: "paul@example.com", address: "paul@example.com")
        var cases: [JSONValue] = []
        for (index, (label, subject)) in Self.subjects.enumerated() {
            for (senderIndex, sender) in Self.senders.enumerated() {
                let text = "Bonjour Paul, \(label) ✓"
                var content = ["subject": subject, "text": text, "html": "<p>\(text)</p>"]
                let replyToName = senderIndex == 1 ? "Service client Müller" : nil
                if let replyToName { content["reply_to"] = "\(replyToName) <help@example.com>" }
                let send = sendRequest(channel: .email, content: content)
                let file = "\(directory)/\(index)-\(senderIndex).eml"
                let bytes = EmailMessage.build(DeliveryAttempt(request: send, target: target, attempt: 1), from: sender.from, links: links, date: Date())
                try Data(bytes).write(to: URL(fileURLWithPath: file))
                var fields = [
                    JSONMember("name", .string("\(label) from \(sender.from.prefix(30))")), JSONMember("file", .string(file)),
                    JSONMember("subject", .string(subject)), JSONMember("from_name", .string(sender.name)),
                    JSONMember("from_address", .string(sender.address)), JSONMember("text", .string(text)),
                ]
                if let replyToName { fields.append(JSONMember("reply_to_name", .string(replyToName))) }
                cases.append(.object(fields))
            }
        }
        let (status, verdict) = try await runJudge(Self.judge, cases: .array(cases))
        #expect(status == 0, "\(verdict)")
        #expect(verdict.contains("\(Self.subjects.count * Self.senders.count) messages conform"), "\(verdict)")
    }

    @Test("folding keeps the text: a long ASCII subject is folded at spaces, at most 76 characters a line")
    func foldedAtSpaces() {
        let subject = Self.subjects[1].1
        let field = EmailMessage.unstructured("Subject", subject)
        #expect(field.components(separatedBy: "\r\n").allSatisfy { $0.count <= 76 })
        #expect(field.replacingOccurrences(of: "\r\n", with: "") == "Subject: \(subject)")
        #expect(EmailMessage.mailbox("From", "Demo <a@example.com>") == "From: Demo <a@example.com>")
        #expect(EmailMessage.mailbox("From", "Demo, Inc. <a@example.com>") == #"From: "Demo, Inc." <a@example.com>"#)
    }
}
