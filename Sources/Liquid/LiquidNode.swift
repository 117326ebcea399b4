/// A parsed template's tree: text, outputs and tags, each with where it starts in the source.
indirect enum LiquidNode: Sendable {
    struct Branch: Sendable {
        /// nil for `else`.
        var condition: LiquidCondition?
        var body: [LiquidNode]
    }

    /// A `case` block: a `when` value, or nil for an `else` (rendered when no `when` before it matched).
    struct When: Sendable {
        var value: LiquidExpression?
        var body: [LiquidNode]
    }

    struct Loop: Sendable {
        var variable: String
        var collection: LiquidExpression
        var limit: LiquidExpression?
        var offset: LiquidExpression?
        /// `offset: continue`: starts where the last loop of the same variable and collection stopped.
        var offsetContinues: Bool
        var reversed: Bool
        var body: [LiquidNode]
        var empty: [LiquidNode]?
        /// `tablerow`'s column count (nil in a `for`).
        var columns: LiquidExpression?
        var position: SourcePosition

        /// The key `offset: continue` remembers the position under: variable and collection as written.
        var name: String { "\(variable)-\(collection.name)" }
    }

    case text(String)
    case output(LiquidFiltered, SourcePosition)
    /// Braze's `{{content_blocks.${name}}}`: another template, rendered here with the same variables.
    case contentBlock(String, SourcePosition)
    case assign(String, LiquidFiltered, SourcePosition)
    case capture(String, [LiquidNode])
    /// `if` / `unless` with their `elsif` and `else` branches; `unless` negates the first condition.
    case conditional([Branch], negated: Bool, SourcePosition)
    case `case`(LiquidExpression, [When], SourcePosition)
    /// Writes its body only when it differs from what the last `ifchanged` wrote.
    case ifchanged([LiquidNode])
    case loop(Loop)
    case tablerow(Loop)
    case `break`
    case `continue`
    case increment(String)
    case decrement(String)
    case cycle(group: LiquidExpression?, values: [LiquidExpression], SourcePosition)
    /// Braze's `{% abort_message("reason") %}`.
    case abort(LiquidExpression?, SourcePosition)
}
