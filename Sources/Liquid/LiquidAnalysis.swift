/// What a parsed template reads, defines and includes, for checks when a configuration is loaded.
extension LiquidTemplate {
    /// Every variable the template reads, as its root and, when written with a fixed name, the member after it
    /// (`c.first_name` → `["c", "first_name"]`, `items[0]` → `["items"]`).
    public var variablePaths: Set<[String]> {
        var paths: Set<[String]> = []
        walk { expression in
            guard case .variable(let parts) = expression, case .name(let root) = parts[0] else { return }
            if parts.count > 1, case .name(let member) = parts[1] {
                paths.insert([root, LiquidParser.bareName(member)])
            } else {
                paths.insert([root])
            }
        }
        return paths
    }

    /// Names the template sets itself: `assign`, `capture`, loop variables, `forloop`, `tablerowloop`, counters.
    public var definedNames: Set<String> {
        var names: Set<String> = []
        visit { node in
            switch node {
            case .assign(let name, _, _), .capture(let name, _), .increment(let name), .decrement(let name): names.insert(name)
            case .loop(let loop): names.formUnion([loop.variable, "forloop"])
            case .tablerow(let loop): names.formUnion([loop.variable, "tablerowloop"])
            default: break
            }
        }
        return names
    }

    /// The content blocks this template includes (`{{content_blocks.${name}}}`).
    public var contentBlocks: Set<String> {
        var names: Set<String> = []
        visit { node in if case .contentBlock(let name, _) = node { names.insert(name) } }
        return names
    }

    /// Whether any output uses Herald's first default syntax (`| "there"`), which `default:` replaces.
    public var usesShorthandDefault: Bool {
        var found = false
        visit { node in
            switch node {
            case .output(let filtered, _), .assign(_, let filtered, _): found = found || filtered.filters.contains(where: \.shorthand)
            default: break
            }
        }
        return found
    }

    /// Calls `body` on every node, nested bodies included.
    func visit(_ body: (LiquidNode) -> Void) {
        func walk(_ nodes: [LiquidNode]) {
            for node in nodes {
                body(node)
                switch node {
                case .capture(_, let inner), .ifchanged(let inner): walk(inner)
                case .conditional(let branches, _, _): branches.forEach { walk($0.body) }
                case .case(_, let whens, _): whens.forEach { walk($0.body) }
                case .loop(let loop), .tablerow(let loop):
                    walk(loop.body)
                    walk(loop.empty ?? [])
                default: break
                }
            }
        }
        walk(nodes)
    }

    /// Calls `body` on every expression, those inside indexes and ranges included.
    func walk(_ body: (LiquidExpression) -> Void) {
        func expression(_ value: LiquidExpression) { Self.each(value, body) }
        visit { node in
            switch node {
            case .output(let value, _), .assign(_, let value, _):
                expression(value.expression)
                for filter in value.filters {
                    filter.arguments.forEach(expression)
                    filter.keywords.forEach { expression($0.1) }
                }
            case .conditional(let branches, _, _): branches.compactMap(\.condition).forEach { walkCondition($0, body) }
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

    private func walkCondition(_ condition: LiquidCondition, _ body: (LiquidExpression) -> Void) {
        switch condition {
        case .value(let value): Self.each(value, body)
        case .compare(let left, _, let right):
            Self.each(left, body)
            Self.each(right, body)
        case .and(let left, let right), .or(let left, let right):
            walkCondition(left, body)
            walkCondition(right, body)
        }
    }
}
