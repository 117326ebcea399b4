import Foundation

/// One render's state: variables by scope, counters, cycles, loop offsets and the work done so far.
final class LiquidRenderer {
    enum Interrupt {
        case none, `break`, `continue`
    }

    /// The given variables; `increment` and `decrement` count in them, as in Ruby Liquid.
    private var environment: LiquidObject
    private var assigns: [String: LiquidValue] = [:]
    /// Loop variables, innermost last.
    private var scopes: [LiquidObject] = []
    private var cycles: [String: Int] = [:]
    private var lastChanged: String?
    private var offsets: [String: Int] = [:]
    /// Names set by `capture`: their text is already escaped, so an output of them is not escaped again.
    private var captured: Set<String> = []
    private var steps = 0
    private var outputBytes = 0
    private var blockDepth = 0
    let options: LiquidRenderOptions

    init(environment: LiquidObject, options: LiquidRenderOptions) {
        self.environment = environment
        self.options = options
    }

    // MARK: Bounds

    func charge(_ work: Int, at position: SourcePosition = .unknown) throws(LiquidError) {
        steps = steps.clampedAdding(work)
        if steps > options.maxSteps {
            throw LiquidError(.limit, "the template did more than \(options.maxSteps) steps of work", at: position)
        }
    }

    func checkSize(_ text: String, at position: SourcePosition = .unknown) throws(LiquidError) {
        if text.utf8.count > options.maxOutputBytes {
            throw LiquidError(.limit, "the output grew past \(options.maxOutputBytes) bytes", at: position)
        }
    }

    private func write(_ text: String, into output: inout String, at position: SourcePosition) throws(LiquidError) {
        outputBytes += text.utf8.count
        if outputBytes > options.maxOutputBytes {
            throw LiquidError(.limit, "the output grew past \(options.maxOutputBytes) bytes", at: position)
        }
        output += text
    }

    // MARK: Nodes

    func render(_ nodes: [LiquidNode], into output: inout String) throws(LiquidError) -> Interrupt {
        for node in nodes {
            try charge(1)
            switch node {
            case .text(let text): try write(text, into: &output, at: .unknown)
            case .output(let filtered, let position):
                let value = try evaluate(filtered, at: position)
                var text = value.text
                if let escape = options.escape, !isSafe(filtered) { text = escape(text) }
                try write(text, into: &output, at: position)
            case .contentBlock(let name, let position):
                guard let block = options.contentBlocks[name] else {
                    throw LiquidError(.render, "no content block '\(name)'", at: position)
                }
                guard blockDepth < 10 else { throw LiquidError(.render, "content blocks nested more than 10 deep", at: position) }
                blockDepth += 1
                defer { blockDepth -= 1 }
                let interrupt = try render(block.nodes, into: &output)
                if interrupt != .none { return interrupt }
            case .assign(let name, let filtered, let position):
                assigns[name] = try evaluate(filtered, at: position)
                captured.remove(name)
            case .capture(let name, let body):
                var text = ""
                let start = outputBytes
                let interrupt = try render(body, into: &text)
                // Captured text counts once: when written out, not also while captured.
                outputBytes = start
                try checkSize(text)
                assigns[name] = .string(text)
                captured.insert(name)
                if interrupt != .none { return interrupt }
            case .conditional(let branches, let negated, let position):
                for (offset, branch) in branches.enumerated() {
                    var taken = true
                    if let condition = branch.condition {
                        taken = try test(condition, at: position)
                        if negated, offset == 0 { taken.toggle() }
                    }
                    if taken {
                        let interrupt = try render(branch.body, into: &output)
                        if interrupt != .none { return interrupt }
                        break
                    }
                }
            case .case(let subject, let whens, let position):
                let value = try evaluate(subject, strict: false, at: position)
                var matched = false
                for when in whens {
                    if let candidate = when.value {
                        guard LiquidCompare.equal(value, subject: subject, candidate, try evaluate(candidate, strict: false, at: position)) else { continue }
                        matched = true
                    } else if matched {
                        continue
                    }
                    let interrupt = try render(when.body, into: &output)
                    if interrupt != .none { return interrupt }
                }
            case .ifchanged(let body):
                var text = ""
                let start = outputBytes
                let interrupt = try render(body, into: &text)
                outputBytes = start
                if text != lastChanged {
                    lastChanged = text
                    try write(text, into: &output, at: .unknown)
                }
                if interrupt != .none { return interrupt }
            case .loop(let loop):
                let interrupt = try renderLoop(loop, into: &output)
                if interrupt != .none { return interrupt }
            case .tablerow(let loop): try renderTablerow(loop, into: &output)
            case .break: return .break
            case .continue: return .continue
            case .increment(let name):
                let value = LiquidNumbers.integer(environment[name] ?? .int(0)) ?? 0
                // A counter past Int (Ruby's would become a bignum) fails the render rather than trap.
                let (next, overflow) = value.addingReportingOverflow(1)
                guard !overflow else { throw LiquidError(.render, "increment \(name): the counter is past the largest integer") }
                environment[name] = .int(next)
                try write(String(value), into: &output, at: .unknown)
            case .decrement(let name):
                let (value, overflow) = (LiquidNumbers.integer(environment[name] ?? .int(0)) ?? 0).subtractingReportingOverflow(1)
                guard !overflow else { throw LiquidError(.render, "decrement \(name): the counter is past the smallest integer") }
                environment[name] = .int(value)
                try write(String(value), into: &output, at: .unknown)
            case .cycle(let group, let values, let position):
                let key = try group.map { (group) throws(LiquidError) in try evaluate(group, strict: false, at: position).text }
                    ?? values.map(\.name).joined(separator: ",")
                // As Ruby: the position is kept per group and wraps at the length of the cycle that reads it.
                let iteration = cycles[key] ?? 0
                cycles[key] = iteration + 1 >= values.count ? 0 : iteration + 1
                if iteration < values.count {
                    let value = try evaluate(values[iteration], strict: options.strictVariables, at: position)
                    try write(value.text, into: &output, at: position)
                }
            case .abort(let reason, let position):
                let text = try reason.map { (reason) throws(LiquidError) in try evaluate(reason, strict: false, at: position).text } ?? ""
                throw LiquidError(.aborted(reason: text), text.isEmpty ? "message aborted" : "message aborted: \(text)", at: position)
            }
        }
        return .none
    }

