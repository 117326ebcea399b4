import Foundation

/// The array filters: `join`, `first`, `last`, `concat`, `map`, `reverse`, `sort`, `sort_natural`, `uniq`,
/// `compact`, `where`, `reject`, `find`, `find_index`, `has`, `sum`, `size`. Nested arrays are flattened first, as
/// Ruby Liquid's `InputIterator` does, and every item walked counts as work.
enum LiquidArrayFilters {
    typealias Filter = LiquidFilters.Filter

    static let table: [String: Filter] = [
        "join": { input, arguments, renderer throws(LiquidError) in
            let items = try walk(input, renderer)
            return .string(items.map(\.text).joined(separator: arguments[0]?.text ?? " "))
        },
        "first": { input, _, _ in
            switch input {
            case .array(let items): items.first ?? .nil
            case .range, .object: input["first"]
            default: .nil
            }
        },
        "last": { input, _, _ in
            switch input {
            case .array(let items): items.last ?? .nil
            case .range: input["last"]
            default: .nil
            }
        },
        "size": { input, _, _ in
            switch input {
            case .string(let text): .int(text.count)
            case .array(let items): .int(items.count)
            case .object(let object): .int(object.count)
            case .range(let low, let high): input.rangeCount.map(LiquidValue.int) ?? .double(Double(high) - Double(low) + 1)
            default: .int(0)
            }
        },
        "concat": { input, arguments, renderer throws(LiquidError) in
            guard case .array(let more) = try arguments.required(0) else {
                throw LiquidError(.render, "concat filter requires an array argument")
            }
            return .array(try walk(input, renderer) + more)
        },
        "reverse": { input, _, renderer throws(LiquidError) in .array(try walk(input, renderer).reversed()) },
        "map": { input, arguments, renderer throws(LiquidError) in
            let property = try arguments.required(0)
            var out: [LiquidValue] = []
            for item in try walk(input, renderer) { out.append(property.text == "to_liquid" ? item : try index(item, property)) }
            return .array(out)
        },
        "compact": { input, arguments, renderer throws(LiquidError) in
            let items = try walk(input, renderer)
            guard let property = arguments.given(0) else { return .array(items.filter { $0 != .nil }) }
            return .array(items.filter { member($0, property) != .nil })
        },
        "uniq": { input, arguments, renderer throws(LiquidError) in
            var seen: [LiquidValue] = []
            var out: [LiquidValue] = []
            for item in try walk(input, renderer) {
                let key = arguments.given(0).map { member(item, $0) } ?? item
                if !seen.contains(key) {
                    seen.append(key)
                    out.append(item)
                }
            }
            return .array(out)
        },
        "where": { input, arguments, renderer throws(LiquidError) in
            .array(try selected(input, arguments, renderer).filter(\.matched).map(\.item))
        },
        "reject": { input, arguments, renderer throws(LiquidError) in
            .array(try selected(input, arguments, renderer).filter { !$0.matched }.map(\.item))
        },
        "find": { input, arguments, renderer throws(LiquidError) in
            try selected(input, arguments, renderer).first(where: \.matched)?.item ?? .nil
        },
        "find_index": { input, arguments, renderer throws(LiquidError) in
            try selected(input, arguments, renderer).firstIndex(where: \.matched).map(LiquidValue.int) ?? .nil
        },
        "has": { input, arguments, renderer throws(LiquidError) in
            .bool(try selected(input, arguments, renderer).contains(where: \.matched))
        },
        "sum": { input, arguments, renderer throws(LiquidError) in
            var total = LiquidValue.int(0)
            for item in try walk(input, renderer) {
                var value = item
                if let property = arguments.given(0) { value = try index(item, property) }
                switch value {
                case .int, .double, .string: total = try LiquidNumbers.apply(.plus, total, value)
                default: continue
                }
            }
            return total
        },
        "sort": { input, arguments, renderer throws(LiquidError) in
            .array(try sorted(try walk(input, renderer), arguments.given(0)) { a, b throws(LiquidError) in
                guard let order = try LiquidCompare.order(a, b, at: .unknown) else {
                    if a == b { return .orderedSame }
                    throw LiquidError(.render, "cannot sort values of incompatible types")
                }
                return order
            })
        },
        "sort_natural": { input, arguments, renderer throws(LiquidError) in
            .array(try sorted(try walk(input, renderer), arguments.given(0)) { a, b in
                let x = a.text.lowercased(), y = b.text.lowercased()
                return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
            })
        },
    ]

