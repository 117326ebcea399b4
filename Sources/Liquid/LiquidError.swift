/// Why a template did not parse or render, with where in its source (1-based line and column; 0 when unknown).
public struct LiquidError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The source is not Liquid this engine reads.
        case syntax
        /// Rendering failed: a type error, a division by zero, an unknown filter at render.
        case render
        /// A variable without a value, rendered where strict variables forbid it.
        case undefined
        /// `abort_message`: the template itself decided the message is not sent.
        case aborted(reason: String)
        /// The output or the work grew past the bound set for one render.
        case limit
    }

    public var kind: Kind
    public var message: String
    public var line: Int
    public var column: Int

    public init(_ kind: Kind, _ message: String, at position: SourcePosition = .unknown) {
        self.kind = kind
        self.message = message
        line = position.line
        column = position.column
    }

    /// `line 3, column 7: Unknown tag 'foo'`, or the message alone when the position is unknown.
    public var description: String {
        line > 0 ? "line \(line), column \(column): \(message)" : message
    }
}

/// Where a token starts in a template's source.
public struct SourcePosition: Sendable, Equatable {
    public var line: Int
    public var column: Int
    public static let unknown = SourcePosition(line: 0, column: 0)

    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }
}
