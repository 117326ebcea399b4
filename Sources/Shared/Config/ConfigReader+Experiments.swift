import Foundation

/// A campaign's `experiment` and its messages' `variants` (docs/measurement.md): every field checked, with its file
/// and line.
extension ConfigReader {
    /// At most this many variants per experiment.
    static let maxVariants = 8
    /// The most a control group holds out, in percent.
    static let maxControlPercent = 90.0

    /// `{control: 10, variants: {a: 50, b: 50}}`: the control share in percent (0 to 90, up to two decimals, 0 by
    /// default), and 2 to 8 variants with whole weights (1 to 10,000, relative). One of the two at least.
    mutating func experiment(_ node: ConfigNode) -> Experiment? {
        guard case .object = node.value else {
            fail(node, "experiment: expected {control: <percent>, variants: {<id>: <weight>, ...}}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["control", "variants"], "experiment")
        var control = 0
        if let share = node["control"] {
            guard let basisPoints = basisPoints(share, "experiment.control", from: 0) else { return nil }
            control = basisPoints
        }
        var variants: [Experiment.Variant] = []
        if let variantsNode = node["variants"] {
            guard case .object(let members) = variantsNode.value, (2...Self.maxVariants).contains(members.count) else {
                fail(variantsNode, "experiment.variants: expected 2 to \(Self.maxVariants) variants as {<id>: <weight>, ...}")
                return nil
            }
            for (id, weightNode) in members {
                guard Self.isIdentifier(id), ![Experiment.control, Experiment.message].contains(id) else {
                    fail(
                        weightNode,
                        "experiment.variants.\(id): a variant id is 1 to 128 letters, digits, `_`, `-` or `.`, and not `control` or `message`")
                    continue
                }
                guard case .number(let weight) = weightNode.value, weight >= 1, weight <= 10_000, weight == weight.rounded() else {
                    fail(weightNode, "experiment.variants.\(id): expected a whole weight from 1 to 10000, found \(weightNode.scalarText ?? weightNode.typeName)")
                    continue
                }
                variants.append(Experiment.Variant(id: id, weight: Int(weight)))
            }
        }
        guard control > 0 || !variants.isEmpty else {
            fail(node, "experiment: a control share above 0 or variants, or both")
            return nil
        }
        return Experiment(controlBasisPoints: control, variants: variants)
    }

    /// At most this many conversions per campaign.
    static let maxConversions = 5

    /// `[{event: PURCHASE, where: "event.revenue_usd >= 10", window: 7d, sources: server}]`: 1 to 5 events (the trigger
    /// syntax for the condition), each with a window from 1 minute to 90 days (3 days by default), counted from the
    /// customer's servers' writes only (`server`, the default) or from apps and web pages too (`any`).
    mutating func conversions(_ node: ConfigNode) -> [Conversion] {
        guard case .array(let items) = node.value, (1...Self.maxConversions).contains(items.count) else {
            fail(node, "conversions: expected a list of 1 to \(Self.maxConversions) {event, where, window, sources}")
            return []
        }
        var conversions: [Conversion] = []
        for (index, item) in items.enumerated() {
            let path = "conversions[\(index)]"
            rejectUnknown(item, allowed: ["event", "where", "window", "sources"], path)
            guard let text = string(item, "event"), let name = eventName(item["event"], text, "\(path).event") else { continue }
            var condition: SegmentExpression?
            if let text = string(item, "where", required: false) {
                guard let parsed = self.condition(item["where"], text: text, namespaces: ["event"]) else { continue }
                condition = parsed
            }
            var window = Conversion.defaultWindow
            if let windowNode = item["window"] {
                guard let text = windowNode.scalarText, let parsed = Self.duration(text), parsed >= 60, parsed <= Conversion.maxWindow else {
                    fail(windowNode, "\(path).window: expected a period from 1m to 90d such as 7d, found \(windowNode.scalarText ?? windowNode.typeName)")
                    continue
                }
                window = parsed
            }
            var sources = Conversion.Sources.server
            if let sourcesNode = item["sources"] {
                guard let text = sourcesNode.scalarText, let parsed = Conversion.Sources(rawValue: text) else {
                    fail(sourcesNode, "\(path).sources: expected server (the customer's servers' writes only) or any (apps and web pages too)")
                    continue
                }
                sources = parsed
            }
            conversions.append(Conversion(event: name, condition: condition, window: window, sources: sources))
        }
        return conversions
    }

    /// `kind: holdout`: `percent` (0.01 to 90, up to two decimals), and the `exempt_campaigns` and `exempt_tags` it does
    /// not hold back.
    mutating func holdout(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> HoldoutGroup? {
        guard let share = node["percent"] else {
            fail(node, "missing `percent`")
            return nil
        }
        guard let basisPoints = basisPoints(share, "percent", from: 0.01) else { return nil }
        var group = HoldoutGroup(
            id: id, project: project, basisPoints: basisPoints, exemptCampaigns: identifiers(node, "exempt_campaigns", "campaign ids"),
            origin: origin)
        group.exemptTags = identifiers(node, "exempt_tags", "tags")
        return group
    }

    /// A list of identifiers at `key` (none when absent); each problem at its item.
    mutating func identifiers(_ node: ConfigNode, _ key: String, _ what: String) -> [String] {
        guard let list = node[key] else { return [] }
        guard case .array(let items) = list.value else {
            fail(list, "\(key): expected a list of \(what), found \(list.typeName)")
            return []
        }
        var identifiers: [String] = []
        for item in items {
            guard case .string(let identifier) = item.value, Self.isIdentifier(identifier) else {
                fail(item, "\(key): expected \(what) (letters, digits, _ and -)")
                continue
            }
            identifiers.append(identifier)
        }
        return identifiers
    }

    /// A percentage from `minimum` to 90 with up to two decimals, in basis points; nil (and the problem, at `path`)
    /// otherwise.
    mutating func basisPoints(_ node: ConfigNode, _ path: String, from minimum: Double) -> Int? {
        guard case .number(let percent) = node.value, percent >= minimum, percent <= Self.maxControlPercent,
            abs(percent * 100 - (percent * 100).rounded()) < 1e-6
        else {
            let range = minimum == 0 ? "0" : "\(minimum)"
            fail(node, "\(path): expected a percentage from \(range) to 90 with up to two decimals, found \(node.scalarText ?? node.typeName)")
            return nil
        }
        return Int((percent * 100).rounded())
    }

    /// A message's `variants`: `{<variant id>: <template id>}`, the template each of those variants sends instead.
    mutating func variantTemplates(_ node: ConfigNode, at path: String) -> [String: String] {
        guard case .object(let members) = node.value, !members.isEmpty else {
            fail(node, "\(path): expected {<variant id>: <template id>, ...}, found \(node.typeName)")
            return [:]
        }
        var templates: [String: String] = [:]
        for (variant, templateNode) in members {
            guard case .string(let template) = templateNode.value, Self.isIdentifier(template) else {
                fail(templateNode, "\(path).\(variant): expected a template id")
                continue
            }
            templates[variant] = template
        }
        return templates
    }
}
