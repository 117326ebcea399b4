import Foundation

/// Herald's first template engine (placeholders `{{ c.name | "default" }}` only), kept here, out of the product, as
/// the benchmark's comparison: `TemplateBenchmark` renders a template both engines read with each.
struct FirstEngineError: Error {
    var message: String
}

struct FirstTemplateEngine {
    enum Part: Sendable, Equatable {
        case literal(String)
        case value(path: String, fallback: String?, raw: Bool)
    }

    static let namespaces: Set<String> = ["c", "b", "event", "trigger"]

    var parts: [Part]

    /// Parses `text`; the error gives the character offset of the faulty placeholder.
    init(parsing text: String) throws {
        var parts: [Part] = []
        var rest = Substring(text)
        while let open = rest.range(of: "{{") {
            if open.lowerBound > rest.startIndex { parts.append(.literal(String(rest[..<open.lowerBound]))) }
            let offset = text.distance(from: text.startIndex, to: open.lowerBound)
            guard let close = rest[open.upperBound...].range(of: "}}") else {
                throw FirstEngineError(message: "`{{` without a closing `}}`")
            }
            let inside = rest[open.upperBound..<close.lowerBound]
            parts.append(try Self.placeholder(inside, offset: offset))
            rest = rest[close.upperBound...]
        }
        if !rest.isEmpty { parts.append(.literal(String(rest))) }
        self.parts = parts
    }

    /// `path`, then filters after `|`: a default in double quotes (which may hold `|`), and `raw`.
    private static func placeholder(_ inside: Substring, offset: Int) throws -> Part {
        let bar = inside.firstIndex(of: "|") ?? inside.endIndex
        let path = inside[..<bar].trimmingCharacters(in: .whitespaces)
        let names = path.split(separator: ".", omittingEmptySubsequences: false)
        guard names.count >= 2, namespaces.contains(String(names[0])), !names.contains(where: \.isEmpty) else {
            throw FirstEngineError(
                message: "`{{\(inside)}}`: expected c.<attribute>, b.<native>, event.<attribute> or trigger.<property>")
        }
        var fallback: String?
        var raw = false
        var rest = inside[bar...]
        while let first = rest.first, first == "|" {
            rest = rest.dropFirst().drop { $0 == " " }
            if rest.first == "\"" {
                guard fallback == nil, let close = rest.dropFirst().firstIndex(of: "\"") else {
                    throw FirstEngineError(message: "`{{\(inside)}}`: the default after `|` is a string in double quotes")
                }
                fallback = String(rest[rest.index(after: rest.startIndex)..<close])
                rest = rest[rest.index(after: close)...]
            } else if rest.hasPrefix("raw"), rest.dropFirst(3).allSatisfy({ $0 == " " || $0 == "|" }) {
                raw = true
                rest = rest.dropFirst(3)
            } else {
                throw FirstEngineError(message: "`{{\(inside)}}`: the default after `|` is a string in double quotes")
            }
            rest = rest.drop { $0 == " " }
        }
        guard rest.allSatisfy({ $0 == " " }) else {
            throw FirstEngineError(message: "`{{\(inside)}}`: the default after `|` is a string in double quotes")
        }
        return .value(path: path, fallback: fallback, raw: raw)
    }

    /// The text with each placeholder's value (or default), passed through `escape` unless the placeholder is `raw`;
    /// throws naming the first value missing without a default.
    func render(_ read: (String) -> String?, escape: ((String) -> String)? = nil) throws -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let text): out += text
            case .value(let path, let fallback, let raw):
                guard let value = read(path) ?? fallback else {
                    throw FirstEngineError(message: "no value for {{ \(path) }} and no default")
                }
                out += raw ? value : escape?(value) ?? value
            }
        }
        return out
    }
}