    /// An output already escaped or marked raw, or a captured variable written as is, is not escaped again.
    private func isSafe(_ filtered: LiquidFiltered) -> Bool {
        if let last = filtered.filters.last, ["raw", "escape", "escape_once"].contains(last.name) { return true }
        if filtered.filters.isEmpty, case .variable(let parts) = filtered.expression, parts.count == 1,
            case .name(let name) = parts[0], captured.contains(name), scopes.allSatisfy({ $0[name] == nil })
        {
            return true
        }
        return false
    }

    // MARK: Loops

    /// The items a loop walks after `offset` and `limit`, and the offset the next `offset: continue` starts at.
    private func segment(_ loop: LiquidNode.Loop) throws(LiquidError) -> [LiquidValue] {
        let collection = try evaluate(loop.collection, strict: options.strictVariables, at: loop.position)
        let from: Int
        if loop.offsetContinues {
            from = offsets[loop.name] ?? 0
        } else if let offset = loop.offset {
            from = try integer(evaluate(offset, strict: options.strictVariables, at: loop.position), "offset", at: loop.position)
        } else {
            from = 0
        }
        let limit = try loop.limit.map { (limit) throws(LiquidError) in
            try integer(evaluate(limit, strict: options.strictVariables, at: loop.position), "limit", at: loop.position)
        }
        var items: [LiquidValue]
        switch collection {
        case .range(let low, let high):
            // Walked without building the whole range: a loop over (1..1000000000) stops at the work bound. Offsets and
            // limits from data may be anything: a start past Int is past the end, a limit past it is no limit.
            let (start, overflow) = low.addingReportingOverflow(max(from, 0))
            var end = high
            if let limit { end = min(end, start.clampedAdding(max(limit, 0)).clampedAdding(-1)) }
            guard !overflow, start <= end else {
                items = []
                break
            }
            let count = LiquidValue.range(start, end).rangeCount
            try charge(count ?? Int.max, at: loop.position)
            items = (start...end).map(LiquidValue.int)
        case .object(let object):
            items = object.members.map { .array([.string($0.key), $0.value]) }
            items = Self.slice(items, from: from, limit: limit)
        case .string(let text): items = text.isEmpty ? [] : Self.slice([collection], from: from, limit: limit)
        case .array(let array): items = Self.slice(array, from: from, limit: limit)
        default: items = []
        }
        offsets[loop.name] = from.clampedAdding(items.count)
        if loop.reversed { items.reverse() }
        return items
    }

