import Foundation

/// `kind: journey` (docs/journeys.md): the entry, re-entry and exit rules, and each node, checked with its file and
/// line; then the graph (`JourneyDefinition.graphProblems`).
extension ConfigReader {
    static let journeyFields = [
        "project", "name", "enabled", "type", "entry", "audience", "reentry", "exit", "start", "nodes", "quiet_hours",
        "ignore_frequency_cap", "tags", "migrate",
    ]
    /// What a wait's or an exit's event condition reads: the event, and the event that entered (`entry.cart_id`).
    static let journeyEventNamespaces: Set<String> = ["event", "entry"]
    /// What a split's condition reads: the profile, and the entry event.
    static let journeySplitNamespaces = SegmentParser.namespaces.union(["entry"])
    static let weekdays = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]

    mutating func journey(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> JourneyDefinition? {
        let type = string(node, "type", required: false) ?? "marketing"
        if !["marketing", "transactional"].contains(type) {
            fail(node["type"], "type: expected marketing or transactional, found \"\(type)\"")
        }
        guard let entryNode = node["entry"] else {
            fail(node, "missing `entry` (event, segment_entry, segment_exit, api or schedule)")
            return nil
        }
        guard let entry = journeyEntry(entryNode) else { return nil }
        let audience = node["audience"] != nil ? identifier(node, "audience") : nil
        if entry.isScheduled, audience == nil {
            fail(node, "a journey entered on a schedule needs an `audience` segment: the profiles each run enters")
        }
        guard let start = identifier(node, "start") else { return nil }
        guard let nodesNode = node["nodes"] else {
            fail(node, "missing `nodes` (a mapping of node names to nodes)")
            return nil
        }
        guard case .object(let members) = nodesNode.value, !members.isEmpty else {
            fail(nodesNode, "nodes: expected a mapping of node names to nodes, found \(nodesNode.typeName)")
            return nil
        }
        var nodes: [JourneyDefinition.Node] = []
        for (name, item) in members {
            guard Self.isIdentifier(name) else {
                fail(item, "nodes: \"\(name)\" is not a node name (letters, digits, _, - and ., at most 128)")
                continue
            }
            if let step = journeyStep(item, "nodes.\(name)") {
                nodes.append(JourneyDefinition.Node(name: name, step: step, line: item.line))
            }
        }
        var journey = JourneyDefinition(
            id: id, project: project, name: string(node, "name", required: false) ?? id, entry: entry, audience: audience,
            start: start, nodes: Dictionary(nodes.map { ($0.name, $0) }) { first, _ in first }, source: node.json, origin: origin)
        journey.enabled = bool(node, "enabled", default: true)
        journey.marketing = type != "transactional"
        journey.reentry = reentry(node["reentry"])
        if let exitNode = node["exit"] { journey.exits = journeyExits(exitNode) }
        (journey.quietHours, journey.ignoreFrequencyCap) = marketingRules(node, marketing: journey.marketing, "journey")
        journey.tags = identifiers(node, "tags", "tags")
        if let migrateNode = node["migrate"] { journey.migration = journeyMigration(migrateNode, nodes: Set(nodes.map(\.name))) }
        // The graph only once every node read: a node with a mistake would show as a dangling `next` too.
        if nodes.count == members.count {
            for problem in JourneyDefinition.graphProblems(start: start, nodes: nodes) {
                fail(problem.line == 0 ? node["start"] : nil, problem.message, line: problem.line == 0 ? nil : problem.line)
            }
        }
        return journey
    }

    /// `{nodes: {old: new | exit}}`: each target a node of this version, or `exit`.
    mutating func journeyMigration(_ node: ConfigNode, nodes: Set<String>) -> [String: String]? {
        guard case .object = node.value else {
            fail(node, "migrate: expected {nodes: {old node: new node or exit}}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["nodes"], "migrate")
        guard let map = node["nodes"], case .object(let members) = map.value, !members.isEmpty else {
            fail(node["nodes"] ?? node, "migrate.nodes: expected a mapping of old node names to new node names or exit")
            return nil
        }
        var migration: [String: String] = [:]
        for (old, target) in members {
            guard Self.isIdentifier(old) else {
                fail(target, "migrate.nodes: \"\(old)\" is not a node name")
                continue
            }
            guard case .string(let name) = target.value, nodes.contains(name) || name == JourneyDefinition.exitTarget else {
                fail(target, "migrate.nodes.\(old): expected a node of this version or exit, found \(target.scalarText ?? target.typeName)")
                continue
            }
            migration[old] = name
        }
        return migration
    }

    /// The campaigns' triggers a journey starts on: an event (with `where`), a segment entry or exit, the API, a
    /// schedule. Not what an app reports (a session start, a notification opened): an event of the app does that.
    mutating func journeyEntry(_ node: ConfigNode) -> CampaignDefinition.Trigger? {
        guard let trigger = trigger(node) else { return nil }
        switch trigger {
        case .event, .segmentEntry, .segmentExit, .api, .schedule, .localSchedule: return trigger
        case .app:
            fail(node, "entry: expected event, segment_entry, segment_exit, api or schedule (a journey does not start on what an app reports)")
            return nil
        }
    }

    /// `never` (the default), `{after: 30d}` or `{max_concurrent: 3}`.
    mutating func reentry(_ node: ConfigNode?) -> JourneyDefinition.Reentry {
        guard let node else { return .never }
        let expected = "reentry: expected never, {after: 30d} or {max_concurrent: 1 to \(JourneyDefinition.maxConcurrentLimit)}"
        if case .string("never") = node.value { return .never }
        guard case .object(let members) = node.value, members.count == 1 else {
            fail(node, expected)
            return .never
        }
        switch members[0].key {
        case "after":
            return duration(node, "after").map(JourneyDefinition.Reentry.after) ?? .never
        case "max_concurrent":
            guard case .number(let count) = members[0].node.value, count == count.rounded(),
                (1...Double(JourneyDefinition.maxConcurrentLimit)).contains(count)
            else {
                fail(members[0].node, expected)
                return .never
            }
            return .maxConcurrent(Int(count))
        default:
            fail(members[0].node, expected)
            return .never
        }
    }

    /// `[{event: unsubscribed, where: …}, {segment_entry: churned}, {segment_exit: active}]`.
    mutating func journeyExits(_ node: ConfigNode) -> [JourneyDefinition.ExitRule] {
        guard case .array(let items) = node.value else {
            fail(node, "exit: expected a list of {event: NAME, where: …}, {segment_entry: ID} or {segment_exit: ID}, found \(node.typeName)")
            return []
        }
        var rules: [JourneyDefinition.ExitRule] = []
        for (index, item) in items.enumerated() {
            let path = "exit[\(index)]"
            guard case .object(let members) = item.value, let first = members.first else {
                fail(item, "\(path): expected {event: NAME, where: …}, {segment_entry: ID} or {segment_exit: ID}")
                continue
            }
            switch first.key {
            case "event":
                rejectUnknown(item, allowed: ["event", "where"], path)
                guard let text = string(item, "event"), let name = eventName(item["event"], text, "\(path).event") else { continue }
                var condition: SegmentExpression?
                if let text = string(item, "where", required: false) {
                    guard let parsed = self.condition(item["where"], text: text, namespaces: Self.journeyEventNamespaces, references: ["entry"])
                    else { continue }
                    condition = parsed
                }
                rules.append(.event(name: name, condition: condition))
            case "segment_entry", "segment_exit":
                rejectUnknown(item, allowed: [first.key], path)
                guard let segment = identifier(item, first.key) else { continue }
                rules.append(first.key == "segment_entry" ? .segmentEntry(segment: segment) : .segmentExit(segment: segment))
            default:
                fail(first.node, "\(path): expected event, segment_entry or segment_exit, found `\(first.key)`")
            }
        }
        return rules
    }

    /// One node: exactly one of delay, wait, split, experiment, message, exit, and `next` where it has one way out.
    mutating func journeyStep(_ node: ConfigNode, _ path: String) -> JourneyDefinition.Step? {
        let kinds = ["delay", "wait", "split", "experiment", "message", "update", "card", "exit"]
        guard case .object = node.value else {
            fail(node, "\(path): expected a node such as {message: {channel: email, template: welcome}, next: wait}, found \(node.typeName)")
            return nil
        }
        let present = node.members.map(\.key).filter(kinds.contains)
        guard present.count == 1, let kind = present.first, let body = node[kind] else {
            fail(node, "\(path): expected exactly one of \(kinds.joined(separator: ", ")), found \(present.isEmpty ? "none" : present.joined(separator: " and "))")
            return nil
        }
        let hasNext = ["delay", "message", "update", "card"].contains(kind)
        rejectUnknown(node, allowed: hasNext ? [kind, "next"] : [kind], path)
        var next: String?
        if hasNext {
            guard node["next"] != nil else {
                fail(node, "\(path): missing `next` (the node it leads to)")
                return nil
            }
            guard let name = identifier(node, "next") else { return nil }
            next = name
        }
        switch kind {
        case "delay":
            return journeyDelay(body, "\(path).delay").map { .delay($0, next: next!) }
        case "wait":
            return journeyWait(body, "\(path).wait")
        case "split":
            return journeySplit(body, "\(path).split")
        case "experiment":
            return journeyArms(body, "\(path).experiment")
        case "message":
            guard case .object = body.value else {
                fail(body, "\(path).message: expected {channel, template}, found \(body.typeName)")
                return nil
            }
            rejectUnknown(body, allowed: ["channel", "template", "app", "endpoint"], "\(path).message")
            return message(body, at: "\(path).message").map { .message($0, next: next!) }
        case "update":
            return journeyUpdate(body, "\(path).update").map { .update($0, next: next!) }
        case "card":
            return identifier(node, "card").map { .card($0, next: next!) }
        default:
            switch body.value {
            case .bool(true): return .exit
            case .object(let members) where members.isEmpty: return .exit
            default:
                fail(body, "\(path).exit: expected {} or true")
                return nil
            }
        }
    }

    /// `{attributes: {plan: gold, trial: true, interests: {$add: [shoes]}}}`: what the server API's `attributes` take
    /// (custom attributes, arrays' `$add`/`$remove`, the natives but an email address or a phone number, which one
    /// literal could not be for every profile), checked as the API checks them.
    mutating func journeyUpdate(_ node: ConfigNode, _ path: String) -> ProfileEdit? {
        guard case .object = node.value else {
            fail(node, "\(path): expected {attributes: {name: value}}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["attributes"], path)
        guard let attributes = node["attributes"], case .object(let members) = attributes.value, !members.isEmpty else {
            fail(node["attributes"] ?? node, "\(path).attributes: expected a mapping of attribute names to values")
            return nil
        }
        for (name, value) in members where ["$email_address", "$phone_number"].contains(name) {
            fail(value, "\(path).attributes.\(name): an update node does not set an address (the same literal for every profile)")
            return nil
        }
        let (edit, problems) = ProfileValidation.validate(attributes.json, path: "\(path).attributes", identified: true)
        for problem in problems {
            let name = problem.path.split(separator: ".").last.map(String.init) ?? ""
            fail(attributes[name] ?? attributes, "\(problem.path): \(problem.message)")
        }
        return problems.isEmpty ? edit : nil
    }

    /// A wait's or a delay's length: 60 s to 366 days.
    mutating func waitLength(_ node: ConfigNode, _ text: String, _ path: String) -> TimeInterval? {
        guard let seconds = Self.duration(text), seconds >= JourneyDefinition.shortestWait, seconds <= JourneyDefinition.longestWait else {
            fail(node, "\(path): expected a duration from 60s to 366d such as 2d, found \"\(text)\"")
            return nil
        }
        return seconds
    }

    /// `2d`, or `{until: "09:00", on: [monday, friday]}` in the profile's time zone.
    mutating func journeyDelay(_ node: ConfigNode, _ path: String) -> JourneyDefinition.Delay? {
        if case .string(let text) = node.value { return waitLength(node, text, path).map(JourneyDefinition.Delay.duration) }
        guard case .object = node.value else {
            fail(node, "\(path): expected a duration (2d) or {until: \"09:00\", on: [monday]}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["until", "on"], path)
        guard let text = string(node, "until") else { return nil }
        guard let time = LocalTime(text) else {
            fail(node["until"], "\(path).until: expected a time of day HH:MM, found \"\(text)\"")
            return nil
        }
        var weekdays: Set<Int> = []
        if let days = node["on"] {
            guard case .array(let items) = days.value, !items.isEmpty else {
                fail(days, "\(path).on: expected a list of weekdays (\(Self.weekdays.joined(separator: ", ")))")
                return nil
            }
            for item in items {
                guard case .string(let day) = item.value, let index = Self.weekdays.firstIndex(of: day.lowercased()) else {
                    fail(item, "\(path).on: expected \(Self.weekdays.joined(separator: ", ")), found \(item.scalarText ?? item.typeName)")
                    return nil
                }
                weekdays.insert(index)
            }
        }
        return .until(time, weekdays: weekdays)
    }

    /// `{branches: [{event: PURCHASED, where: …, next: …}, {segment: vip, next: …}], timeout: {after: 2d, next: …}}`.
    mutating func journeyWait(_ node: ConfigNode, _ path: String) -> JourneyDefinition.Step? {
        guard case .object = node.value else {
            fail(node, "\(path): expected {branches: […], timeout: {after: 2d, next: …}}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["branches", "timeout"], path)
        var branches: [JourneyDefinition.WaitBranch] = []
        guard case .array(let items)? = node["branches"]?.value, (1...JourneyDefinition.maxBranches).contains(items.count) else {
            fail(node["branches"] ?? node, "\(path).branches: expected a list of 1 to \(JourneyDefinition.maxBranches) branches")
            return nil
        }
        for (index, item) in items.enumerated() {
            let at = "\(path).branches[\(index)]"
            guard case .object = item.value else {
                fail(item, "\(at): expected {event: NAME, where: …, next: …} or {segment: ID, next: …}")
                continue
            }
            guard let next = identifier(item, "next") else { continue }
            if item["event"] != nil {
                rejectUnknown(item, allowed: ["event", "where", "next"], at)
                guard let text = string(item, "event"), let name = eventName(item["event"], text, "\(at).event") else { continue }
                var condition: SegmentExpression?
                if let text = string(item, "where", required: false) {
                    guard let parsed = self.condition(item["where"], text: text, namespaces: Self.journeyEventNamespaces, references: ["entry"])
                    else { continue }
                    condition = parsed
                }
                branches.append(.event(name: name, condition: condition, next: next))
            } else if item["segment"] != nil {
                rejectUnknown(item, allowed: ["segment", "next"], at)
                guard let segment = identifier(item, "segment") else { continue }
                branches.append(.segment(segment, next: next))
            } else {
                fail(item, "\(at): expected `event` or `segment`")
            }
        }
        guard let timeout = node["timeout"] else {
            fail(node, "\(path): missing `timeout` ({after: 2d, next: …}): a wait without one could hold a profile forever")
            return nil
        }
        guard case .object = timeout.value else {
            fail(timeout, "\(path).timeout: expected {after: 2d, next: …}, found \(timeout.typeName)")
            return nil
        }
        rejectUnknown(timeout, allowed: ["after", "next"], "\(path).timeout")
        guard let text = string(timeout, "after"), let after = waitLength(timeout["after"]!, text, "\(path).timeout.after"),
            let next = identifier(timeout, "next"), branches.count == items.count
        else { return nil }
        return .wait(branches: branches, timeout: after, timeoutNext: next)
    }

    /// `{branches: [{condition: 'c.tier = "vip"', next: …}], else: …}`.
    mutating func journeySplit(_ node: ConfigNode, _ path: String) -> JourneyDefinition.Step? {
        guard case .object = node.value else {
            fail(node, "\(path): expected {branches: [{condition: …, next: …}], else: …}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["branches", "else"], path)
        guard case .array(let items)? = node["branches"]?.value, (1...JourneyDefinition.maxBranches).contains(items.count) else {
            fail(node["branches"] ?? node, "\(path).branches: expected a list of 1 to \(JourneyDefinition.maxBranches) branches")
            return nil
        }
        var branches: [(condition: SegmentExpression, next: String)] = []
        for (index, item) in items.enumerated() {
            let at = "\(path).branches[\(index)]"
            guard case .object = item.value else {
                fail(item, "\(at): expected {condition: …, next: …}")
                continue
            }
            rejectUnknown(item, allowed: ["condition", "next"], at)
            guard let text = string(item, "condition"), let next = identifier(item, "next"),
                let condition = condition(item["condition"], text: text, namespaces: Self.journeySplitNamespaces, references: ["entry"])
            else { continue }
            branches.append((condition, next))
        }
        guard let otherwise = identifier(node, "else"), branches.count == items.count else { return nil }
        return .split(branches: branches, otherwise: otherwise)
    }

    /// `{arms: [{name: a, percent: 50, next: …}, …]}`: 2 to 8 arms whose percents add up to 100.
    mutating func journeyArms(_ node: ConfigNode, _ path: String) -> JourneyDefinition.Step? {
        guard case .object = node.value else {
            fail(node, "\(path): expected {arms: [{name, percent, next}, …]}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["arms"], path)
        guard case .array(let items)? = node["arms"]?.value, (2...JourneyDefinition.maxBranches).contains(items.count) else {
            fail(node["arms"] ?? node, "\(path).arms: expected a list of 2 to \(JourneyDefinition.maxBranches) arms")
            return nil
        }
        var arms: [JourneyDefinition.Arm] = []
        for (index, item) in items.enumerated() {
            let at = "\(path).arms[\(index)]"
            guard case .object = item.value else {
                fail(item, "\(at): expected {name, percent, next}")
                continue
            }
            rejectUnknown(item, allowed: ["name", "percent", "next"], at)
            guard let name = identifier(item, "name"), let next = identifier(item, "next") else { continue }
            guard case .number(let percent)? = item["percent"]?.value, percent == percent.rounded(), (1...99).contains(percent) else {
                fail(item["percent"] ?? item, "\(at).percent: expected a whole number from 1 to 99")
                continue
            }
            if arms.contains(where: { $0.name == name }) { fail(item["name"], "\(at).name: \(name) twice") }
            arms.append(JourneyDefinition.Arm(name: name, percent: Int(percent), next: next))
        }
        guard arms.count == items.count else { return nil }
        let total = arms.reduce(0) { $0 + $1.percent }
        guard total == 100 else {
            fail(node["arms"], "\(path).arms: the percents add up to \(total), not 100")
            return nil
        }
        return .experiment(arms: arms)
    }
}
