import Foundation

/// An expression inside a tag or an output: a literal, a variable with its path, a range, `empty` or `blank`.
indirect enum LiquidExpression: Sendable {
    enum PathPart: Sendable {
        case name(String)
        case index(LiquidExpression)
    }

    case literal(LiquidValue)
    case variable([PathPart])
    case range(LiquidExpression, LiquidExpression)
    /// `empty` and `blank`: equal to empty (or blank) values in comparisons, nothing when written out.
    case empty
    case blank

    /// `c.first_name`, `items[0]`: the path as written, for error messages.
    var name: String {
        switch self {
        case .variable(let parts):
            var text = ""
            for part in parts {
                switch part {
                case .name(let name): text += text.isEmpty ? name : "." + name
                case .index(.literal(let value)): text += "[\(value.inspect)]"
                case .index(let expression): text += "[\(expression.name)]"
                }
            }
            return text
        case .literal(let value): return value.inspect
        case .range(let low, let high): return "(\(low.name)..\(high.name))"
        case .empty: return "empty"
        case .blank: return "blank"
        }
    }
}

/// A filter applied in an output or an `assign`: `truncate: 20, "…"`, `default: 0, allow_false: true`.
struct LiquidFilterCall: Sendable {
    var name: String
    var arguments: [LiquidExpression]
    var keywords: [(String, LiquidExpression)]
    /// Written as Herald's first template syntax, a string after `|` (`{{ c.name | "there" }}`).
    var shorthand = false
    /// The filter itself, found once when the template is parsed.
    var function: LiquidFilters.Filter?
}

/// An expression and the filters after it.
struct LiquidFiltered: Sendable {
    var expression: LiquidExpression
    var filters: [LiquidFilterCall] {
        didSet { hasDefault = filters.contains { $0.name == "default" } }
    }
    /// A `default` among the filters: strict variables let the value be missing.
    private(set) var hasDefault = false

    init(expression: LiquidExpression, filters: [LiquidFilterCall]) {
        self.expression = expression
        self.filters = filters
        hasDefault = filters.contains { $0.name == "default" }
    }
}

/// A condition of `if`, `unless`, `elsif`: comparisons joined by `and` / `or`, which Liquid evaluates from the right
/// (`a or b and c` is `a or (b and c)`, and `a and b or c` is `a and (b or c)`).
indirect enum LiquidCondition: Sendable {
    enum Operator: String, Sendable {
        case equal = "==", notEqual = "!=", less = "<", greater = ">", lessOrEqual = "<=", greaterOrEqual = ">="
        case contains
    }

    case value(LiquidExpression)
    case compare(LiquidExpression, Operator, LiquidExpression)
    case and(LiquidCondition, LiquidCondition)
    case or(LiquidCondition, LiquidCondition)
}

/// The tokens of a tag's or an output's markup.
enum LiquidMarkupToken: Sendable, Equatable {
    case identifier(String)
    case string(String)
    case integer(Int)
    case float(Double)
    case comparison(String)
    case punctuation(String)
}

/// Reads expressions, filters and conditions from markup; every error names the markup.
struct LiquidMarkupParser {
    private(set) var tokens: [LiquidMarkupToken]
    private(set) var index = 0
    let markup: String
    let position: SourcePosition

    init(_ markup: some StringProtocol, at position: SourcePosition) throws(LiquidError) {
        self.markup = String(markup)
        self.position = position
        tokens = try Self.scan(self.markup, at: position)
    }

    var atEnd: Bool { index == tokens.count }
    var peek: LiquidMarkupToken? { index < tokens.count ? tokens[index] : nil }

    func fail(_ message: String) -> LiquidError {
        LiquidError(.syntax, "\(message) in \"\(markup.trimmingCharacters(in: .whitespaces))\"", at: position)
    }

    mutating func next() -> LiquidMarkupToken? {
        guard index < tokens.count else { return nil }
        defer { index += 1 }
        return tokens[index]
    }

