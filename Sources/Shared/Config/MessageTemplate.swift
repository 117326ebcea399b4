import Foundation

/// A text with placeholders: `Hello {{ c.first_name | "there" }}, your {{ event.product }} is waiting`.
///
/// A placeholder names a value of the profile (`c.` custom attributes, `b.` natives such as `b.language` or
/// `b.custom_id`), of the trigger event (`event.<attribute>`, `event.label`) or of an API trigger's properties
/// (`trigger.<name>`), with an optional default after `|`. Rendering fails, naming the placeholder, when a value is
/// missing and there is no default: a message is sent whole or not at all.
///
/// Where the text is HTML (an email's `html`), each placeholder's value is HTML-escaped unless the placeholder ends in
/// `| raw` (`{{ c.signature | raw }}`, or `{{ c.bio | "" | raw }}` with a default): a profile value is data, not markup.
package struct TemplateText: Sendable, Equatable {
    package enum Part: Sendable, Equatable {
        case literal(String)
        case value(path: String, fallback: String?, raw: Bool)
    }

    package static let namespaces: Set<String> = ["c", "b", "event", "trigger"]

    package var parts: [Part]

    /// What is fixed of the text: its literal parts, without its placeholders (the least a rendering holds).
    package var fixedText: String {
        parts.map { if case .literal(let literal) = $0 { literal } else { "" } }.joined()
    }

    /// A text without placeholders (a push field with a fixed form, `PushOptions`).
    package init(literal text: String) {
        parts = text.isEmpty ? [] : [.literal(text)]
    }

    /// Parses `text`; the error gives the character offset of the faulty placeholder.
    package init(parsing text: String) throws(TemplateError) {
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.literal(String(rest[..<open.lowerBound]))) }
            let offset = text.distance(from: text.startIndex, to: open.lowerBound)
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw TemplateError(offset: offset, message: "`{{` without a closing `}}`")
            }
            let inside = rest[open.upperBound..<close.lowerBound]
            parts.append(try Self.placeholder(inside, offset: offset))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.literal(String(rest))) }
        self.parts = parts
    }

    /// `path`, then filters after `|`: a default in double quotes (which may hold `|`), and `raw`.
    private static func placeholder(_ inside: Substring, offset: Int) throws(TemplateError) -> Part {
        let bar = inside.firstIndex(of: "|") ?? inside.endIndex
        let path = inside[..<bar].trimmingCharacters(in: .whitespaces)
        let names = path.split(separator: ".", omittingEmptySubsequences: false)
        guard names.count >= 2, namespaces.contains(String(names[0])), !names.contains(where: \.isEmpty) else {
            throw TemplateError(
                offset: offset,
                message: "`{{\(inside)}}`: expected c.<attribute>, b.<native>, event.<attribute> or trigger.<property>")
        }
        var fallback: String?
        var raw = false
        var rest = inside[bar...]
        while let first = rest.first, first == "|" {
            rest = rest.dropFirst().drop { $0 == " " }
            if rest.first == "\"" {
                guard fallback == nil, let close = rest.dropFirst().firstIndex(of: "\"") else {
                    throw TemplateError(offset: offset, message: "`{{\(inside)}}`: the default after `|` is a string in double quotes")
                }
                fallback = String(rest[rest.index(after: rest.startIndex)..<close])
                rest = rest[rest.index(after: close)...]
            } else if rest.hasPrefix("raw"), rest.dropFirst(3).allSatisfy({ $0 == " " || $0 == "|" }) {
                raw = true
                rest = rest.dropFirst(3)
            } else {
                throw TemplateError(offset: offset, message: "`{{\(inside)}}`: the default after `|` is a string in double quotes")
            }
            rest = rest.drop { $0 == " " }
        }
        guard rest.allSatisfy({ $0 == " " }) else {
            throw TemplateError(offset: offset, message: "`{{\(inside)}}`: the default after `|` is a string in double quotes")
        }
        return .value(path: path, fallback: fallback, raw: raw)
    }

    /// Every placeholder's path.
    package var paths: [String] {
        parts.compactMap { if case .value(let path, _, _) = $0 { path } else { nil } }
    }

    /// The text with each placeholder's value (or default), passed through `escape` unless the placeholder is `raw`;
    /// throws naming the first value missing without a default.
    package func render(_ read: (String) -> String?, escape: ((String) -> String)? = nil) throws(TemplateError) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let text): out += text
            case .value(let path, let fallback, let raw):
                guard let value = read(path) ?? fallback else {
                    throw TemplateError(offset: 0, message: "no value for {{ \(path) }} and no default")
                }
                out += raw ? value : escape?(value) ?? value
            }
        }
        return out
    }

    /// `&`, `<`, `>`, `"` and `'` as HTML entities.
    package static func escapeHTML(_ text: String) -> String {
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
}

package struct TemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    package var offset: Int
    package var message: String
    package var description: String { message }

    package init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }
}
