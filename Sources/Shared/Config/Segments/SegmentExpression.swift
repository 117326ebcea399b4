import Foundation

/// A segment condition in Herald's text language (docs/segments.md), parsed:
/// `c.plan = "gold" and e.PURCHASED.last > now - 30d and not t.churned exists`.
package indirect enum SegmentExpression: Sendable, Equatable {
    case and(SegmentExpression, SegmentExpression)
    case or(SegmentExpression, SegmentExpression)
    case not(SegmentExpression)
    case compare(SegmentPath, SegmentOperator, SegmentOperand)
    case isIn(SegmentPath, [SegmentOperand])
    case contains(SegmentPath, SegmentOperand)
    case exists(SegmentPath)
    /// `location within 5km of "paris-store"` or `… of (48.8566, 2.3522)`: the profile's last known location is at most
    /// that far from the point (great-circle distance).
    case within(GeoCircle)

    /// Every path the condition reads: a profile change that touches none of them cannot change the answer.
    package var paths: Set<SegmentPath> {
        switch self {
        case .and(let left, let right), .or(let left, let right): left.paths.union(right.paths)
        case .not(let inner): inner.paths
        case .compare(let path, _, _), .isIn(let path, _), .contains(let path, _), .exists(let path): [path]
        case .within: GeoCircle.paths
        }
    }

    /// The condition with each named place's centre filled in from `places` (id → latitude, longitude); the ids that are
    /// not there are returned, and their circles match nobody.
    package func resolvingPlaces(_ places: [String: (latitude: Double, longitude: Double)]) -> (SegmentExpression, unknown: [String]) {
        switch self {
        case .and(let left, let right):
            let (l, a) = left.resolvingPlaces(places), (r, b) = right.resolvingPlaces(places)
            return (.and(l, r), a + b)
        case .or(let left, let right):
            let (l, a) = left.resolvingPlaces(places), (r, b) = right.resolvingPlaces(places)
            return (.or(l, r), a + b)
        case .not(let inner):
            let (resolved, unknown) = inner.resolvingPlaces(places)
            return (.not(resolved), unknown)
        case .within(var circle):
            guard let place = circle.place else { return (self, []) }
            guard let centre = places[place] else { return (self, [place]) }
            (circle.latitude, circle.longitude) = centre
            return (.within(circle), [])
        case .compare, .isIn, .contains, .exists:
            return (self, [])
        }
    }
}

/// A circle on the Earth: a centre (degrees; unknown, NaN, until a named place is resolved) and a radius in metres.
package struct GeoCircle: Sendable, Equatable {
    package var latitude: Double
    package var longitude: Double
    package var meters: Double
    /// The configuration's place it was written as (`of "paris-store"`), if any.
    package var place: String?

    package init(latitude: Double, longitude: Double, meters: Double, place: String? = nil) {
        (self.latitude, self.longitude, self.meters, self.place) = (latitude, longitude, meters, place)
    }

    /// The paths a circle reads: the last known location's coordinates.
    package static let paths: Set<SegmentPath> = [SegmentPath("location", ["latitude"]), SegmentPath("location", ["longitude"])]
    /// The mean radius of the Earth (IUGG), in metres.
    package static let earthRadius = 6_371_008.8
    /// The longest radius worth writing: half the Earth's circumference.
    package static let maxMeters = Double.pi * earthRadius

    /// Whether a point is in the circle: its great-circle (haversine) distance to the centre is at most the radius.
    package func contains(latitude: Double, longitude: Double) -> Bool {
        guard self.latitude.isFinite, self.longitude.isFinite else { return false }
        return Self.distance(self.latitude, self.longitude, latitude, longitude) <= meters
    }

    /// The great-circle distance in metres between two points in degrees (haversine, on a sphere of `earthRadius`).
    package static func distance(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let radians = Double.pi / 180
        let dLat = (lat2 - lat1) * radians
        let dLon = (lon2 - lon1) * radians
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * radians) * cos(lat2 * radians) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * earthRadius * asin(min(1, sqrt(max(0, a))))
    }
}

/// A value's address: a namespace (`b`, `c`, `t`, `e`, `email`, `sms`, `push`) and the names after it.
package struct SegmentPath: Sendable, Hashable, CustomStringConvertible {
    package var namespace: String
    package var names: [String]
    package var description: String { ([namespace] + names).joined(separator: ".") }

    package init(_ namespace: String, _ names: [String]) {
        self.namespace = namespace
        self.names = names
    }
}

