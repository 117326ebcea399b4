import Foundation
import HeraldTestSupport
import Testing

@testable import Shared

/// SMS encodings and segments, judged by smsutil (a Python library that splits SMS as GSM 03.38 or UCS-2, in .venv).
@Suite("SMS segments", .timeLimit(.minutes(5)))
struct SMSSegmentsTests {
    static let judge = #"""
        import json, sys, smsutil
        problems = []
        cases = json.load(open(sys.argv[1]))
        for case in cases:
            result = smsutil.split(case["text"])
            expected = ("gsm7" if result.encoding == "gsm0338" else "ucs2", len(result.parts))
            if (case["encoding"], case["segments"]) != expected:
                problems.append(f"{case['name']}: herald {case['encoding']} {case['segments']}, smsutil {expected[0]} {expected[1]}")
        print("\n".join(problems) or f"{len(cases)} texts alike")
        sys.exit(1 if problems else 0)
        """#

    /// (smsutil calls an empty text UCS-2; an empty body is never sent, so it is left out.)
    static let texts: [(String, String)] = [
        ("160 GSM", String(repeating: "a", count: 160)),
        ("161 GSM", String(repeating: "a", count: 161)),
        ("306 GSM", String(repeating: "a", count: 306)),
        ("307 GSM", String(repeating: "a", count: 307)),
        ("an extension character at a part's end", String(repeating: "a", count: 152) + "€" + String(repeating: "b", count: 20)),
        ("80 extension characters", String(repeating: "{", count: 80)),
        ("81 extension characters", String(repeating: "[", count: 81)),
        ("accents GSM has", "Été à Paris: ça coûte 5€ ? ¿Sí! Ñandú ÄÖÜ äöü ß"),
        ("70 UCS-2", String(repeating: "ж", count: 70)),
        ("71 UCS-2", String(repeating: "ж", count: 71)),
        ("an emoji across a part's end", String(repeating: "ж", count: 66) + "😀" + String(repeating: "ж", count: 10)),
        ("one emoji makes it UCS-2", String(repeating: "a", count: 100) + "☀️"),
        ("a grave accent GSM lacks", "Crème brûlée"),
        ("1,600 characters", String(repeating: "Hello world ", count: 133) + "abcd"),
    ]

    @Test("the encoding and the segments of each text, as smsutil splits it")
    func againstSmsutil() async throws {
        let cases = JSONValue.array(Self.texts.map { name, text in
            let (encoding, segments) = SMSSegments.count(text)
            return .object([
                JSONMember("name", .string(name)), JSONMember("text", .string(text)),
                JSONMember("encoding", .string(encoding.rawValue)), JSONMember("segments", .number("\(segments)")),
            ])
        })
        let (status, verdict) = try await runJudge(Self.judge, cases: cases)
        #expect(status == 0, "\(verdict)")
        #expect(verdict.contains("\(Self.texts.count) texts alike"), "\(verdict)")
    }

    @Test("a body over 1,600 characters cannot be sent: the notifier fails it with the figure")
    func tooLong() {
        #expect(SMSSegments.tooLong(String(repeating: "a", count: 1600)) == nil)
        #expect(SMSSegments.tooLong(String(repeating: "a", count: 1601)) == "1601 characters, the SMS provider takes 1600")
    }
}