    /// The flattened items, charged as work (a range's before it is built: one past `Int` is past every bound).
    static func walk(_ input: LiquidValue, _ renderer: LiquidRenderer) throws(LiquidError) -> [LiquidValue] {
        if case .range = input { try renderer.charge(input.rangeCount ?? Int.max) }
        let items = input.flattened
        try renderer.charge(items.count)
        return items
    }

    /// `item[property]` for a hash; nothing for anything else.
    static func member(_ item: LiquidValue, _ property: LiquidValue) -> LiquidValue {
        if case .object = item { return item[.string(property.text)] }
        return .nil
    }

    /// Ruby's `item[property]` as `map`, `where`, `find` and `has` read it: a hash's member, a string's substring
    /// when it holds it (`"zoo"["oo"]`), an integer's bit (`1[2]` is 0, which Ruby holds true), an array's item.
    /// Anything else Ruby refuses.
    static func index(_ item: LiquidValue, _ property: LiquidValue) throws(LiquidError) -> LiquidValue {
        switch (item, property) {
        case (.object, _): return item[.string(property.text)]
        case (.string(let text), .string(let part)): return text.contains(part) || part.isEmpty ? property : .nil
        case (.int(let value), .int(let bit)): return .int(bit >= 0 && bit < 64 ? (value >> bit) & 1 : (value < 0 ? 1 : 0))
        case (.array, .int): return item[property]
        default: throw LiquidError(.render, "cannot select the property '\(property.text)'")
        }
    }

    /// The items of `where`, `reject`, `find`, `find_index` and `has`, each with whether its property is truthy (or
    /// equal to the value, when one is given).
    private static func selected(
        _ input: LiquidValue, _ arguments: LiquidFilters.Arguments, _ renderer: LiquidRenderer
    ) throws(LiquidError) -> [(item: LiquidValue, matched: Bool)] {
        let property = try arguments.required(0)
        var out: [(item: LiquidValue, matched: Bool)] = []
        for item in try walk(input, renderer) {
            let found = try index(item, property)
            // An explicit nil value, as a missing one, tests the property's truth (Ruby's `target_value.nil?`).
            out.append((item, arguments.given(1).map { LiquidCompare.same(found, $0) } ?? found.isTruthy))
        }
        return out
    }

    /// A stable sort with nils last (Ruby Liquid's `nil_safe_compare`), by a property when one is given.
    private static func sorted(
        _ items: [LiquidValue], _ property: LiquidValue?, _ compare: (LiquidValue, LiquidValue) throws(LiquidError) -> ComparisonResult
    ) throws(LiquidError) -> [LiquidValue] {
        let keyed = items.enumerated().map { entry in
            (offset: entry.offset, item: entry.element, key: property.map { member(entry.element, $0) } ?? entry.element)
        }
        var failure: LiquidError?
        let ordered = keyed.sorted { a, b in
            if failure != nil { return false }
            switch (a.key, b.key) {
            case (.nil, .nil): return a.offset < b.offset
            case (.nil, _): return false
            case (_, .nil): return true
            default:
                do {
                    let order = try compare(a.key, b.key)
                    return order == .orderedSame ? a.offset < b.offset : order == .orderedAscending
                } catch {
                    failure = error as? LiquidError ?? LiquidError(.render, "\(error)")
                    return false
                }
            }
        }
        if let failure { throw failure }
        return ordered.map(\.item)
    }
}