    /// Consumes `token` if it comes next.
    mutating func accept(_ token: LiquidMarkupToken) -> Bool {
        guard peek == token else { return false }
        index += 1
        return true
    }

    mutating func expect(_ token: LiquidMarkupToken, _ what: String) throws(LiquidError) {
        guard accept(token) else { throw fail("Expected \(what)") }
    }

    mutating func identifier(_ what: String) throws(LiquidError) -> String {
        guard case .identifier(let name)? = next() else { throw fail("Expected \(what)") }
        return name
    }

    func expectEnd() throws(LiquidError) {
        guard atEnd else { throw fail("Unexpected \(Self.describe(tokens[index]))") }
    }

    static func describe(_ token: LiquidMarkupToken) -> String {
        switch token {
        case .identifier(let name): "'\(name)'"
        case .string(let text): "string \"\(text)\""
        case .integer(let value): "number \(value)"
        case .float(let value): "number \(value)"
        case .comparison(let text), .punctuation(let text): "'\(text)'"
        }
    }

    // MARK: Expressions

    mutating func expression() throws(LiquidError) -> LiquidExpression {
        switch next() {
        case .string(let text)?: return .literal(.string(text))
        case .integer(let value)?: return .literal(.int(value))
        case .float(let value)?: return .literal(.double(value))
        case .punctuation("(")?:
            let low = try expression()
            try expect(.punctuation(".."), "'..' in a range")
            let high = try expression()
            try expect(.punctuation(")"), "')' closing a range")
            return .range(low, high)
        case .punctuation("[")?:
            let key = try expression()
            try expect(.punctuation("]"), "']'")
            return try path([.index(key)])
        case .identifier(let name)?:
            switch name {
            case "true": return .literal(.bool(true))
            case "false": return .literal(.bool(false))
            case "nil", "null": return .literal(.nil)
            case "empty" where peek != .punctuation(".") && peek != .punctuation("["): return .empty
            case "blank" where peek != .punctuation(".") && peek != .punctuation("["): return .blank
            default: return try path([.name(name)])
            }
        case let token?: throw fail("Unexpected \(Self.describe(token))")
        case nil: throw fail("Expected a value")
        }
    }

    private mutating func path(_ start: [LiquidExpression.PathPart]) throws(LiquidError) -> LiquidExpression {
        var parts = start
        while true {
            if accept(.punctuation(".")) {
                parts.append(.name(try identifier("a name after '.'")))
            } else if accept(.punctuation("[")) {
                let key = try expression()
                try expect(.punctuation("]"), "']'")
                parts.append(.index(key))
            } else {
                return .variable(parts)
            }
        }
    }

    /// An expression and its filters: `x | f | g: 1, key: 2`.
    mutating func filtered() throws(LiquidError) -> LiquidFiltered {
        let subject = try expression()
        var filters: [LiquidFilterCall] = []
        while accept(.punctuation("|")) {
            // Herald's first template syntax: a string after `|` is the default (`{{ c.name | "there" }}`).
            if case .string(let fallback)? = peek {
                index += 1
                filters.append(LiquidFilterCall(name: "default", arguments: [.literal(.string(fallback))], keywords: [], shorthand: true))
                continue
            }
            let name = try identifier("a filter name after '|'")
            var call = LiquidFilterCall(name: name, arguments: [], keywords: [])
            if accept(.punctuation(":")) {
                repeat {
                    if case .identifier(let keyword)? = peek, index + 1 < tokens.count, tokens[index + 1] == .punctuation(":") {
                        index += 2
                        call.keywords.append((keyword, try expression()))
                    } else {
                        call.arguments.append(try expression())
                    }
                } while accept(.punctuation(","))
            }
            filters.append(call)
        }
        return LiquidFiltered(expression: subject, filters: filters)
    }

    // MARK: Conditions

    mutating func condition() throws(LiquidError) -> LiquidCondition {
        let left = try comparison()
        if accept(.identifier("and")) { return LiquidCondition.and(left, try self.condition()) }
        if accept(.identifier("or")) { return LiquidCondition.or(left, try self.condition()) }
        return left
    }

