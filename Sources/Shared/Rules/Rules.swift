import Foundation

/// One thing wrong with the input: where (a path such as `[0].attributes.age`), a stable code, and a message.
package struct Problem: Sendable, Equatable, Codable, CustomStringConvertible {
    package var path: String
    package var code: String
    package var message: String

    package init(path: String, code: String, message: String) {
        self.path = path
        self.code = code
        self.message = message
    }

    package var description: String { "\(path): \(code): \(message)" }

    /// `{"path": …, "code": …, "message": …}`, as the API reports problems.
    package var json: JSONValue {
        .object([JSONMember("path", .string(path)), JSONMember("code", .string(code)), JSONMember("message", .string(message))])
    }
}

extension [Problem] {
    /// How many problems a response lists: the first ones, then how many more there were (a request of 140,000 bad
    /// names is answered with 100 problems and a count, not a 20 MB list).
    package static var reportedMax: Int { 100 }

    /// The first `reportedMax` problems as the API lists them, and how many were left out.
    package var reported: (list: JSONValue, omitted: Int) {
        (.array(prefix(Self.reportedMax).map(\.json)), Swift.max(0, count - Self.reportedMax))
    }
}

/// A rule broken by one value; the caller knows the path.
package struct Violation: Error, Equatable {
    package var code: String
    package var message: String

    package init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    package func at(_ path: String) -> Problem { Problem(path: path, code: code, message: message) }
}

/// The limits of the source documents (shared/spec/batch-rules.md), in one place.
package enum Limits {
    package static let attributeName = 30
    package static let customIDLength = 1024
    package static let string = 300
    package static let url = 2048
    package static let stringArrayItems = 25
    package static let arrayEditItems = 25
    package static let eventArrayItems = 25
    package static let eventObjectDepth = 3
    package static let eventObjectAttributes = 20
    package static let label = 200
    package static let tags = 10
    package static let tagLength = 64
    package static let email = 256
    package static let clientID = 128
    package static let profileUpdatesPerRequest = 200
    package static let eventsPerRequest = 200
    package static let activityPerRequest = 200
}

