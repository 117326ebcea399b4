import Foundation

/// A Liquid template, parsed once and rendered many times (Shopify's Liquid as the Ruby reference implementation
/// behaves, with Braze's attribute forms and `abort_message`; docs/templates.md says what differs).
public struct LiquidTemplate: Sendable {
    let nodes: [LiquidNode]
    /// The output's room reserved up front (the source's length): appends rarely have to grow it.
    let outputEstimate: Int
    /// Every variable the template reads, as its root and the fixed member after it (`c.first_name` →
    /// `["c", "first_name"]`): a message builds only those.
    public let variablePaths: Set<[String]>
    /// The content blocks the template includes (`{{content_blocks.${name}}}`).
    public let contentBlocks: Set<String>

    /// A text rendered as it is, never parsed (a field with a fixed form).
    public init(text: String) {
        nodes = text.isEmpty ? [] : [.text(text)]
        outputEstimate = text.utf8.count
        variablePaths = []
        contentBlocks = []
    }

    /// Parses `source`; a syntax error carries its line and column.
    public init(parsing source: String) throws(LiquidError) {
        var parser = LiquidParser(tokens: try LiquidLexer.tokens(source), filterArities: LiquidFilters.arities)
        nodes = try parser.parseDocument()
        outputEstimate = source.utf8.count + 64
        variablePaths = Self.variablePaths(in: nodes)
        contentBlocks = Self.contentBlocks(in: nodes)
    }

    /// The output with `variables` as its top-level names; throws rather than return a partial output.
    public func render(_ variables: LiquidObject, options: LiquidRenderOptions = LiquidRenderOptions()) throws(LiquidError) -> String {
        let renderer = LiquidRenderer(environment: variables, options: options)
        var output = ""
        output.reserveCapacity(outputEstimate)
        _ = try renderer.render(nodes, into: &output)
        return output
    }

    /// The text that every rendering holds for sure: the literal text outside any tag's body (what a size check at
    /// load time can count).
    public var fixedText: String {
        nodes.map { if case .text(let text) = $0 { text } else { "" } }.joined()
    }
}

/// How one render runs: strictness, time, bounds, escaping and the content blocks it may include.
public struct LiquidRenderOptions: Sendable {
    /// A variable without a value fails the render where it is written out, looped over or passed to a filter,
    /// unless its filters include `default`; a condition still reads it as nil.
    public var strictVariables = false
    /// The time zone `date` writes in and reads zoneless dates in (the recipient's).
    public var timeZone = TimeZone(identifier: "UTC")!
    /// What `"now"` and `"today"` mean to `date`.
    public var now = Date()
    /// The most output, in UTF-8 bytes, one render may produce (captured text and built strings included).
    public var maxOutputBytes = 1 << 20
    /// The most work one render may do: nodes, loop iterations and items that filters walk.
    public var maxSteps = 1_000_000
    /// Applied to every output unless its last filter is `raw`, `escape` or `escape_once` (an HTML body's escaping).
    public var escape: (@Sendable (String) -> String)?
    /// Templates `{{content_blocks.${name}}}` renders.
    public var contentBlocks: [String: LiquidTemplate] = [:]

    public init() {}
}
