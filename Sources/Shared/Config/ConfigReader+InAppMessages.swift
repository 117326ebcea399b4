import Foundation
import Liquid

/// `kind: in_app_message` (docs/in-app.md): every field checked, with its file and line.
extension ConfigReader {
    static let inAppMessageFields = [
        "project", "name", "enabled", "type", "priority", "triggers", "min_trigger_interval", "audience", "reeligibility",
        "start", "end", "orientation", "dismiss", "click_action", "buttons", "asset_url", "extras", "variants",
    ]

    /// What a message's Liquid may read: the profile (it is rendered when the app syncs, not when a trigger fires).
    static let inAppRoots: Set<String> = ["c", "b", "custom_attribute"]

    mutating func inAppMessage(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> InAppMessageDefinition? {
        guard let typeText = string(node, "type") else { return nil }
        guard let kind = InAppMessageDefinition.Kind(rawValue: typeText) else {
            fail(node["type"], "type: expected slideup, modal, full or html, found \"\(typeText)\"")
            return nil
        }
        var priority = InAppMessageDefinition.defaultPriority
        if let value = node["priority"] {
            if case .number(let number) = value.value, number >= 0, number <= 100, number == number.rounded() {
                priority = Int(number)
            } else {
                fail(value, "priority: expected a whole number from 0 to 100 (higher shows first)")
            }
        }
        let triggers = inAppTriggers(node)
        let buttons = inAppButtons(node["buttons"], kind: kind)
        var clickAction = InAppMessageDefinition.ClickAction.dismiss
        if let actionNode = node["click_action"] {
            if !buttons.isEmpty {
                fail(actionNode, "click_action: a message with buttons acts only through them (its body is not clickable)")
            }
            clickAction = self.clickAction(actionNode, "click_action") ?? .dismiss
        }
        var autoDismiss: TimeInterval? = kind == .slideup ? 5 : nil
        if let dismiss = string(node, "dismiss", required: false) {
            if dismiss == "manual" {
                autoDismiss = nil
            } else if let seconds = Self.duration(dismiss), seconds > 0, seconds <= 3600 {
                autoDismiss = seconds
            } else {
                fail(node["dismiss"], "dismiss: expected manual or a duration up to 1h such as 5s, found \"\(dismiss)\"")
            }
        }
        let orientation = string(node, "orientation", required: false) ?? "any"
        if !["any", "portrait", "landscape"].contains(orientation) {
            fail(node["orientation"], "orientation: expected any, portrait or landscape, found \"\(orientation)\"")
        }
        let assetURL = string(node, "asset_url", required: false)
        if let assetURL, (try? Rules.url(assetURL)) == nil || !assetURL.lowercased().hasPrefix("https://") {
            fail(node["asset_url"], "asset_url: expected an https URL (the HTML message's asset bundle)")
        }
        if kind == .html, assetURL == nil { fail(node, "missing `asset_url`: an html message loads its assets from it") }
        if kind != .html, node["asset_url"] != nil { fail(node["asset_url"], "asset_url: only an html message has one") }
        var start: Date?
        var end: Date?
        for key in ["start", "end"] {
            guard let text = string(node, key, required: false) else { continue }
            guard let time = WireTime.parse(text) else {
                fail(node[key], "\(key): expected an ISO-8601 time such as 2026-12-01T09:00:00Z, found \"\(text)\"")
                continue
            }
            if key == "start" { start = time } else { end = time }
        }
        if let start, let end, end <= start { fail(node["end"], "end: not after start") }
        var minInterval = InAppMessageDefinition.defaultMinTriggerInterval
        if let text = string(node, "min_trigger_interval", required: false) {
            if text == "0s" || text == "0" {
                minInterval = 0
            } else if let seconds = Self.duration(text), seconds <= 86_400 {
                minInterval = seconds
            } else {
                fail(node["min_trigger_interval"], "min_trigger_interval: expected a duration up to 1d such as 30s, found \"\(text)\"")
            }
        }
        // The texts follow the buttons as written, even one refused above (its problem is said once).
        var declared: [String] = []
        if kind.maxButtons > 0, case .array(let items)? = node["buttons"]?.value {
            declared = items.prefix(kind.maxButtons).compactMap { $0["id"]?.scalarText }
        }
        let variants = inAppVariants(node, kind: kind, buttons: declared)
        let audience = node["audience"] != nil ? identifier(node, "audience") : nil
        let reeligibility = reeligibility(node["reeligibility"])
        if case .limit(let count, _) = reeligibility, count > InAppMessageDefinition.keptImpressions {
            // A profile keeps the newest impressions of a message up to this many: a larger limit could never be reached.
            fail(node["reeligibility"], "reeligibility.max: an in-app message is shown at most \(InAppMessageDefinition.keptImpressions) times per period")
        }
        return InAppMessageDefinition(
            id: id, project: project, name: string(node, "name", required: false) ?? id, enabled: bool(node, "enabled", default: true),
            kind: kind, priority: priority, triggers: triggers, minTriggerInterval: minInterval, audience: audience,
            reeligibility: reeligibility, start: start, end: end, orientation: orientation,
            autoDismiss: autoDismiss, clickAction: clickAction, buttons: buttons, assetURL: assetURL,
            extras: extras(node["extras"]), variants: variants, origin: origin)
    }

    /// `[{session_start: true}, {event: ADD_TO_CART, where: …, delay: 2s}, {purchase: any | SKU, where: …},
    /// {push_open: any | CAMPAIGN}]`; none for a landing only.
    mutating func inAppTriggers(_ message: ConfigNode) -> [InAppMessageDefinition.Trigger] {
        guard let node = message["triggers"] else {
            fail(message, "missing `triggers` (session_start, event, purchase or push_open, each in a list)")
            return []
        }
        // `[]`: a landing only, which a campaign's push attaches (`attachLandings` checks that one does).
        guard case .array(let items) = node.value, items.count <= 20 else {
            fail(node, "triggers: expected a list of up to 20 triggers (session_start, event, purchase, push_open)")
            return []
        }
        var triggers: [InAppMessageDefinition.Trigger] = []
        for (index, item) in items.enumerated() {
            let path = "triggers[\(index)]"
            guard case .object(let members) = item.value, let first = members.first else {
                fail(item, "\(path): expected a mapping such as {event: ADD_TO_CART}")
                continue
            }
            rejectUnknown(item, allowed: [first.key, "where", "delay"], path)
            let kind: InAppMessageDefinition.Trigger.Kind
            var attributes: [String]?  // nil: any attribute of the event
            switch first.key {
            case "session_start":
                guard case .bool(true) = first.node.value else {
                    fail(first.node, "\(path).session_start: expected true")
                    continue
                }
                kind = .sessionStart
                attributes = AppTrigger.sessionStart.attributes
            case "event":
                guard let text = string(item, "event"), let name = eventName(item["event"], text, "\(path).event") else { continue }
                kind = .event(name)
            case "purchase":
                guard let text = string(item, "purchase") else { continue }
                guard text == "any" || Rules.isVisibleASCII(text, length: 1...255) else {
                    fail(first.node, "\(path).purchase: expected any or a product id")
                    continue
                }
                kind = .purchase(text == "any" ? nil : text)
            case "push_open":
                guard let text = string(item, "push_open") else { continue }
                guard text == "any" || Self.isIdentifier(text) else {
                    fail(first.node, "\(path).push_open: expected any or a campaign id")
                    continue
                }
                kind = .pushOpen(text == "any" ? nil : text)
                attributes = AppTrigger.pushOpen.attributes
            default:
                fail(first.node, "\(path): expected session_start, event, purchase or push_open, found `\(first.key)`")
                continue
            }
            var trigger = InAppMessageDefinition.Trigger(kind: kind, delay: nil)
            if let text = string(item, "where", required: false) {
                guard let condition = condition(item["where"], text: text, namespaces: ["event"]) else { continue }
                if let attributes {
                    for path in condition.paths where !attributes.contains(path.names.joined(separator: ".")) {
                        fail(item["where"], "\(path.namespace).\(path.names.joined(separator: ".")): a \(first.key) trigger has \(attributes.map { "event.\($0)" }.joined(separator: ", "))")
                    }
                }
                trigger.conditionText = text
                trigger.condition = condition
            }
            if item["delay"] != nil {
                guard let delay = duration(item, "delay"), delay <= 3600 else {
                    fail(item["delay"], "\(path).delay: expected a duration up to 1h")
                    continue
                }
                trigger.delay = delay
            }
            triggers.append(trigger)
        }
        return triggers
    }

    /// `[{id: shop, action: {uri: "demo://shop"} | feed | dismiss}]`: as many as the type shows.
    mutating func inAppButtons(_ node: ConfigNode?, kind: InAppMessageDefinition.Kind) -> [InAppMessageDefinition.Button] {
        guard let node else { return [] }
        guard case .array(let items) = node.value else {
            fail(node, "buttons: expected a list of {id, action}")
            return []
        }
        guard items.count <= kind.maxButtons else {
            fail(node, kind.maxButtons == 0 ? "buttons: a \(kind.rawValue) message has no buttons" : "buttons: a \(kind.rawValue) message has at most \(kind.maxButtons) buttons")
            return []
        }
        var buttons: [InAppMessageDefinition.Button] = []
        for (index, item) in items.enumerated() {
            let path = "buttons[\(index)]"
            rejectUnknown(item, allowed: ["id", "action"], path)
            guard let id = string(item, "id") else { continue }
            guard Rules.isActionName(id) else {
                fail(item["id"], "\(path).id: a button id is 1 to 64 letters, digits, `_`, `-` or `.`")
                continue
            }
            if buttons.contains(where: { $0.id == id }) { fail(item["id"], "\(path).id: \(id) twice") }
            guard let actionNode = item["action"] else {
                fail(item, "\(path): missing `action` (uri, feed, dismiss or an action {id, args})")
                continue
            }
            if let action = clickAction(actionNode, "\(path).action") { buttons.append(.init(id: id, action: action)) }
        }
        return buttons
    }

    /// `{uri: "demo://x"}`, `feed`, `dismiss`, or an action `{id: batch.user.tag, args: {…}}`.
    mutating func clickAction(_ node: ConfigNode, _ path: String) -> InAppMessageDefinition.ClickAction? {
        switch node.value {
        case .string("feed"): return .feed
        case .string("dismiss"), .string("none"): return .dismiss
        case .object where node["id"] != nil:
            return appAction(node, path).map(InAppMessageDefinition.ClickAction.action)
        case .object:
            rejectUnknown(node, allowed: ["uri"], path)
            guard let uri = string(node, "uri") else { return nil }
            guard (1...2048).contains(uri.unicodeScalars.count), uri.contains(":"), !uri.contains(where: \.isWhitespace) else {
                fail(node["uri"], "\(path).uri: expected a URI with a scheme, at most 2048 characters, such as demo://sale")
                return nil
            }
            guard Rules.isSafeLink(uri) else {
                fail(node["uri"], "\(path).uri: a link the app opens never has the scheme \(Rules.unsafeSchemes.sorted().joined(separator: ", "))")
                return nil
            }
            return .uri(uri)
        default:
            fail(node, "\(path): expected {uri: …}, feed, dismiss or an action {id, args}")
            return nil
        }
    }

    /// `{key: "text"}`: string values (Braze's extras are strings), at most 50.
    mutating func extras(_ node: ConfigNode?) -> [(key: String, value: String)] {
        guard let node else { return [] }
        guard case .object(let members) = node.value, members.count <= 50 else {
            fail(node, "extras: expected a mapping of at most 50 keys to strings")
            return []
        }
        var extras: [(key: String, value: String)] = []
        for member in members {
            guard let text = member.node.scalarText, (1...255).contains(member.key.count), text.unicodeScalars.count <= 1024 else {
                fail(member.node, "extras.\(member.key): expected a string of at most 1024 characters under a key of 1 to 255")
                continue
            }
            extras.append((member.key, text))
        }
        return extras
    }

    /// Language → `header`, `message`, `image_url`, `button.<id>`: Liquid over the profile. Each variant has a
    /// message, the image a full message needs, and every button's text.
    mutating func inAppVariants(
        _ message: ConfigNode, kind: InAppMessageDefinition.Kind, buttons: [String]
    ) -> [String: [String: TemplateText]] {
        guard let node = message["variants"], case .object(let languages) = node.value, !languages.isEmpty else {
            fail(message["variants"] ?? message, "variants: expected a mapping from language (or `default`) to header, message, image_url and button texts")
            return [:]
        }
        var variants: [String: [String: TemplateText]] = [:]
        for (language, fieldsNode, fields) in variantLanguages(languages) {
            var texts: [String: TemplateText] = [:]
            for (name, value) in fields {
                let path = "variants.\(language).\(name)"
                guard InAppMessageDefinition.isField(name), !name.hasPrefix("button.") || buttons.contains(where: { "button.\($0)" == name })
                else {
                    fail(value, "\(path): not a field of this message (header, message, image_url, and button.<id> for each of its buttons)")
                    continue
                }
                guard let text = templateText(value, path) else { continue }
                let outside = text.liquid.variablePaths.map { $0[0] }.filter {
                    !Self.inAppRoots.contains($0) && MessageVariables.standardAttributes[$0] == nil && !text.liquid.definedNames.contains($0)
                }
                if let root = outside.sorted().first {
                    fail(value, "\(path): `\(root)` is not known when the app syncs (an in-app message reads the profile: c., b. and Braze's standard attributes)")
                    continue
                }
                if name == "image_url", text.isFixed, !Rules.isSafeURL(text.fixedText) {
                    fail(value, "\(path): expected a URL with a scheme and a host, such as https://example.com/sale.png (never \(Rules.unsafeSchemes.sorted().joined(separator: ", ")))")
                    continue
                }
                texts[name] = text
            }
            let has = { (name: String) in fields.contains { $0.key == name } }
            if kind != .html, !has("message") { fail(fieldsNode, "variants.\(language): missing `message`") }
            if kind == .full, !has("image_url") { fail(fieldsNode, "variants.\(language): missing `image_url` (a full message shows an image)") }
            for button in buttons where !has("button.\(button)") {
                fail(fieldsNode, "variants.\(language): missing `button.\(button)` (the button's text)")
            }
            variants[language] = texts
        }
        return variants
    }
}
