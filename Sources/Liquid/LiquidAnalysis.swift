/// What a parsed template reads, defines and includes. `variablePaths` and `contentBlocks` are computed once when the
/// template is parsed (every send reads them); the rest serve the checks when a configuration is loaded.
extension LiquidTemplate {
    /// Every variable in `nodes`, as its root and, when written with a fixed name, the member after it
    /// (`c.first_name` → `["c", "first_name"]`, `items[0]` → `["items"]`).
    static func variablePaths(in nodes: [LiquidNode]) -> Set<[String]> {
        var paths: Set<[String]> = []
        walk(nodes) { expression in
            guard case .variable(let parts) = expression, case .name(let root) = parts[0] else { return }
            if parts.count > 1, case .name(let member) = parts[1] {
                paths.insert([root, LiquidParser.bareName(member)])
            } else {
                paths.insert([root])
            }
        }
        return paths
    }

    /// The content blocks `nodes` include (`{{content_blocks.${name}}}`).
    static func contentBlocks(in nodes: [LiquidNode]) -> Set<String> {
        var names: Set<String> = []
        visit(nodes) { node in if case .contentBlock(let name, _) = node { names.insert(name) } }
        return names
    }

    /// Names the template sets itself: `assign`, `capture`, loop variables, `forloop`, `tablerowloop`, counters.
    public var definedNames: Set<String> {
        var names: Set<String> = []
        Self.visit(nodes) { node in
            switch node {
            case .assign(let name, _, _), .capture(let name, _), .increment(let name), .decrement(let name): names.insert(name)
            case .loop(let loop): names.formUnion([loop.variable, "forloop"])
            case .tablerow(let loop): names.formUnion([loop.variable, "tablerowloop"])
            default: break
            }
        }
        return names
    }

    /// Whether any output uses Herald's first default syntax (`| "there"`), which `default:` replaces.
    public var usesShorthandDefault: Bool { appliesFilter(where: \.shorthand) }

    /// Whether a render may read the clock (`LiquidRenderOptions.now`): the `date` filter reads `"now"` and `"today"`,
    /// written in the template or held by a variable, so any use of it may.
    public var readsClock: Bool { appliesFilter { $0.name == "date" } }

    /// Whether an output or an `assign` applies a filter that `test` accepts.
    private func appliesFilter(where test: (LiquidFilterCall) -> Bool) -> Bool {
        var found = false
        Self.visit(nodes) { node in
            switch node {
            case .output(let filtered, _), .assign(_, let filtered, _): found = found || filtered.filters.contains(where: test)
            default: break
            }
        }
        return found
    }

    /// Calls `body` on every node, nested bodies included.
    private static func visit(_ nodes: [LiquidNode], _ body: (LiquidNode) -> Void) {
        for node in nodes {
            body(node)
            switch node {
            case .capture(_, let inner), .ifchanged(let inner): visit(inner, body)
            case .conditional(let branches, _, _): branches.forEach { visit($0.body, body) }
            case .case(_, let whens, _): whens.forEach { visit($0.body, body) }
            case .loop(let loop), .tablerow(let loop):
                visit(loop.body, body)
                visit(loop.empty ?? [], body)
            default: break
            }
        }
    }

    /// Calls `body` on every expression, those inside indexes, ranges and conditions included.
    private static func walk(_ nodes: [LiquidNode], _ body: (LiquidExpression) -> Void) {
        func expression(_ value: LiquidExpression) { each(value, body) }
        visit(nodes) { node in
            switch node {
            case .output(let value, _), .assign(_, let value, _):
                expression(value.expression)
                for filter in value.filters {
                    filter.arguments.forEach(expression)
                    filter.keywords.forEach { expression($0.1) }
                }
            case .conditional(let branches, _, _): branches.compactMap(\.condition).forEach { each($0, body) }
            case .case(let subject, let whens, _):
                expression(subject)
                whens.compactMap(\.value).forEach(expression)
            case .loop(let loop), .tablerow(let loop):
                expression(loop.collection)
                [loop.limit, loop.offset, loop.columns].compactMap { $0 }.forEach(expression)
            case .cycle(let group, let values, _):
                group.map(expression)
                values.forEach(expression)
            case .abort(let reason, _): reason.map(expression)
            default: break
            }
        }
    }

    private static func each(_ expression: LiquidExpression, _ body: (LiquidExpression) -> Void) {
        body(expression)
        switch expression {
        case .variable(let parts):
            for case .index(let inner) in parts { each(inner, body) }
        case .range(let low, let high):
            each(low, body)
            each(high, body)
        default: break
        }
    }

    private static func each(_ condition: LiquidCondition, _ body: (LiquidExpression) -> Void) {
        switch condition {
        case .value(let value): each(value, body)
        case .compare(let left, _, let right):
            each(left, body)
            each(right, body)
        case .and(let left, let right), .or(let left, let right):
            each(left, body)
            each(right, body)
        }
    }
}