    private static func slice(_ items: [LiquidValue], from: Int, limit: Int?) -> [LiquidValue] {
        let start = min(max(from, 0), items.count)
        let end = limit.map { min(items.count, max(start, start.clampedAdding($0))) } ?? items.count
        return Array(items[start..<end])
    }

    private func renderLoop(_ loop: LiquidNode.Loop, into output: inout String) throws(LiquidError) -> Interrupt {
        let items = try segment(loop)
        if items.isEmpty {
            if let empty = loop.empty { return try render(empty, into: &output) }
            return .none
        }
        let parent = scopes.last?["forloop"]
        scopes.append(LiquidObject())
        defer { scopes.removeLast() }
        for (index, item) in items.enumerated() {
            try charge(1, at: loop.position)
            var forloop = LiquidObject([
                ("name", .string(loop.name)), ("length", .int(items.count)), ("index", .int(index + 1)),
                ("index0", .int(index)), ("rindex", .int(items.count - index)), ("rindex0", .int(items.count - index - 1)),
                ("first", .bool(index == 0)), ("last", .bool(index == items.count - 1)),
            ])
            forloop["parentloop"] = parent ?? .nil
            scopes[scopes.count - 1] = LiquidObject([(loop.variable, item), ("forloop", .object(forloop))])
            if try render(loop.body, into: &output) == .break { break }
        }
        return .none
    }

    private func renderTablerow(_ loop: LiquidNode.Loop, into output: inout String) throws(LiquidError) {
        let items = try segment(loop)
        let columns = try loop.columns.map { (columns) throws(LiquidError) in
            try rangeBound(evaluate(columns, strict: options.strictVariables, at: loop.position), at: loop.position)
        } ?? items.count
        let width = max(columns, 1)
        scopes.append(LiquidObject())
        defer { scopes.removeLast() }
        try write("<tr class=\"row1\">\n", into: &output, at: loop.position)
        for (index, item) in items.enumerated() {
            try charge(1, at: loop.position)
            let column = index % width
            let row = index / width
            let tablerowloop = LiquidObject([
                ("length", .int(items.count)), ("index", .int(index + 1)), ("index0", .int(index)),
                ("rindex", .int(items.count - index)), ("rindex0", .int(items.count - index - 1)),
                ("first", .bool(index == 0)), ("last", .bool(index == items.count - 1)),
                ("col", .int(column + 1)), ("col0", .int(column)), ("col_first", .bool(column == 0)),
                ("col_last", .bool(column == width - 1 || index == items.count - 1)), ("row", .int(row + 1)),
            ])
            scopes[scopes.count - 1] = LiquidObject([(loop.variable, item), ("tablerowloop", .object(tablerowloop))])
            try write("<td class=\"col\(column + 1)\">", into: &output, at: loop.position)
            let interrupt = try render(loop.body, into: &output)
            try write("</td>", into: &output, at: loop.position)
            if interrupt == .break { break }
            if column == width - 1, index != items.count - 1 {
                try write("</tr>\n<tr class=\"row\(row + 2)\">", into: &output, at: loop.position)
            }
        }
        try write("</tr>\n", into: &output, at: loop.position)
    }

    // MARK: Expressions

    func evaluate(_ filtered: LiquidFiltered, at position: SourcePosition) throws(LiquidError) -> LiquidValue {
        let strict = options.strictVariables && !filtered.hasDefault
        var value = try evaluate(filtered.expression, strict: strict, at: position)
        for filter in filtered.filters {
            try charge(1, at: position)
            var arguments: [LiquidValue] = []
            for argument in filter.arguments { arguments.append(try evaluate(argument, strict: strict, at: position)) }
            var keywords = LiquidObject()
            for (name, argument) in filter.keywords { keywords[name] = try evaluate(argument, strict: strict, at: position) }
            // The parser binds every filter it lets through (an unknown one is a syntax error).
            guard let function = filter.function else { throw LiquidError(.render, "Unknown filter '\(filter.name)'", at: position) }
            do {
                value = try function(value, LiquidFilters.Arguments(positional: arguments, keywords: keywords, name: filter.name), self)
            } catch {
                var located = error
                if located.line == 0 {
                    located.line = position.line
                    located.column = position.column
                }
                throw located
            }
            if case .string(let text) = value { try checkSize(text, at: position) }
        }
        return value
    }

