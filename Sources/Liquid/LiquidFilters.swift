import Foundation

/// The standard filters, named as Shopify's reference names them, answering as Ruby Liquid does on edge cases, plus
/// `json` and `raw` (an HTML body's opt-out of escaping).
public enum LiquidFilters {
    typealias Filter = @Sendable (_ input: LiquidValue, _ arguments: Arguments, _ renderer: LiquidRenderer) throws(LiquidError) -> LiquidValue

    /// A filter's arguments, positional and by keyword.
    struct Arguments {
        var positional: [LiquidValue]
        var keywords: LiquidObject
        var name: String

        /// An optional argument as given (an undefined variable gives nil, which is not the same as leaving it out).
        subscript(index: Int) -> LiquidValue? { index < positional.count ? positional[index] : nil }

        /// An optional argument, nil counting as left out (`slice: 1, nosuchthing`, `sort: nosuchthing`).
        func given(_ index: Int) -> LiquidValue? { self[index] == .nil ? nil : self[index] }

        func required(_ index: Int) throws(LiquidError) -> LiquidValue {
            guard index < positional.count else {
                throw LiquidError(.render, "wrong number of arguments (given \(positional.count + 1), expected \(index + 2)) for '\(name)'")
            }
            return positional[index]
        }
    }

    /// How many positional arguments each filter takes (Ruby's method arity, checked when a template is parsed).
    static let arities: [String: ClosedRange<Int>] = {
        var arities: [String: ClosedRange<Int>] = [:]
        for name in table.keys { arities[name] = 0...0 }
        for name in [
            "append", "prepend", "remove", "remove_first", "remove_last", "concat", "plus", "minus", "times", "divided_by",
            "modulo", "at_least", "at_most", "split", "map", "date",
        ] { arities[name] = 1...1 }
        for name in ["replace", "replace_first", "slice", "where", "reject", "find", "find_index", "has"] { arities[name] = 1...2 }
        for name in ["truncate", "truncatewords"] { arities[name] = 0...2 }
        for name in ["default", "join", "sort", "sort_natural", "uniq", "compact", "sum", "round"] { arities[name] = 0...1 }
        arities["replace_last"] = 2...2
        return arities
    }()

    static let table: [String: Filter] = strings.merging(LiquidArrayFilters.table) { a, _ in a }.merging(math) { a, _ in a }

    // MARK: Strings