package enum SegmentOperator: String, Sendable, Equatable, CaseIterable {
    case equal = "=", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
}

/// A literal, or a time relative to the moment of evaluation (`now - 30d`: offset -2,592,000 s).
package enum SegmentOperand: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case relativeTime(seconds: Double)
    /// Another path's value at evaluation (`entry.cart_id`), where the parser was given its namespace.
    case reference(SegmentPath)
}

/// A value read from a profile.
package enum SegmentValue: Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case time(Date)
    case strings([String])

    /// The value as a template shows it: whole numbers without a decimal point, times in ISO 8601, lists joined.
    package var text: String {
        switch self {
        case .string(let text): text
        case .number(let number): number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        case .bool(let flag): flag ? "true" : "false"
        case .time(let time): "\(wire: time)"
        case .strings(let items): items.joined(separator: ", ")
        }
    }
}

/// A parse error: where (1-based line and column, and the offset in characters) and what was expected.
package struct SegmentParseError: Error, Equatable, CustomStringConvertible {
    package var line: Int
    package var column: Int
    package var offset: Int
    package var message: String
    package var description: String { "\(line):\(column): \(message)" }
}

package enum SegmentParser {
    package static let namespaces = Set(ProfileNamespace.allCases.map(\.rawValue))
    static let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800]
    /// The longest duration a condition or a campaign names: 100 years (36500d). Beyond it a time computed from it
    /// leaves the range the wire's times and SQLite's columns hold.
    package static let maxDuration: Double = 36_500 * 86_400

    /// Parses a condition over `namespaces` (a campaign's event condition reads only `event.`). A path of a namespace in
    /// `references` may stand where a value does (a journey's wait: `event.cart_id = entry.cart_id`).
    package static func parse(
        _ text: String, namespaces: Set<String> = namespaces, references: Set<String> = []
    ) throws(SegmentParseError) -> SegmentExpression {
        var parser = Parser(tokens: try tokenize(text), text: text, namespaces: namespaces, references: references)
        let expression = try parser.orExpression()
        guard parser.peek.kind == .end else { throw parser.error("expected `and`, `or` or the end, found \(parser.peek.kind)") }
        return expression
    }

    // MARK: Tokens

    struct Token: Equatable {
        enum Kind: Equatable, CustomStringConvertible {
            case word(String), string(String), number(Double), duration(Double), distance(Double), symbol(String), end
            var description: String {
                switch self {
                case .word(let word): "`\(word)`"
                case .string(let text): "the string \"\(text)\""
                case .number(let number):
                    "the number \(number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number))"
                case .duration: "a duration"
                case .distance: "a distance"
                case .symbol(let symbol): "`\(symbol)`"
                case .end: "the end"
                }
            }
        }
        var kind: Kind
        var offset: Int
    }

    static func tokenize(_ text: String) throws(SegmentParseError) -> [Token] {
        let characters = Array(text)
        var tokens: [Token] = []
        var index = 0
        func fail(_ message: String, at offset: Int) -> SegmentParseError {
            position(text, offset: offset, message: message)
        }
        while index < characters.count {
            let character = characters[index]
            let start = index
            if character.isWhitespace {
                index += 1
            } else if character == "\"" {
                var value = ""
                index += 1
                while true {
                    guard index < characters.count else { throw fail("unterminated string", at: start) }
                    let next = characters[index]
                    if next == "\"" { break }
                    if next == "\\" {
                        index += 1
                        guard index < characters.count, ["\"", "\\"].contains(characters[index]) else {
                            throw fail("only \\\" and \\\\ are escapes in strings", at: index - 1)
                        }
                    }
                    value.append(characters[index])
                    index += 1
                }
                index += 1
                tokens.append(Token(kind: .string(value), offset: start))
            } else if character.isNumber {
                index += 1
                while index < characters.count, characters[index].isNumber || characters[index] == "." { index += 1 }
                let literal = String(characters[start..<index])
                guard let number = Double(literal) else { throw fail("`\(literal)` is not a number", at: start) }
                if index + 1 < characters.count, characters[index] == "k", characters[index + 1] == "m",
                    index + 2 >= characters.count || !(characters[index + 2].isLetter || characters[index + 2].isNumber)
                {
                    // A distance in kilometres (`location within 5km of …`); metres are written `500m`.
                    index += 2
                    tokens.append(Token(kind: .distance(number * 1000), offset: start))
                } else if index < characters.count, let unit = units[characters[index]],
                    index + 1 >= characters.count || !(characters[index + 1].isLetter || characters[index + 1].isNumber)
                {
                    guard number * unit <= maxDuration else { throw fail("a duration is at most 36500d (100 years)", at: start) }
                    index += 1
                    tokens.append(Token(kind: .duration(number * unit), offset: start))
                } else if index < characters.count, characters[index].isLetter {
                    throw fail("a duration's unit is s, m, h, d or w", at: index)
                } else {
                    tokens.append(Token(kind: .number(number), offset: start))
                }
            } else if character.isLetter || character == "_" || character == "$" {
                while index < characters.count,
                    characters[index].isLetter || characters[index].isNumber || ["_", "$", "."].contains(characters[index])
                {
                    index += 1
                }
                tokens.append(Token(kind: .word(String(characters[start..<index])), offset: start))
            } else {
                let two = index + 1 < characters.count ? String(characters[index...index + 1]) : ""
                if ["!=", "<=", ">="].contains(two) {
                    tokens.append(Token(kind: .symbol(two), offset: start))
                    index += 2
                } else if "=<>()[],+-".contains(character) {
                    tokens.append(Token(kind: .symbol(String(character)), offset: start))
                    index += 1
                } else {
                    throw fail("unexpected character `\(character)`", at: start)
                }
            }
        }
        tokens.append(Token(kind: .end, offset: characters.count))
        return tokens
    }

    static func position(_ text: String, offset: Int, message: String) -> SegmentParseError {
        var line = 1
        var column = 1
        for character in text.prefix(offset) {
            if character == "\n" {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return SegmentParseError(line: line, column: column, offset: offset, message: message)
    }

    // MARK: Grammar

    struct Parser {
        var tokens: [Token]
        let text: String
        let namespaces: Set<String>
        let references: Set<String>
        var index = 0

        var peek: Token { tokens[index] }

        mutating func next() -> Token {
            defer { if index < tokens.count - 1 { index += 1 } }
            return tokens[index]
        }

        func error(_ message: String) -> SegmentParseError {
            SegmentParser.position(text, offset: peek.offset, message: message)
        }

        mutating func keyword(_ word: String) -> Bool {
            guard case .word(let found) = peek.kind, found.lowercased() == word else { return false }
            index += 1
            return true
        }

        mutating func symbol(_ symbol: String) -> Bool {
            guard peek.kind == .symbol(symbol) else { return false }
            index += 1
            return true
        }

        mutating func orExpression() throws(SegmentParseError) -> SegmentExpression {
            var expression = try andExpression()
            while keyword("or") { expression = .or(expression, try andExpression()) }
            return expression
        }

        mutating func andExpression() throws(SegmentParseError) -> SegmentExpression {
            var expression = try unary()
            while keyword("and") { expression = .and(expression, try unary()) }
            return expression
        }

        mutating func unary() throws(SegmentParseError) -> SegmentExpression {
            if keyword("not") { return .not(try unary()) }
            if symbol("(") {
                let inner = try orExpression()
                guard symbol(")") else { throw error("expected `)`, found \(peek.kind)") }
                return inner
            }
            return try condition()
        }

        mutating func condition() throws(SegmentParseError) -> SegmentExpression {
            if namespaces.contains(ProfileNamespace.location.rawValue), case .word(let word) = peek.kind, word.lowercased() == "location" {
                index += 1
                return try within()
            }
            let path = try self.path()
            if keyword("exists") { return .exists(path) }
            if keyword("contains") { return .contains(path, try operand()) }
            if keyword("in") {
                guard symbol("[") else { throw error("expected `[` after `in`, found \(peek.kind)") }
                var values = [try operand()]
                while symbol(",") { values.append(try operand()) }
                guard symbol("]") else { throw error("expected `,` or `]`, found \(peek.kind)") }
                return .isIn(path, values)
            }
            guard case .symbol(let symbol) = peek.kind, let op = SegmentOperator(rawValue: symbol) else {
                throw error("expected a comparison (=, !=, <, <=, >, >=), `in`, `contains` or `exists` after \(path), found \(peek.kind)")
            }
            index += 1
            return .compare(path, op, try operand())
        }

        mutating func path() throws(SegmentParseError) -> SegmentPath {
            guard case .word(let word) = peek.kind else {
                throw error("expected a condition such as `c.plan = \"gold\"`, found \(peek.kind)")
            }
            let parts = word.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard parts.count >= 2, namespaces.contains(parts[0]), !parts.dropFirst().contains("") else {
                let list = namespaces == SegmentParser.namespaces
                    ? "b., c., t., e., email., sms., push. or location." : namespaces.sorted().map { "\($0)." }.joined(separator: ", ")
                throw error("`\(word)` is not a path: expected \(list) and a name")
            }
            index += 1
            return SegmentPath(parts[0], Array(parts.dropFirst()))
        }

        /// After `location`: `within <distance> of "<place>"` or `within <distance> of (<latitude>, <longitude>)`.
        mutating func within() throws(SegmentParseError) -> SegmentExpression {
            guard keyword("within") else {
                throw error("expected `within` after `location` (location within 5km of \"place\"), or a path such as location.at")
            }
            let meters: Double
            switch peek.kind {
            case .distance(let value): meters = value
            // `500m` reads as minutes elsewhere: here it is metres.
            case .duration(let seconds) where unit(of: peek) == "m": meters = seconds / 60
            default: throw error("expected a distance such as 500m or 5km after `within`, found \(peek.kind)")
            }
            guard meters > 0, meters <= GeoCircle.maxMeters else {
                throw error("a distance is more than 0 and at most 20015km (half the Earth's circumference)")
            }
            index += 1
            guard keyword("of") else { throw error("expected `of` and a place (\"paris-store\") or a point ((48.8566, 2.3522)), found \(peek.kind)") }
            if case .string(let place) = peek.kind {
                index += 1
                return .within(GeoCircle(latitude: .nan, longitude: .nan, meters: meters, place: place))
            }
            guard symbol("(") else { throw error("expected a place (\"paris-store\") or a point ((48.8566, 2.3522)), found \(peek.kind)") }
            let latitude = try coordinate("latitude", limit: 90)
            guard symbol(",") else { throw error("expected `,` and a longitude, found \(peek.kind)") }
            let longitude = try coordinate("longitude", limit: 180)
            guard symbol(")") else { throw error("expected `)`, found \(peek.kind)") }
            return .within(GeoCircle(latitude: latitude, longitude: longitude, meters: meters))
        }

        mutating func coordinate(_ name: String, limit: Double) throws(SegmentParseError) -> Double {
            let negative = symbol("-")
            guard case .number(let value) = peek.kind else { throw error("expected a \(name) (a number of degrees), found \(peek.kind)") }
            let degrees = negative ? -value : value
            guard abs(degrees) <= limit else { throw error("a \(name) is from -\(Int(limit)) to \(Int(limit)) degrees") }
            index += 1
            return degrees
        }

        /// The unit letter a number token was written with (`m` of `500m`), if any.
        func unit(of token: Token) -> Character? {
            let characters = Array(text)
            var index = token.offset
            while index < characters.count, characters[index].isNumber || characters[index] == "." { index += 1 }
            return index < characters.count ? characters[index] : nil
        }

        mutating func operand() throws(SegmentParseError) -> SegmentOperand {
            let token = next()
            switch token.kind {
            case .string(let text): return .string(text)
            case .number(let number): return .number(number)
            case .symbol("-"):
                guard case .number(let number) = peek.kind else {
                    throw error("expected a number after `-`, found \(peek.kind)")
                }
                index += 1
                return .number(-number)
            case .word(let word) where word.lowercased() == "true": return .bool(true)
            case .word(let word) where word.lowercased() == "false": return .bool(false)
            case .word(let word) where word.lowercased() == "null": return .null
            case .word(let word) where references.contains(String(word.prefix { $0 != "." })):
                let parts = word.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
                guard parts.count >= 2, !parts.dropFirst().contains("") else {
                    index -= 1
                    throw error("`\(word)` is not a path: expected \(parts[0]). and a name")
                }
                return .reference(SegmentPath(parts[0], Array(parts.dropFirst())))
            case .word(let word) where word.lowercased() == "now":
                var sign = 0.0
                if symbol("+") { sign = 1 } else if symbol("-") { sign = -1 }
                guard sign != 0 else { return .relativeTime(seconds: 0) }
                guard case .duration(let seconds) = peek.kind else {
                    throw error("expected a duration such as 30d, 12h or 15m after `now \(sign > 0 ? "+" : "-")`, found \(peek.kind)")
                }
                index += 1
                return .relativeTime(seconds: sign * seconds)
            default:
                index -= token.kind == .end ? 0 : 1
                throw error("expected a value (a string, a number, true, false, null or now ± a duration), found \(token.kind)")
            }
        }
    }
}