    func evaluate(_ expression: LiquidExpression, strict: Bool, at position: SourcePosition) throws(LiquidError) -> LiquidValue {
        switch expression {
        case .literal(let value): return value
        case .empty, .blank: return .string("")
        case .range(let low, let high):
            return .range(
                try rangeBound(evaluate(low, strict: strict, at: position), at: position),
                try rangeBound(evaluate(high, strict: strict, at: position), at: position))
        case .variable(let parts): return try lookup(parts, expression, strict: strict, at: position)
        }
    }

    private func lookup(_ parts: [LiquidExpression.PathPart], _ expression: LiquidExpression, strict: Bool, at position: SourcePosition) throws(LiquidError) -> LiquidValue {
        let rootName: String
        switch parts[0] {
        case .name(let name): rootName = name
        case .index(let key): rootName = try evaluate(key, strict: strict, at: position).text
        }
        var value: LiquidValue
        if let found = variable(rootName) {
            value = found
        } else if strict {
            throw LiquidError(.undefined, "no value for \(expression.name) and no default", at: position)
        } else {
            return .nil
        }
        for part in parts.dropFirst() {
            let key: LiquidValue
            switch part {
            case .name(let name): key = .string(LiquidParser.bareName(name))
            case .index(let index): key = try evaluate(index, strict: strict, at: position)
            }
            if strict, !value.has(key) {
                throw LiquidError(.undefined, "no value for \(expression.name) and no default", at: position)
            }
            value = value[key]
        }
        if strict, value == .nil { throw LiquidError(.undefined, "no value for \(expression.name) and no default", at: position) }
        return value
    }

    private func variable(_ name: String) -> LiquidValue? {
        for scope in scopes.reversed() {
            if let value = scope[name] { return value }
        }
        return assigns[name] ?? environment[name]
    }

    /// Ruby's `to_i`: a string's leading digits (`"foo"` is 0), a float truncated, nil 0.
    private func rangeBound(_ value: LiquidValue, at position: SourcePosition) throws(LiquidError) -> Int {
        switch value {
        case .nil: return 0
        case .string(let text): return LiquidNumbers.leadingInteger(text)
        case .double(let number) where number.isFinite && abs(number) < 9e18: return Int(number)
        default: return try integer(value, "range", at: position)
        }
    }

    func integer(_ value: LiquidValue, _ what: String, at position: SourcePosition) throws(LiquidError) -> Int {
        guard let number = LiquidNumbers.integer(value) else {
            throw LiquidError(.render, "invalid integer for \(what): \(value.inspect)", at: position)
        }
        return number
    }

    // MARK: Conditions

    private func test(_ condition: LiquidCondition, at position: SourcePosition) throws(LiquidError) -> Bool {
        switch condition {
        case .value(let expression): return try evaluate(expression, strict: false, at: position).isTruthy
        case .and(let left, let right):
            guard try test(left, at: position) else { return false }
            return try test(right, at: position)
        case .or(let left, let right):
            if try test(left, at: position) { return true }
            return try test(right, at: position)
        case .compare(let left, let op, let right):
            let leftValue = try evaluate(left, strict: false, at: position)
            let rightValue = try evaluate(right, strict: false, at: position)
            // `empty` and `blank` have no order, and are not equal to each other.
            if LiquidCompare.isSpecial(left) || LiquidCompare.isSpecial(right) {
                switch op {
                case .equal, .notEqual:
                    if LiquidCompare.isSpecial(left), LiquidCompare.isSpecial(right) { return op == .notEqual }
                default: return false
                }
            }
            switch op {
            case .equal: return LiquidCompare.equal(leftValue, subject: left, right, rightValue)
            case .notEqual: return !LiquidCompare.equal(leftValue, subject: left, right, rightValue)
            case .contains: return LiquidCompare.contains(leftValue, rightValue)
            case .less, .greater, .lessOrEqual, .greaterOrEqual:
                guard let order = try LiquidCompare.order(leftValue, rightValue, at: position) else { return false }
                switch op {
                case .less: return order == .orderedAscending
                case .greater: return order == .orderedDescending
                case .lessOrEqual: return order != .orderedDescending
                default: return order != .orderedAscending
                }
            }
        }
    }
}