    static let strings: [String: Filter] = [
        "append": { input, arguments, _ throws(LiquidError) in .string(input.text + (try arguments.required(0)).text) },
        "prepend": { input, arguments, _ throws(LiquidError) in .string((try arguments.required(0)).text + input.text) },
        "capitalize": { input, _, _ in
            let text = input.text
            guard let first = text.first else { return .string("") }
            return .string(first.uppercased() + text.dropFirst().lowercased())
        },
        "downcase": { input, _, _ in .string(input.text.lowercased()) },
        "upcase": { input, _, _ in .string(input.text.uppercased()) },
        "escape": { input, _, _ in input == .nil ? .nil : .string(escapeHTML(input.text)) },
        "h": { input, _, _ in input == .nil ? .nil : .string(escapeHTML(input.text)) },
        "escape_once": { input, _, _ in .string(escapeOnce(input.text)) },
        "lstrip": { input, _, _ in .string(String(input.text.drop(while: isRubySpace))) },
        "rstrip": { input, _, _ in .string(rstrip(input.text)) },
        "strip": { input, _, _ in .string(rstrip(String(input.text.drop(while: isRubySpace)))) },
        "newline_to_br": { input, _, _ in
            .string(input.text.replacingOccurrences(of: "\r?\n", with: "<br />\n", options: .regularExpression))
        },
        "strip_newlines": { input, _, _ in .string(input.text.replacingOccurrences(of: "\r\n", with: "").replacingOccurrences(of: "\n", with: "")) },
        "remove": { input, arguments, _ throws(LiquidError) in .string(input.text.replacingOccurrences(of: (try arguments.required(0)).text, with: "")) },
        "remove_first": { input, arguments, _ throws(LiquidError) in .string(replaceFirst(input.text, (try arguments.required(0)).text, "")) },
        "remove_last": { input, arguments, _ throws(LiquidError) in .string(replaceLast(input.text, (try arguments.required(0)).text, "")) },
        "replace": { input, arguments, _ throws(LiquidError) in
            let target = (try arguments.required(0)).text
            let replacement = arguments[1]?.text ?? ""
            if target.isEmpty { return .string(interleave(input.text, replacement)) }
            return .string(input.text.replacingOccurrences(of: target, with: replacement))
        },
        "replace_first": { input, arguments, _ throws(LiquidError) in
            .string(replaceFirst(input.text, (try arguments.required(0)).text, arguments[1]?.text ?? ""))
        },
        "replace_last": { input, arguments, _ throws(LiquidError) in
            .string(replaceLast(input.text, (try arguments.required(0)).text, try arguments.required(1).text))
        },
        "slice": { input, arguments, _ throws(LiquidError) in
            guard let offset = LiquidNumbers.integer(try arguments.required(0)) else { throw LiquidError(.render, "invalid integer") }
            let length = try arguments.given(1).map { (value) throws(LiquidError) in
                guard let length = LiquidNumbers.integer(value) else { throw LiquidError(.render, "invalid integer") }
                return length
            } ?? 1
            if case .array(let items) = input {
                return .array(rubySlice(items, offset, length) ?? [])
            }
            return .string(rubySlice(Array(input.text), offset, length).map { String($0) } ?? "")
        },
        "split": { input, arguments, _ throws(LiquidError) in .array(split(input.text, (try arguments.required(0)).text).map(LiquidValue.string)) },
        "strip_html": { input, _, _ in .string(stripHTML(input.text)) },
        "truncate": { input, arguments, _ throws(LiquidError) in
            if input == .nil { return .nil }
            let text = Array(input.text)
            let length = try arguments[0].map { (value) throws(LiquidError) in
                guard let length = LiquidNumbers.integer(value) else { throw LiquidError(.render, "invalid integer") }
                return length
            } ?? 50
            let ellipsis = arguments[1]?.text ?? "..."
            guard text.count > length else { return .string(input.text) }
            let keep = length > ellipsis.count ? length - ellipsis.count : 0
            return .string(String(text[0..<min(keep, text.count)]) + ellipsis)
        },
        "truncatewords": { input, arguments, _ throws(LiquidError) in
            if input == .nil { return .nil }
            var words = try arguments[0].map { (value) throws(LiquidError) in
                guard let words = LiquidNumbers.integer(value) else { throw LiquidError(.render, "invalid integer") }
                return words
            } ?? 15
            if words <= 0 { words = 1 }
            let list = input.text.split(whereSeparator: isRubySpace)
            guard list.count > words else { return .string(input.text) }
            return .string(list.prefix(words).joined(separator: " ") + (arguments[1]?.text ?? "..."))
        },
        "url_encode": { input, _, _ in input == .nil ? .nil : .string(urlEncode(input.text)) },
        "url_decode": { input, _, _ in input == .nil ? .nil : .string(urlDecode(input.text)) },
        "base64_encode": { input, _, _ in .string(Data(input.text.utf8).base64EncodedString()) },
        "base64_decode": { input, _, _ throws(LiquidError) in
            guard let data = Data(base64Encoded: input.text), let text = String(data: data, encoding: .utf8) else {
                throw LiquidError(.render, "invalid base64 provided to base64_decode")
            }
            return .string(text)
        },
        "base64_url_safe_encode": { input, _, _ in
            .string(Data(input.text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"))
        },
        "base64_url_safe_decode": { input, _, _ throws(LiquidError) in
            var text = input.text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            while text.count % 4 != 0 { text += "=" }
            guard let data = Data(base64Encoded: text), let decoded = String(data: data, encoding: .utf8) else {
                throw LiquidError(.render, "invalid base64 provided to base64_url_safe_decode")
            }
            return .string(decoded)
        },
        "default": { input, arguments, _ in
            let fallback = arguments[0] ?? .string("")
            let allowFalse = arguments.keywords["allow_false"]?.isTruthy ?? false
            let missing = allowFalse ? input == .nil : !input.isTruthy
            return missing || input.isEmpty ? fallback : input
        },
        "date": { input, arguments, renderer throws(LiquidError) in
            let format = arguments[0]?.text ?? ""
            if format.isEmpty { return input }
            guard let date = LiquidDate.parse(input, now: renderer.options.now, timeZone: renderer.options.timeZone) else { return input }
            return .string(LiquidDate.format(date, format, timeZone: renderer.options.timeZone))
        },
        "json": { input, _, renderer throws(LiquidError) in
            if case .range = input { try renderer.charge(input.rangeCount ?? Int.max) }
            return .string(LiquidJSON.serialize(input))
        },
        "raw": { input, _, _ in input },
    ]

    /// Ruby's whitespace for `strip`: space, tab, line breaks, vertical tab, form feed, NUL.
    static func isRubySpace(_ character: Character) -> Bool { character.isWhitespace || character == "\0" }

    static func rstrip(_ text: String) -> String {
        var text = Substring(text)
        while let last = text.last, isRubySpace(last) { text = text.dropLast() }
        return String(text)
    }

    /// `&`, `<`, `>`, `"` and `'` as entities (CGI.escapeHTML).
    public static func escapeHTML(_ text: String) -> String {
        guard text.contains(where: { "&<>\"'".contains($0) }) else { return text }
        var out = ""
        out.reserveCapacity(text.utf8.count + 16)
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }

    /// Escapes like `escape`, but leaves an `&` that already starts an entity.
    static func escapeOnce(_ text: String) -> String {
        var out = ""
        let characters = Array(text)
        for (index, character) in characters.enumerated() {
            if character == "&" {
                var end = index + 1
                if end < characters.count, characters[end] == "#" {
                    end += 1
                    let digits = end
                    while end < characters.count, characters[end].isASCIIDigit { end += 1 }
                    if end > digits, end < characters.count, characters[end] == ";" {
                        out.append(character)
                        continue
                    }
                } else {
                    let letters = end
                    while end < characters.count, characters[end].isASCII, characters[end].isLetter { end += 1 }
                    if end > letters, end < characters.count, characters[end] == ";" {
                        out.append(character)
                        continue
                    }
                }
            }
            out += escapeHTML(String(character))
        }
        return out
    }

    static func replaceFirst(_ text: String, _ target: String, _ replacement: String) -> String {
        if target.isEmpty { return replacement + text }
        guard let range = text.range(of: target) else { return text }
        return text.replacingCharacters(in: range, with: replacement)
    }

    static func replaceLast(_ text: String, _ target: String, _ replacement: String) -> String {
        if target.isEmpty { return text + replacement }
        guard let range = text.range(of: target, options: .backwards) else { return text }
        return text.replacingCharacters(in: range, with: replacement)
    }

    /// Ruby's `gsub("", r)`: `r` between every character and at both ends.
    private static func interleave(_ text: String, _ separator: String) -> String {
        separator + text.map { String($0) + separator }.joined()
    }

    /// Ruby's `slice(offset, length)`: nil when the offset is past the end, from the end when negative.
    static func rubySlice<T>(_ items: [T], _ offset: Int, _ length: Int) -> [T]? {
        let start = offset < 0 ? items.count + offset : offset
        guard start >= 0, start <= items.count, length >= 0 else { return nil }
        return Array(items[start..<min(items.count, start.clampedAdding(length))])
    }

    /// Ruby's `String#split`: a single space splits on runs of whitespace, an empty pattern into characters, and
    /// trailing empty strings are dropped.
    static func split(_ text: String, _ pattern: String) -> [String] {
        if text.isEmpty { return [] }
        if pattern == " " { return text.split(whereSeparator: isRubySpace).map(String.init) }
        if pattern.isEmpty { return text.map { String($0) } }
        var parts = text.components(separatedBy: pattern)
        while parts.last == "" { parts.removeLast() }
        return parts
    }

    /// Scripts, comments and styles go whole, then every tag.
    static func stripHTML(_ text: String) -> String {
        var out = text
        for pattern in ["<script.*?</script>", "<!--.*?-->", "<style.*?</style>", "<.*?>"] {
            let regex = try! NSRegularExpression(pattern: pattern, options: [.dotMatchesLineSeparators, .caseInsensitive])
            out = regex.stringByReplacingMatches(in: out, range: NSRange(out.startIndex..., in: out), withTemplate: "")
        }
        return out
    }

    /// `CGI.escape`: letters, digits and `_.-~` stay, a space becomes `+`, every other byte `%XX`.
    static func urlEncode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            case UInt8(ascii: " "): out += "+"
            default: out += String(format: "%%%02X", byte)
            }
        }
        return out
    }

    /// `CGI.unescape`: `+` is a space, `%XX` a byte.
    static func urlDecode(_ text: String) -> String {
        var bytes: [UInt8] = []
        let utf8 = Array(text.utf8)
        var index = 0
        while index < utf8.count {
            if utf8[index] == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if utf8[index] == UInt8(ascii: "%"), index + 2 < utf8.count,
                let byte = UInt8(String(decoding: utf8[index + 1...index + 2], as: UTF8.self), radix: 16)
            {
                bytes.append(byte)
                index += 2
            } else {
                bytes.append(utf8[index])
            }
            index += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Math

    static let math: [String: Filter] = [
        "plus": { input, arguments, _ throws(LiquidError) in try LiquidNumbers.apply(.plus, input, try arguments.required(0)) },
        "minus": { input, arguments, _ throws(LiquidError) in try LiquidNumbers.apply(.minus, input, try arguments.required(0)) },
        "times": { input, arguments, _ throws(LiquidError) in try LiquidNumbers.apply(.times, input, try arguments.required(0)) },
        "divided_by": { input, arguments, _ throws(LiquidError) in try LiquidNumbers.apply(.dividedBy, input, try arguments.required(0)) },
        "modulo": { input, arguments, _ throws(LiquidError) in try LiquidNumbers.apply(.modulo, input, try arguments.required(0)) },
        "abs": { input, _, _ in
            switch LiquidNumbers.number(input) {
            // |Int.min| is one past Int: the float nearest it, as every integer result past 64 bits.
            case .int(let value): value == Int.min ? .double(-Double(value)) : .int(abs(value))
            case .decimal(let value): .double(abs(LiquidNumbers.double(value)))
            case .float(let value): .double(abs(value))
            }
        },
        "at_least": { input, arguments, _ throws(LiquidError) in extreme(input, try arguments.required(0), greater: true) },
        "at_most": { input, arguments, _ throws(LiquidError) in extreme(input, try arguments.required(0), greater: false) },
        "ceil": { input, _, _ throws(LiquidError) in
            switch LiquidNumbers.number(input) {
            case .int(let value): .int(value)
            case .decimal(let value): try LiquidNumbers.integral(LiquidNumbers.round(value, 0, .up), "ceil")
            case .float(let value): try LiquidNumbers.integral(value.rounded(.up), "ceil")
            }
        },
        "floor": { input, _, _ throws(LiquidError) in
            switch LiquidNumbers.number(input) {
            case .int(let value): .int(value)
            case .decimal(let value): try LiquidNumbers.integral(LiquidNumbers.floor(value), "floor")
            case .float(let value): try LiquidNumbers.integral(value.rounded(.down), "floor")
            }
        },
        "round": { input, arguments, _ throws(LiquidError) in
            // Ruby rounds to `to_number(n)` places: 1.2 places is 1.
            let places = arguments[0].map(LiquidNumbers.places) ?? 0
            if let exact = LiquidNumbers.exact(input), places > -18, places < 18 {
                let rounded = exact.rounded(places: places)
                if places <= 0, let integer = rounded.integer { return .int(integer) }
                if places > 0 { return .double(rounded.double) }
            }
            switch LiquidNumbers.number(input) {
            case .int(let value):
                guard places < 0 else { return .int(value) }
                return try LiquidNumbers.integral(LiquidNumbers.round(Decimal(value), places), "round")
            case .decimal(let value):
                let rounded = LiquidNumbers.round(value, places)
                return places <= 0 ? try LiquidNumbers.integral(rounded, "round") : .double(LiquidNumbers.double(rounded))
            case .float(let value):
                // Past Decimal's range a float has no fraction left to round; Ruby's Infinity.round(2) is Infinity.
                return places <= 0 ? try LiquidNumbers.integral(value, "round") : .double(value)
            }
        },
    ]

    private static func extreme(_ input: LiquidValue, _ bound: LiquidValue, greater: Bool) -> LiquidValue {
        let a = LiquidNumbers.number(input), b = LiquidNumbers.number(bound)
        let pick = greater ? LiquidNumbers.double(LiquidNumbers.value(a)) >= LiquidNumbers.double(LiquidNumbers.value(b))
            : LiquidNumbers.double(LiquidNumbers.value(a)) <= LiquidNumbers.double(LiquidNumbers.value(b))
        return LiquidNumbers.value(pick ? a : b)
    }
}