    private mutating func comparison() throws(LiquidError) -> LiquidCondition {
        let left = try expression()
        let op: LiquidCondition.Operator
        switch peek {
        case .comparison(let text)?:
            op = text == "<>" ? .notEqual : LiquidCondition.Operator(rawValue: text)!
        case .identifier("contains")?: op = .contains
        default: return .value(left)
        }
        index += 1
        return .compare(left, op, try expression())
    }

    // MARK: Scanning

    private static func scan(_ markup: String, at position: SourcePosition) throws(LiquidError) -> [LiquidMarkupToken] {
        var tokens: [LiquidMarkupToken] = []
        let characters = Array(markup.unicodeScalars)
        var index = 0
        func isIdentifierStart(_ c: Unicode.Scalar) -> Bool { c == "_" || c.properties.isAlphabetic }
        func isIdentifierPart(_ c: Unicode.Scalar) -> Bool { isIdentifierStart(c) || ("0"..."9").contains(c) || c == "-" }
        func isDigit(_ c: Unicode.Scalar) -> Bool { ("0"..."9").contains(c) }
        func fail(_ message: String) -> LiquidError {
            LiquidError(.syntax, "\(message) in \"\(markup.trimmingCharacters(in: .whitespaces))\"", at: position)
        }
        while index < characters.count {
            let c = characters[index]
            if c.properties.isWhitespace {
                index += 1
                continue
            }
            if c == "\"" || c == "'" {
                guard let close = characters[(index + 1)...].firstIndex(of: c) else { throw fail("Unterminated string") }
                tokens.append(.string(String(String.UnicodeScalarView(characters[(index + 1)..<close]))))
                index = close + 1
                continue
            }
            if isDigit(c) || (c == "-" && index + 1 < characters.count && isDigit(characters[index + 1])) {
                var end = index + 1
                while end < characters.count, isDigit(characters[end]) { end += 1 }
                var isFloat = false
                if end + 1 < characters.count, characters[end] == ".", isDigit(characters[end + 1]) {
                    isFloat = true
                    end += 1
                    while end < characters.count, isDigit(characters[end]) { end += 1 }
                }
                let text = String(String.UnicodeScalarView(characters[index..<end]))
                if isFloat {
                    tokens.append(.float(Double(text)!))
                } else if let value = Int(text) {
                    tokens.append(.integer(value))
                } else {
                    tokens.append(.float(Double(text)!))
                }
                index = end
                continue
            }
            if c == "$", index + 1 < characters.count, characters[index + 1] == "{" {
                // Braze's attribute form: `${first_name}` is one name.
                guard let close = characters[(index + 2)...].firstIndex(of: "}") else { throw fail("`${` without its `}`") }
                tokens.append(.identifier(String(String.UnicodeScalarView(characters[index...close]))))
                index = close + 1
                continue
            }
            if isIdentifierStart(c) {
                var end = index + 1
                while end < characters.count, isIdentifierPart(characters[end]) { end += 1 }
                if end < characters.count, characters[end] == "?" { end += 1 }
                tokens.append(.identifier(String(String.UnicodeScalarView(characters[index..<end]))))
                index = end
                continue
            }
            let two = index + 1 < characters.count ? String(String.UnicodeScalarView(characters[index...index + 1])) : ""
            if ["==", "!=", "<>", "<=", ">="].contains(two) {
                tokens.append(.comparison(two))
                index += 2
            } else if two == ".." {
                tokens.append(.punctuation(".."))
                index += 2
            } else if c == "<" || c == ">" {
                tokens.append(.comparison(String(c)))
                index += 1
            } else if ".[]()|:,=".unicodeScalars.contains(c) {
                tokens.append(.punctuation(String(c)))
                index += 1
            } else {
                throw fail("Unexpected character '\(c)'")
            }
        }
        return tokens
    }
}
