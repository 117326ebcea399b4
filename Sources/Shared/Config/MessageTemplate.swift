import Foundation

/// A text with placeholders: `Hello {{ c.first_name | "there" }}, your {{ event.product }} is waiting`.
///
/// A placeholder names a value of the profile (`c.` custom attributes, `b.` natives such as `b.language` or
/// `b.custom_id`), of the trigger event (`event.<attribute>`, `event.label`) or of an API trigger's properties
/// (`trigger.<name>`), with an optional default after `|`. Rendering fails, naming the placeholder, when a value is
/// missing and there is no default: a message is sent whole or not at all.
package struct TemplateText: Sendable, Equatable {
    package enum Part: Sendable, Equatable {
        case literal(String)
        case value(path: String, fallback: String?)
    }

    package static let namespaces: Set<String> = ["c", "b", "event", "trigger"]

    package var parts: [Part]

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

    private static func placeholder(_ inside: Substring, offset: Int) throws(TemplateError) -> Part {
        let pieces = inside.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
        let path = pieces[0].trimmingCharacters(in: .whitespaces)
        let names = path.split(separator: ".", omittingEmptySubsequences: false)
        guard names.count >= 2, namespaces.contains(String(names[0])), !names.contains(where: \.isEmpty) else {
            throw TemplateError(
                offset: offset,
                message: "`{{\(inside)}}`: expected c.<attribute>, b.<native>, event.<attribute> or trigger.<property>")
        }
        var fallback: String?
        if pieces.count == 2 {
            let text = pieces[1].trimmingCharacters(in: .whitespaces)
            guard text.count >= 2, text.first == "\"", text.last == "\"" else {
                throw TemplateError(offset: offset, message: "`{{\(inside)}}`: the default after `|` is a string in double quotes")
            }
            fallback = String(text.dropFirst().dropLast())
        }
        return .value(path: path, fallback: fallback)
    }

    /// Every placeholder's path.
    package var paths: [String] {
        parts.compactMap { if case .value(let path, _) = $0 { path } else { nil } }
    }

    /// The text with each placeholder's value (or default); throws naming the first value missing without a default.
    package func render(_ read: (String) -> String?) throws(TemplateError) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let text): out += text
            case .value(let path, let fallback):
                guard let value = read(path) ?? fallback else {
                    throw TemplateError(offset: 0, message: "no value for {{ \(path) }} and no default")
                }
                out += value
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
