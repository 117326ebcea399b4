import Foundation

extension SegmentExpression {
    /// Whether a profile matches at `now`. `read` gives a path's value (nil: absent). An absent value matches only
    /// `= null`, `!= …` never (use `not … = …` for "is not, or has none"); values of different types never compare.
    package func matches(at now: Date, read: (SegmentPath) -> SegmentValue?) -> Bool {
        switch self {
        case .and(let left, let right): left.matches(at: now, read: read) && right.matches(at: now, read: read)
        case .or(let left, let right): left.matches(at: now, read: read) || right.matches(at: now, read: read)
        case .not(let inner): !inner.matches(at: now, read: read)
        case .exists(let path): read(path) != nil
        case .compare(let path, let op, let operand): Self.compare(read(path), op, Self.resolve(operand, read), now: now)
        case .isIn(let path, let written):
            switch (read(path), written.map { Self.resolve($0, read) }) {
            case (.strings(let items)?, let operands): items.contains { item in operands.contains(.string(item)) }
            case (let value?, let operands): operands.contains { Self.compare(value, .equal, $0, now: now) }
            case (nil, let operands): operands.contains(.null)
            }
        case .contains(let path, let operand):
            switch (read(path), Self.resolve(operand, read)) {
            case (.strings(let items)?, .string(let text)): items.contains(text)
            case (.string(let value)?, .string(let text)): value.contains(text)
            default: false
            }
        case .within(let circle):
            switch (read(SegmentPath("location", ["latitude"])), read(SegmentPath("location", ["longitude"]))) {
            case (.number(let latitude)?, .number(let longitude)?): circle.contains(latitude: latitude, longitude: longitude)
            default: false
            }
        }
    }

    /// A reference (`entry.cart_id`) as the value it reads now: absent reads as null, a time as its wire text (which
    /// compares with times), a list as null (a list is never one value).
    static func resolve(_ operand: SegmentOperand, _ read: (SegmentPath) -> SegmentValue?) -> SegmentOperand {
        guard case .reference(let path) = operand else { return operand }
        switch read(path) {
        case .string(let text)?: return .string(text)
        case .number(let number)?: return .number(number)
        case .bool(let flag)?: return .bool(flag)
        case .time(let time)?: return .string("\(wire: time)")
        case .strings?, nil: return .null
        }
    }

    static func compare(_ value: SegmentValue?, _ op: SegmentOperator, _ operand: SegmentOperand, now: Date) -> Bool {
        guard let value else { return op == .equal && operand == .null }
        if operand == .null { return op == .notEqual }
        func ordered<T: Comparable>(_ left: T, _ right: T) -> Bool {
            switch op {
            case .equal: left == right
            case .notEqual: left != right
            case .less: left < right
            case .lessOrEqual: left <= right
            case .greater: left > right
            case .greaterOrEqual: left >= right
            }
        }
        switch (value, operand) {
        case (.string(let left), .string(let right)): return ordered(left, right)
        case (.number(let left), .number(let right)): return ordered(left, right)
        case (.bool(let left), .bool(let right)): return op == .equal ? left == right : op == .notEqual ? left != right : false
        case (.time(let left), .relativeTime(let offset)): return ordered(left, now.addingTimeInterval(offset))
        case (.time(let left), .string(let text)):
            guard let right = WireTime.parse(text) else { return false }
            return ordered(left, right)
        default: return false
        }
    }

    /// The first moment after `now` at which the answer can change with no write to the profile: when a time compared
    /// with `now ± d` crosses it. nil when no condition depends on the clock. The orchestrator keeps it as a durable
    /// timer and re-evaluates then.
    package func nextChange(after now: Date, read: (SegmentPath) -> SegmentValue?) -> Date? {
        switch self {
        case .and(let left, let right), .or(let left, let right):
            let times = [left.nextChange(after: now, read: read), right.nextChange(after: now, read: read)].compactMap { $0 }
            return times.min()
        case .not(let inner): return inner.nextChange(after: now, read: read)
        case .exists, .contains, .within: return nil
        case .isIn(let path, let operands):
            return operands.compactMap { Self.compare(path, .equal, $0).nextChange(after: now, read: read) }.min()
        case .compare(let path, let op, let operand):
            guard case .relativeTime(let offset) = operand, case .time(let time)? = read(path) else { return nil }
            // `time op now + offset` changes when now reaches the boundary `time - offset`: `<` and `>=` are still
            // unchanged there and change a millisecond (the stored precision) later; `>` and `<=` change at it.
            let boundary = time.addingTimeInterval(-offset)
            let after = boundary.addingTimeInterval(0.001)
            let candidates: [Date] =
                switch op {
                case .greater, .lessOrEqual: [boundary]
                case .less, .greaterOrEqual: [after]
                case .equal, .notEqual: [boundary, after]
                }
            return candidates.filter { $0 > now }.min()
        }
    }
}