/// The rules on single values. Lengths count Unicode code points, as JSON Schema's `maxLength` does (docs/openapi.yaml
/// says the same numbers); the SDKs count UTF-16 units (`NSString.length`), never fewer, so whatever they accept is
/// accepted here.
package enum Rules {
    /// Attribute, event-attribute and event names: `^[a-zA-Z0-9_]{1,30}$`.
    package static func isValidName(_ name: String) -> Bool {
        let utf8 = name.utf8
        return (1...Limits.attributeName).contains(utf8.count)
            && utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_")
            }
    }

    /// A custom attribute or event attribute name, lowercased.
    package static func attributeName(_ name: String) throws(Violation) -> String {
        if name.utf8.contains(UInt8(ascii: "$")) {
            throw Violation("reserved_name", "attribute names cannot contain '$'")
        }
        guard isValidName(name) else {
            throw Violation("invalid_name", "attribute names are 1 to 30 letters, digits or underscores")
        }
        return name.lowercased()
    }

    /// An event name, uppercased (Herald's canonical case, as the SDK sends it).
    package static func eventName(_ name: String) throws(Violation) -> String {
        guard isValidName(name) else {
            throw Violation("invalid_event_name", "event names are 1 to 30 letters, digits or underscores")
        }
        return name.uppercased()
    }

    static let customIDBlocklist: Set<String> = [
        "undefined", "null", "nil", "(null)", "[object object]", "true", "false", "nan", "infinity", "-infinity",
    ]

    /// A custom user ID: 1…1024 characters, no newline, not blank, not a blocklisted word, not in another key space
    /// (`install/…`, `token/…`). Kept as given (case and whitespace sensitive).
    package static func customID(_ value: String) throws(Violation) -> String {
        guard !value.isEmpty else { throw Violation("invalid_custom_id", "the custom ID is empty") }
        guard value.unicodeScalars.count <= Limits.customIDLength else {
            throw Violation("invalid_custom_id", "the custom ID is longer than 1024 characters")
        }
        guard !value.hasLineBreak else {
            throw Violation("invalid_custom_id", "the custom ID contains a line break")
        }
        guard !value.isBlank else {
            throw Violation("invalid_custom_id", "the custom ID is only whitespace")
        }
        guard !customIDBlocklist.contains(value.asciiLowercased) else {
            throw Violation("invalid_custom_id", "\"\(value)\" is not accepted as a custom ID")
        }
        guard !ProfileKey.collides(customID: value) else {
            throw Violation(
                "invalid_custom_id",
                "a custom ID may not start with \(ProfileKey.reservedPrefixes.map { "\"\($0)\"" }.joined(separator: " or ")) (Herald's own key spaces)")
        }
        return value
    }

    /// Whether `text` is `length` (in bytes) visible ASCII characters (0x21…0x7E): ids, keys, tokens.
    package static func isVisibleASCII(_ text: String, length: ClosedRange<Int>) -> Bool {
        length.contains(text.utf8.count) && text.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    /// An installation ID: 1…128 visible ASCII characters (the SDK sends an uppercased UUID).
    package static func installationID(_ value: String) throws(Violation) -> String {
        guard isVisibleASCII(value, length: 1...128) else {
            throw Violation("invalid_installation_id", "installation IDs are 1 to 128 visible ASCII characters")
        }
        return value
    }

    /// A push token of an app of `platform`: iOS tokens are an even number (64 to 200) of hexadecimal digits, stored
    /// lowercase (APNs tokens are 32 bytes today but Apple reserves longer ones); others 1 to 4096 visible ASCII.
    package static func pushToken(_ text: String, platform: Platform) throws(Violation) -> String {
        if platform == .ios {
            let token = text.asciiLowercased
            guard (64...200).contains(token.utf8.count), token.utf8.count % 2 == 0,
                token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
            else {
                throw Violation("invalid_token", "APNs tokens are an even number (64 to 200) of hexadecimal digits")
            }
            return token
        }
        guard isVisibleASCII(text, length: 1...4096) else {
            throw Violation("invalid_token", "tokens are 1 to 4096 visible ASCII characters")
        }
        return text
    }

    /// A push token's APNs environment: `sandbox` or `production`, exactly.
    package static func pushEnvironment(_ text: String) throws(Violation) -> PushEnvironment {
        guard let environment = PushEnvironment(rawValue: text) else {
            throw Violation("invalid_environment", "environment is \"sandbox\" or \"production\"")
        }
        return environment
    }

    /// A client-supplied record id used to drop replays: 1…128 visible ASCII characters.
    /// A notification category's name or one of its buttons' ids: 1 to 64 letters, digits, `_`, `-` or `.`.
    package static func isActionName(_ text: String) -> Bool { isName(text, length: 1...64) }

    /// ASCII letters, digits, `_`, `-` and `.`, `length` bytes.
    static func isName(_ text: String, length: ClosedRange<Int>) -> Bool {
        length.contains(text.utf8.count) && text.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
                || byte == 0x2D || byte == 0x2E
        }
    }

    /// The id of a notification's button, as an app reports it pressed.
    package static func actionID(_ text: String) throws(Violation) -> String {
        guard isActionName(text) else {
            throw Violation("invalid_action", "an action id is 1 to 64 letters, digits, `_`, `-` or `.`")
        }
        return text
    }

    /// The id of an object of the configuration (a campaign, an in-app message): 1 to 128 letters, digits, `_`, `-`
    /// or `.` (`ConfigReader.isIdentifier`, over ASCII here: what an app reports names a configured object).
    package static func configID(_ text: String) throws(Violation) -> String {
        guard isName(text, length: 1...128) else {
            throw Violation("invalid_id", "ids of configured objects are 1 to 128 letters, digits, `_`, `-` or `.`")
        }
        return text
    }

    package static func clientID(_ value: String) throws(Violation) -> String {
        guard isVisibleASCII(value, length: 1...Limits.clientID) else {
            throw Violation("invalid_id", "ids are 1 to 128 visible ASCII characters")
        }
        return value
    }

    /// A profile string attribute: not empty, at most 300 characters.
    package static func profileString(_ value: String) throws(Violation) -> String {
        guard !value.isEmpty else { throw Violation("empty_string", "strings cannot be empty") }
        guard value.unicodeScalars.count <= Limits.string else {
            throw Violation("string_too_long", "strings are at most 300 characters (got \(value.unicodeScalars.count))")
        }
        return value
    }

    /// An event string: also single-line and not only whitespace.
    package static func eventString(_ value: String, limit: Int = Limits.string) throws(Violation) -> String {
        guard !value.isEmpty else { throw Violation("empty_string", "strings cannot be empty") }
        guard value.unicodeScalars.count <= limit else {
            throw Violation("string_too_long", "strings are at most \(limit) characters (got \(value.unicodeScalars.count))")
        }
        guard !value.hasLineBreak else {
            throw Violation("multiline_string", "event strings must be on one line")
        }
        guard !value.isBlank else {
            throw Violation("blank_string", "event strings cannot be only whitespace")
        }
        return value
    }

    /// A JSON number literal as an int64 (no fraction or exponent) or a finite double. A number with an integral value
    /// must fit an int64 whatever its spelling (`1e19` as `10000000000000000000`): JSON numbers are values, and the
    /// API's schema can only say "an int64, or a number with a fraction".
    package static func number(_ literal: String) throws(Violation) -> AttributeValue {
        if !literal.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) {
            guard let integer = Int64(literal) else {
                throw Violation("integer_out_of_range", "integers must fit in a signed 64-bit integer (got \(literal))")
            }
            return .integer(integer)
        }
        guard let double = Double(literal), double.isFinite else {
            throw Violation("number_out_of_range", "numbers must fit in a double (got \(literal))")
        }
        guard double.rounded(.towardZero) != double || (-0x1p63..<0x1p63).contains(double) else {
            throw Violation("integer_out_of_range", "integers must fit in a signed 64-bit integer (got \(literal))")
        }
        return .double(double)
    }

    /// `{"$date": "2026-11-22T10:00:00Z"}`: an ISO-8601 time with a zone (`Z` or an offset), stored in UTC.
    package static func date(_ text: String) throws(Violation) -> Date {
        guard let date = parseTime(text) else {
            throw Violation("invalid_date", "dates are ISO-8601 with a time zone, e.g. 2026-11-22T10:00:00Z")
        }
        return date
    }

    /// Also reads Braze's `2016-12-14T13:32:31.601-0800` (offset without a colon).
    package static func parseTime(_ text: String) -> Date? { WireTime.parse(text) }

    /// `{"$url": "https://…"}`: at most 2048 characters, a scheme (a letter, then letters, digits, `+`, `-`, `.`), `://`,
    /// a host (at least one character other than `/`, `?`, `#`), then anything visible (the API's schema has the same
    /// pattern).
    package static func url(_ text: String) throws(Violation) -> String {
        guard text.unicodeScalars.count <= Limits.url else {
            throw Violation("url_too_long", "URLs are at most 2048 characters")
        }
        guard isURLShaped(text) else {
            throw Violation("invalid_url", "URLs need a scheme and a host, e.g. https://example.com/path")
        }
        return text
    }

    /// Schemes an app must never open from a link a campaign gives it: they run code or read the device where they open
    /// (an HTML in-app message, a card shown in a web view).
    package static let unsafeSchemes: Set<String> = ["javascript", "vbscript", "data", "file"]

    /// A link an app opens or shows (an in-app button's `uri`, a message's `image_url`, a card's `url` and `image_url`)
    /// whose scheme is none of `unsafeSchemes`, whatever its case: `javascript:` once passed as a URI with a scheme.
    package static func isSafeLink(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":") else { return true }
        return !unsafeSchemes.contains(text[..<colon].lowercased())
    }

    /// A URL (`url`) an app may open or load: shaped as one, and of none of `unsafeSchemes`.
    package static func isSafeURL(_ text: String) -> Bool { (try? url(text)) != nil && isSafeLink(text) }

    /// `scheme://host…`, every character visible (no control character, no white space).
    package static func isURLShaped(_ text: String) -> Bool {
        var scalars = text.unicodeScalars.makeIterator()
        func isLetter(_ scalar: Unicode.Scalar) -> Bool { (0x41...0x5A).contains(scalar.value) || (0x61...0x7A).contains(scalar.value) }
        guard let first = scalars.next(), isLetter(first) else { return false }
        var afterScheme: Unicode.Scalar?
        while let scalar = scalars.next() {
            guard isLetter(scalar) || (0x30...0x39).contains(scalar.value) || "+-.".unicodeScalars.contains(scalar) else {
                afterScheme = scalar
                break
            }
        }
        guard afterScheme == ":", scalars.next() == "/", scalars.next() == "/" else { return false }
        var hostLength = 0
        var inHost = true
        while let scalar = scalars.next() {
            guard !scalar.properties.isWhitespace, !(0x00...0x20).contains(scalar.value), !(0x7F...0x9F).contains(scalar.value)
            else { return false }
            if inHost && "/?#".unicodeScalars.contains(scalar) { inHost = false }
            if inHost { hostLength += 1 }
        }
        return hostLength > 0
    }

    /// An email address: at most 256 characters, one '@', a dotted domain.
    package static func email(_ value: String) throws(Violation) -> String {
        guard value.unicodeScalars.count <= Limits.email else {
            throw Violation("invalid_email", "email addresses are at most 256 characters")
        }
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        let domainCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.")
        guard parts.count == 2, !parts[0].isEmpty, !parts[0].contains(where: \.isWhitespace),
            let dot = parts[1].lastIndex(of: "."), dot != parts[1].startIndex, parts[1].index(after: dot) != parts[1].endIndex,
            parts[1].allSatisfy(domainCharacters.contains),
            !parts[1][parts[1].index(after: dot)...].contains(where: { $0 == "." || $0 == "-" })
        else {
            throw Violation("invalid_email", "not a valid email address")
        }
        return value
    }

    /// A phone number in E.164: `^\+[0-9]{1,15}$`.
    package static func phone(_ value: String) throws(Violation) -> String {
        let digits = value.utf8.dropFirst()
        guard value.utf8.first == UInt8(ascii: "+"), (1...15).contains(digits.count),
            digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) })
        else {
            throw Violation("invalid_phone_number", "phone numbers are E.164: '+' then 1 to 15 digits")
        }
        return value
    }

    /// `subscribed` or `unsubscribed`.
    package static func marketingState(_ value: String) throws(Violation) -> String {
        guard value == "subscribed" || value == "unsubscribed" else {
            throw Violation("invalid_subscription_state", "expected \"subscribed\" or \"unsubscribed\"")
        }
        return value
    }

    /// ISO 639-1 in any case (ASCII letters only: `"K".lowercased()` is `k`), normalised to lowercase.
    package static func language(_ value: String) throws(Violation) -> String {
        let code = value.asciiLowercased
        guard iso639_1.contains(code) else {
            throw Violation("invalid_language", "languages are ISO 639-1 two-letter codes, e.g. \"fr\"")
        }
        return code
    }

    /// ISO 3166-1 alpha-2 in any case (ASCII letters only: `"ſ".uppercased()` is `S`), normalised to uppercase.
    package static func region(_ value: String) throws(Violation) -> String {
        let code = value.asciiUppercased
        guard iso3166_1.contains(code) else {
            throw Violation("invalid_region", "regions are ISO 3166-1 alpha-2 codes, e.g. \"FR\"")
        }
        return code
    }

    /// An IANA time zone name such as `Europe/Paris`, or one of its links (`Asia/Calcutta`, `US/Eastern`): tzdata's list
    /// (`ianaTimeZones`, generated), not the machine's, so that every instance and the API's schema say the same.
    package static func timeZone(_ value: String) throws(Violation) -> String {
        guard ianaTimeZones.contains(value) else {
            throw Violation("invalid_timezone", "time zones are IANA names, e.g. \"Europe/Paris\"")
        }
        return value
    }
}
