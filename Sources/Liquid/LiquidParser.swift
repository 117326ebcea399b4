import Foundation

/// Builds a template's tree from its tokens. Block tags read their bodies up to their end tag; every error says
/// where (line and column of the tag).
struct LiquidParser {
    private var tokens: [LiquidToken]
    private var index = 0
    /// Filters this engine knows, with how many positional arguments each takes: an unknown filter, or a known one
    /// given too few or too many, is a syntax error found when the template is loaded.
    let filterArities: [String: ClosedRange<Int>]

    init(tokens: [LiquidToken], filterArities: [String: ClosedRange<Int>]) {
        self.tokens = tokens
        self.filterArities = filterArities
    }

    /// The whole template.
    mutating func parseDocument() throws(LiquidError) -> [LiquidNode] {
        let (nodes, end) = try parseBody(until: [])
        if let end { throw LiquidError(.syntax, "Unexpected tag '\(end.name)'", at: end.position) }
        return nodes
    }

    private struct EndTag {
        var name: String
        var markup: Substring
        var position: SourcePosition
    }

    /// Nodes up to one of `until` (returned, consumed) or the end of the tokens (nil).
    private mutating func parseBody(until: Set<String>) throws(LiquidError) -> ([LiquidNode], EndTag?) {
        var nodes: [LiquidNode] = []
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            switch token.kind {
            case .text: nodes.append(.text(token.content))
            case .output: nodes.append(try output(token.content, at: token.position))
            case .tag:
                let (name, markup) = Self.split(token.content)
                if until.contains(name) { return (nodes, EndTag(name: name, markup: markup, position: token.position)) }
                if let node = try tag(name, markup, at: token.position) { nodes.append(node) }
            }
        }
        return (nodes, nil)
    }

    /// A tag's name and the rest of its markup.
    static func split(_ content: String) -> (String, Substring) {
        let trimmed = content.drop { $0.isWhitespace }
        if trimmed.first == "#" { return ("#", trimmed.dropFirst()) }
        let name = trimmed.prefix { !$0.isWhitespace && $0 != "(" }
        return (String(name), trimmed[name.endIndex...])
    }

    private func output(_ markup: String, at position: SourcePosition) throws(LiquidError) -> LiquidNode {
        var parser = try LiquidMarkupParser(markup, at: position)
        if parser.atEnd { return .text("") }
        var filtered = try parser.filtered()
        try parser.expectEnd()
        if filtered.filters.isEmpty, case .variable(let parts) = filtered.expression, parts.count == 2,
            case .name("content_blocks") = parts[0], case .name(let block) = parts[1]
        {
            return .contentBlock(Self.bareName(block), position)
        }
        try checkFilters(&filtered, parser)
        return .output(filtered, position)
    }

    /// `${name}` → `name` (Braze's attribute form after a dot).
    static func bareName(_ name: String) -> String {
        name.hasPrefix("${") && name.hasSuffix("}") ? String(name.dropFirst(2).dropLast()) : name
    }

    /// Checks each filter's name and argument count, and binds it to its function.
    private func checkFilters(_ filtered: inout LiquidFiltered, _ parser: LiquidMarkupParser) throws(LiquidError) {
        for (index, filter) in filtered.filters.enumerated() {
            filtered.filters[index].function = LiquidFilters.table[filter.name]
            guard let arity = filterArities[filter.name] else {
                throw LiquidError(.syntax, "Unknown filter '\(filter.name)'", at: parser.position)
            }
            guard arity.contains(filter.arguments.count) else {
                let expected = arity.lowerBound == arity.upperBound ? "\(arity.lowerBound)" : "\(arity.lowerBound)..\(arity.upperBound)"
                throw LiquidError(
                    .syntax, "wrong number of arguments for '\(filter.name)' (given \(filter.arguments.count), expected \(expected))",
                    at: parser.position)
            }
        }
    }

    private func filteredMarkup(_ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidFiltered {
        var parser = try LiquidMarkupParser(markup, at: position)
        var filtered = try parser.filtered()
        try parser.expectEnd()
        try checkFilters(&filtered, parser)
        return filtered
    }

    private func condition(_ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidCondition {
        var parser = try LiquidMarkupParser(markup, at: position)
        let condition = try parser.condition()
        try parser.expectEnd()
        return condition
    }

    // MARK: Tags

    private mutating func tag(_ name: String, _ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidNode? {
        switch name {
        case "#":
            // An inline comment over several lines starts each with `#`.
            for line in markup.split(whereSeparator: \.isNewline).dropFirst() {
                let text = line.drop { $0.isWhitespace }
                if !text.isEmpty, text.first != "#" {
                    throw LiquidError(.syntax, "every line of an inline comment starts with '#'", at: position)
                }
            }
            return nil
        case "comment":
            try skipComment(at: position)
            return nil
        case "assign":
            guard let equals = markup.firstIndex(of: "=") else {
                throw LiquidError(.syntax, "Syntax Error in 'assign' - Valid syntax: assign [var] = [source]", at: position)
            }
            let variable = markup[..<equals].trimmingCharacters(in: .whitespaces)
            guard Self.isVariableName(variable) else {
                throw LiquidError(.syntax, "Syntax Error in 'assign' - Valid syntax: assign [var] = [source]", at: position)
            }
            return .assign(variable, try filteredMarkup(markup[markup.index(after: equals)...], at: position), position)
        case "capture":
            let variable = markup.trimmingCharacters(in: .whitespaces)
            guard Self.isVariableName(variable) else {
                throw LiquidError(.syntax, "Syntax Error in 'capture' - Valid syntax: capture [var]", at: position)
            }
            return .capture(variable, try block("capture", at: position).0)
        case "ifchanged": return .ifchanged(try block("ifchanged", at: position).0)
        case "if", "unless": return try conditional(name, markup, at: position)
        case "case": return try caseTag(markup, at: position)
        case "for", "tablerow": return try loop(name, markup, at: position)
        case "break": return .break
        case "continue": return .continue
        case "increment", "decrement":
            let variable = markup.trimmingCharacters(in: .whitespaces)
            guard Self.isVariableName(variable) else { throw LiquidError(.syntax, "Syntax Error in '\(name)'", at: position) }
            return name == "increment" ? .increment(variable) : .decrement(variable)
        case "cycle": return try cycle(markup, at: position)
        case "echo":
            if markup.allSatisfy(\.isWhitespace) { return .text("") }
            return .output(try filteredMarkup(markup, at: position), position)
        case "liquid": return try liquidTag(markup, at: position)
        case "abort_message":
            var parser = try LiquidMarkupParser(markup, at: position)
            if parser.atEnd { return .abort(nil, position) }
            let parenthesized = parser.accept(.punctuation("("))
            var reason: LiquidExpression?
            if !(parenthesized && parser.peek == .punctuation(")")) { reason = try parser.expression() }
            if parenthesized { try parser.expect(.punctuation(")"), "')'") }
            try parser.expectEnd()
            return .abort(reason, position)
        case "raw":
            // The lexer turned a closed `raw` into text: reaching here means it was never closed.
            throw LiquidError(.syntax, "'raw' tag was never closed", at: position)
        case "else", "elsif", "when", "endif", "endunless", "endfor", "endcase", "endcapture", "endtablerow", "endcomment", "endraw":
            throw LiquidError(.syntax, "Unexpected tag '\(name)'", at: position)
        case "include", "render":
            throw LiquidError(.syntax, "'\(name)' is not supported: reuse text with content_blocks", at: position)
        default:
            throw LiquidError(.syntax, "Unknown tag '\(name)'", at: position)
        }
    }

    /// Ruby Liquid's `[\w-]+`: digits alone name a variable too (`{% assign 123 = … %}`), though `{{ 123 }}` is the number.
    static func isVariableName(_ name: some StringProtocol) -> Bool {
        !name.isEmpty && name.unicodeScalars.allSatisfy { $0 == "_" || $0 == "-" || $0.properties.isAlphabetic || ("0"..."9").contains($0) }
    }

    /// A block body that would write only whitespace (its text all blank, its tags `assign`, `capture` and blocks of
    /// the same kind) loses that whitespace, as Ruby Liquid's blank blocks do.
    static func blankStripped(_ body: [LiquidNode]) -> [LiquidNode] {
        guard body.allSatisfy(isBlank) else { return body }
        return body.filter { if case .text = $0 { false } else { true } }
    }

    static func isBlank(_ node: LiquidNode) -> Bool {
        switch node {
        case .text(let text): text.allSatisfy(\.isWhitespace)
        case .assign, .capture: true
        case .conditional(let branches, _, _): branches.allSatisfy { $0.body.allSatisfy(isBlank) }
        case .case(_, let whens, _): whens.allSatisfy { $0.body.allSatisfy(isBlank) }
        case .loop(let loop): loop.body.allSatisfy(isBlank) && (loop.empty ?? []).allSatisfy(isBlank)
        default: false
        }
    }

    /// A block's body up to `end<name>` (or one of `also`, returned with it).
    private mutating func block(_ name: String, also: Set<String> = [], at position: SourcePosition) throws(LiquidError) -> ([LiquidNode], EndTag) {
        let (nodes, end) = try parseBody(until: also.union(["end\(name)"]))
        guard let end else { throw LiquidError(.syntax, "'\(name)' tag was never closed", at: position) }
        return (nodes, end)
    }

    private mutating func skipComment(at position: SourcePosition) throws(LiquidError) {
        var depth = 1
        while index < tokens.count {
            let token = tokens[index]
            index += 1
            guard token.kind == .tag else { continue }
            switch Self.split(token.content).0 {
            case "comment": depth += 1
            case "endcomment":
                depth -= 1
                if depth == 0 { return }
            default: continue
            }
        }
        throw LiquidError(.syntax, "'comment' tag was never closed", at: position)
    }

    private mutating func conditional(_ name: String, _ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidNode {
        var branches: [LiquidNode.Branch] = []
        var condition: LiquidCondition? = try self.condition(markup, at: position)
        while true {
            let (body, end) = try block(name, also: ["elsif", "else"], at: position)
            branches.append(LiquidNode.Branch(condition: condition, body: body))
            switch end.name {
            // After an `else`, Ruby Liquid parses further branches but never reaches them.
            case "elsif":
                condition = try self.condition(end.markup, at: end.position)
            case "else":
                condition = nil
            default:
                // Blank only when every branch is: one branch's output keeps the whitespace of all.
                if branches.allSatisfy({ $0.body.allSatisfy(Self.isBlank) }) {
                    branches = branches.map { LiquidNode.Branch(condition: $0.condition, body: Self.blankStripped($0.body)) }
                }
                return .conditional(branches, negated: name == "unless", position)
            }
        }
    }

    private mutating func caseTag(_ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidNode {
        var parser = try LiquidMarkupParser(markup, at: position)
        let subject = try parser.expression()
        try parser.expectEnd()
        // Anything before the first `when` is dropped, as in Ruby Liquid.
        var (_, end) = try block("case", also: ["when", "else"], at: position)
        var whens: [LiquidNode.When] = []
        while end.name != "endcase" {
            let (body, next) = try block("case", also: ["when", "else"], at: position)
            if end.name == "when" {
                var values: [LiquidExpression] = []
                var parser = try LiquidMarkupParser(end.markup, at: end.position)
                repeat { values.append(try parser.expression()) } while parser.accept(.punctuation(",")) || parser.accept(.identifier("or"))
                try parser.expectEnd()
                // `when a, b` is one block per value, sharing the body: both matching render it twice, as in Ruby.
                whens += values.map { LiquidNode.When(value: $0, body: body) }
            } else {
                whens.append(LiquidNode.When(value: nil, body: body))
            }
            end = next
        }
        if whens.allSatisfy({ $0.body.allSatisfy(Self.isBlank) }) {
            whens = whens.map { LiquidNode.When(value: $0.value, body: Self.blankStripped($0.body)) }
        }
        return .case(subject, whens, position)
    }

    /// `for item in collection [reversed] [limit: n] [offset: n|continue]`, or `tablerow … [cols: n]`.
    private mutating func loop(_ name: String, _ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidNode {
        var parser = try LiquidMarkupParser(markup, at: position)
        let variable = try parser.identifier("a variable name")
        guard parser.accept(.identifier("in")) else {
            throw LiquidError(.syntax, "Syntax Error in '\(name) loop' - Valid syntax: \(name) [item] in [collection]", at: position)
        }
        let collection = try parser.expression()
        var loop = LiquidNode.Loop(
            variable: variable, collection: collection, limit: nil, offset: nil, offsetContinues: false, reversed: false,
            body: [], empty: nil, columns: nil, position: position)
        while !parser.atEnd {
            _ = parser.accept(.punctuation(","))
            let word = try parser.identifier("limit, offset or reversed")
            switch word {
            case "reversed": loop.reversed = true
            case "limit", "offset", "cols":
                try parser.expect(.punctuation(":"), "':' after \(word)")
                if word == "offset", parser.accept(.identifier("continue")) {
                    loop.offsetContinues = true
                } else {
                    let value = try parser.expression()
                    if word == "limit" { loop.limit = value } else if word == "offset" { loop.offset = value } else { loop.columns = value }
                }
                _ = parser.accept(.punctuation(","))
            default: throw parser.fail("Unexpected '\(word)'")
            }
        }
        let (body, end) = try block(name, also: name == "for" ? ["else"] : [], at: position)
        loop.body = body
        if end.name == "else" { loop.empty = try block(name, at: position).0 }
        if name == "for", (loop.body + (loop.empty ?? [])).allSatisfy(Self.isBlank) {
            loop.body = Self.blankStripped(loop.body)
            loop.empty = loop.empty.map(Self.blankStripped)
        }
        return name == "for" ? .loop(loop) : .tablerow(loop)
    }

    private func cycle(_ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidNode {
        var parser = try LiquidMarkupParser(markup, at: position)
        var group: LiquidExpression?
        var values = [try parser.expression()]
        if parser.accept(.punctuation(":")) {
            group = values[0]
            values = [try parser.expression()]
        }
        while parser.accept(.punctuation(",")) { values.append(try parser.expression()) }
        try parser.expectEnd()
        return .cycle(group: group, values: values, position)
    }

    /// `{% liquid … %}`: one tag per line, without delimiters, `echo` for output.
    private func liquidTag(_ markup: Substring, at position: SourcePosition) throws(LiquidError) -> LiquidNode {
        var lines: [LiquidToken] = []
        for (offset, line) in markup.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let content = line.trimmingCharacters(in: .whitespacesAndNewlines)
            if content.isEmpty { continue }
            lines.append(
                LiquidToken(kind: .tag, content: content, position: SourcePosition(line: position.line + offset, column: offset == 0 ? position.column : 1)))
        }
        var parser = LiquidParser(tokens: lines, filterArities: filterArities)
        let nodes = try parser.parseDocument()
        return .conditional([LiquidNode.Branch(condition: nil, body: nodes)], negated: false, position)
    }
}
