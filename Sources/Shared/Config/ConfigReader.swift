import Foundation
import Liquid

/// Reads one configuration object from its node, collecting every problem with its file and line.
struct ConfigReader {
    let file: String
    var issues: [ConfigIssue] = []

    init(file: String) { self.file = file }

    mutating func fail(_ node: ConfigNode?, _ message: String, line: Int? = nil) {
        issues.append(ConfigIssue(file: file, line: line ?? node?.line ?? 0, message: message))
    }

    /// An identifier: letters, digits, `_`, `-` and `.`, 1 to 128 characters.
    static func isIdentifier(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 128
            && text.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || "_-.".unicodeScalars.contains($0) }
    }

    mutating func object(_ node: ConfigNode) -> ConfigObject? {
        guard case .object = node.value else {
            fail(node, "expected a mapping with `kind`, found \(node.typeName)")
            return nil
        }
        guard let kind = string(node, "kind") else { return nil }
        let known: [String: [String]] = [
            "project": [
                "name", "default_language", "timezone", "quiet_hours", "frequency_caps", "array_limits", "profile_limits",
                "max_content_cards", "places",
            ],
            "app": ["project", "platform", "bundle_id", "categories", "uninstall_tracking", "geofences"],
            "geofence_set": Self.geofenceSetFields,
            "webhook_endpoint": Self.webhookEndpointFields,
            "journey": Self.journeyFields,
            "segment": ["project", "name", "condition"],
            "template": ["project", "channel", "variants", "payload"],
            "content_block": ["project", "content"],
            "in_app_message": Self.inAppMessageFields,
            "content_card": Self.contentCardFields,
            "holdout": ["project", "name", "percent", "exempt_campaigns", "exempt_tags"],
            "campaign": [
                "project", "name", "enabled", "type", "trigger", "audience", "delay", "cancel_on", "expires_after",
                "reeligibility", "messages", "cards", "quiet_hours", "ignore_frequency_cap", "rate_limit", "experiment",
                "conversions", "tracking", "tags",
            ],
        ]
        guard let fields = known[kind] else {
            fail(node["kind"], "kind: expected one of \(ConfigObject.kinds.joined(separator: ", ")), found \"\(kind)\"")
            return nil
        }
        rejectUnknown(node, allowed: ["kind", "id", "description"] + fields, kind)
        guard let id = identifier(node, "id") else { return nil }
        let origin = ConfigOrigin(file: file, line: node.line)
        let project = kind == "project" ? id : identifier(node, "project")
        guard let project else { return nil }
        switch kind {
        case "project":
            let language = string(node, "default_language", required: false) ?? "en"
            if !iso639_1.contains(language) { fail(node["default_language"], "default_language: \"\(language)\" is not an ISO 639-1 code") }
            var project = ProjectDefinition(
                id: id, name: string(node, "name", required: false) ?? id, defaultLanguage: language, origin: origin)
            if let zone = string(node, "timezone", required: false) {
                if ianaTimeZones.contains(zone) && TimeZone(identifier: zone) != nil {
                    project.timeZone = zone
                } else {
                    fail(node["timezone"], "timezone: \"\(zone)\" is not an IANA time zone name (such as Europe/Paris or UTC)")
                }
            }
            if let window = node["quiet_hours"] { project.quietHours = quietHours(window) }
            if let caps = node["frequency_caps"] { project.frequencyCaps = frequencyCaps(caps) }
            if let limits = node["array_limits"] { project.arrayLimits = arrayLimits(limits) }
            if let limits = node["profile_limits"] { project.profileLimits = profileLimits(limits) }
            if let places = node["places"] { project.places = self.places(places) }
            if let limit = node["max_content_cards"] {
                if case .number(let number) = limit.value, number >= 1, number <= 1000, number == number.rounded() {
                    project.maxContentCards = Int(number)
                } else {
                    fail(limit, "max_content_cards: expected a whole number from 1 to 1000 (live cards per profile)")
                }
            }
            return .project(project)
        case "app":
            guard let text = string(node, "platform") else { return nil }
            guard let platform = Platform(rawValue: text) else {
                fail(node["platform"], "platform: expected \(Platform.listed), found \"\(text)\"")
                return nil
            }
            var app = AppDefinition(id: id, project: project, platform: platform, bundleID: string(node, "bundle_id", required: false), origin: origin)
            if let categories = node["categories"] { app.categories = self.categories(categories, platform: platform) }
            app.uninstallTracking = bool(node, "uninstall_tracking", default: false)
            if let limit = node["geofences"] { app.geofenceLimit = geofenceLimit(limit) }
            return .app(app)
        case "segment":
            guard let text = string(node, "condition"), let condition = condition(node["condition"], text: text, namespaces: SegmentParser.namespaces)
            else { return nil }
            return .segment(
                SegmentDefinition(
                    id: id, project: project, name: string(node, "name", required: false) ?? id, conditionText: text,
                    condition: condition, origin: origin))
        case "template": return template(node, id: id, project: project, origin: origin).map(ConfigObject.template)
        case "content_block":
            guard let contentNode = node["content"] else {
                fail(node, "missing `content` (the block's Liquid text)")
                return nil
            }
            guard let content = templateText(contentNode, "content") else { return nil }
            return .contentBlock(ContentBlockDefinition(id: id, project: project, content: content, origin: origin))
        case "in_app_message": return inAppMessage(node, id: id, project: project, origin: origin).map(ConfigObject.inAppMessage)
        case "content_card": return contentCard(node, id: id, project: project, origin: origin).map(ConfigObject.contentCard)
        case "holdout": return holdout(node, id: id, project: project, origin: origin).map(ConfigObject.holdout)
        case "geofence_set": return geofenceSet(node, id: id, project: project, origin: origin).map(ConfigObject.geofenceSet)
        case "webhook_endpoint": return webhookEndpoint(node, id: id, project: project, origin: origin).map(ConfigObject.webhookEndpoint)
        case "journey": return journey(node, id: id, project: project, origin: origin).map(ConfigObject.journey)
        default: return campaign(node, id: id, project: project, origin: origin).map(ConfigObject.campaign)
        }
    }

    // MARK: Fields

    mutating func string(_ node: ConfigNode, _ key: String, required: Bool = true) -> String? {
        guard let value = node[key] else {
            if required { fail(node, "missing `\(key)`") }
            return nil
        }
        guard case .string(let text) = value.value else {
            fail(value, "\(key): expected a string, found \(value.typeName)")
            return nil
        }
        return text
    }

    mutating func identifier(_ node: ConfigNode, _ key: String) -> String? {
        guard let text = string(node, key) else { return nil }
        guard Self.isIdentifier(text) else {
            fail(node[key], "\(key): \"\(text)\" is not an identifier (letters, digits, _, - and ., at most 128)")
            return nil
        }
        return text
    }

    mutating func bool(_ node: ConfigNode, _ key: String, default value: Bool) -> Bool {
        guard let found = node[key] else { return value }
        guard case .bool(let flag) = found.value else {
            fail(found, "\(key): expected true or false, found \(found.typeName)")
            return value
        }
        return flag
    }

    /// An event name as the ingest stores it (`add_to_cart` → `ADD_TO_CART`: the ingest uppercases names, so a
    /// campaign written in lowercase matches), or a failure naming the field.
    mutating func eventName(_ node: ConfigNode?, _ text: String, _ field: String) -> String? {
        do {
            return try Rules.eventName(text)
        } catch {
            fail(node, "\(field): \"\(text)\" is not an event name (1 to 30 letters, digits or underscores)")
            return nil
        }
    }

    /// A duration such as `90s`, `15m`, `1h`, `7d`, `2w`: more than zero, at most `SegmentParser.maxDuration`.
    mutating func duration(_ node: ConfigNode, _ key: String) -> TimeInterval? {
        guard let text = string(node, key, required: false) else { return nil }
        guard let seconds = Self.duration(text), seconds > 0 else {
            fail(node[key], "\(key): expected a duration such as 30m, 1h or 7d (at most 36500d), found \"\(text)\"")
            return nil
        }
        return seconds
    }

    /// Digits with an optional fraction, then a unit: no sign, exponent, `inf` or `nan` (a `delay: infd` once trapped
    /// the orchestrator at its first decision), and nothing beyond `SegmentParser.maxDuration`.
    static func duration(_ text: String) -> TimeInterval? {
        guard let unit = text.last, let factor = SegmentParser.units[unit] else { return nil }
        let digits = text.dropLast()
        let parts = digits.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let number = Double(digits)
        else { return nil }
        let seconds = number * factor
        return seconds <= SegmentParser.maxDuration ? seconds : nil
    }

    mutating func condition(_ node: ConfigNode?, text: String, namespaces: Set<String>, references: Set<String> = []) -> SegmentExpression? {
        do {
            return try SegmentParser.parse(text, namespaces: namespaces, references: references)
        } catch {
            // A condition on one line is reported at its own line; `line` of a multi-line scalar is where it starts.
            fail(node, "condition, line \(error.line) column \(error.column): \(error.message)")
            return nil
        }
    }

    // MARK: Templates

    mutating func template(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> TemplateDefinition? {
        guard let channelText = string(node, "channel") else { return nil }
        guard let channel = MessageChannel(rawValue: channelText) else {
            fail(node["channel"], "channel: expected push, email, sms or webhook, found \"\(channelText)\"")
            return nil
        }
        guard let variantsNode = node["variants"] else {
            fail(node, "missing `variants` (a mapping from language, or `default`, to the message's fields)")
            return nil
        }
        guard case .object(let languages) = variantsNode.value, !languages.isEmpty else {
            fail(variantsNode, "variants: expected a mapping from language (or `default`) to fields, found \(variantsNode.typeName)")
            return nil
        }
        var variants: [String: [String: TemplateText]] = [:]
        let (required, optional) = channel.fields
        for (language, fieldsNode, fields) in variantLanguages(languages) {
            var texts: [String: TemplateText] = [:]
            if channel == .webhook {
                for (name, value) in fields where !(required + optional).contains(name) {
                    fail(value, "variants.\(language).\(name): not a field of webhook messages (\((required + optional).joined(separator: ", ")))")
                }
                variants[language] = webhookVariant(fields.filter { (required + optional).contains($0.key) }, "variants.\(language)")
                continue
            }
            for (name, value) in fields {
                guard (required + optional).contains(name) else {
                    fail(value, "variants.\(language).\(name): not a field of \(channel.rawValue) messages (\((required + optional).joined(separator: ", ")))")
                    continue
                }
                if channel == .push, name == "story" {
                    texts.merge(storyFields(value, "variants.\(language).story")) { first, _ in first }
                    continue
                }
                if channel == .push, PushOptions.literals[name] != nil {
                    if let text = pushLiteral(value, field: name, "variants.\(language).\(name)") { texts[name] = TemplateText(literal: text) }
                    continue
                }
                if let text = templateText(value, "variants.\(language).\(name)") { texts[name] = text }
            }
            for name in required where fields.allSatisfy({ $0.key != name }) {
                fail(fieldsNode, "variants.\(language): missing `\(name)`")
            }
            if channel == .push {
                let value = { (name: String) in fields.first { $0.key == name }.flatMap { $0.node.scalarText } }
                let background = value("push_type") == "background"
                let badge = fields.contains { $0.key == "badge" }
                if fields.contains(where: { $0.key == "story" }) {
                    storyVariantProblems(fields, fieldsNode, "variants.\(language)")
                } else if !background, !badge, fields.allSatisfy({ $0.key != "body" }) {
                    fail(
                        fieldsNode,
                        "variants.\(language): missing `body` (only `push_type: background`, or a push that only sets the `badge`, goes without)")
                }
                if background, value("priority") == "high" {
                    fail(fieldsNode, "variants.\(language): a background push goes at `priority: normal` (APNs refuses high)")
                }
                if background, badge, fields.allSatisfy({ $0.key != "story" }) {
                    fail(
                        fieldsNode,
                        "variants.\(language): a background push cannot set the badge (APNs); without `push_type`, a push with a badge and no text sets it silently")
                }
                // APNs takes 64 bytes of collapse id: what is fixed of it already over that never fits.
                if let collapse = texts["collapse_id"] {
                    let fixed = collapse.fixedText
                    if fixed.utf8.count > PushPayloadRules.maxCollapseIDBytes {
                        fail(
                            fields.first { $0.key == "collapse_id" }?.node,
                            "variants.\(language).collapse_id: \(fixed.utf8.count) bytes, and APNs takes \(PushPayloadRules.maxCollapseIDBytes)")
                    }
                }
            }
            if channel == .sms, let characters = texts["text"]?.fixedText.unicodeScalars.count, characters > SMSSegments.maxCharacters {
                fail(
                    fields.first { $0.key == "text" }?.node,
                    "variants.\(language).text: \(characters) characters without its placeholders, and the SMS provider takes \(SMSSegments.maxCharacters)")
            }
            variants[language] = texts
        }
        var payload: [String: PayloadValue] = [:]
        if let payloadNode = node["payload"] {
            if channel != .push { fail(payloadNode, "payload: only push templates have a custom payload") }
            if case .object(let members) = payloadNode.value {
                for (name, value) in members {
                    if let reason = PushPayloadRules.reservedKey(name) { fail(value, "payload.\(name): \(reason)") }
                    if case .string = value.value {
                        if let text = templateText(value, "payload.\(name)") { payload[name] = .text(text) }
                    } else if case .null = value.value {
                        fail(value, "payload.\(name): expected a value, found null")
                    } else {
                        payload[name] = .json(value.json)
                    }
                }
            } else {
                fail(payloadNode, "payload: expected a mapping, found \(payloadNode.typeName)")
            }
        }
        if channel == .push, variants.values.contains(where: PushStory.isStory) {
            for key in payload.keys.sorted() where PushStoryPayload.rootKeys.contains(key) {
                fail(node["payload"]?[key], "payload.\(key): taken by the story's layout (\(PushStoryPayload.rootKeys.sorted().joined(separator: ", ")))")
            }
        }
        if channel == .push {
            // What is fixed in a variant (its texts but their placeholders, the payload) over the providers' 4,096
            // bytes can never be sent: refused now rather than failed at every send.
            let fixedPayload = payload.keys.sorted().map { key in
                switch payload[key]! {
                case .text(let text): JSONMember(key, .string(text.fixedText))
                case .json(let value): JSONMember(key, value)
                }
            }
            for (language, texts) in variants.sorted(by: { $0.key < $1.key }) {
                let least = PushStory.isStory(texts)
                    ? PushStoryPayload.leastBytes(texts.mapValues(\.fixedText), payload: Dictionary(fixedPayload.map { ($0.key, $0.value) }) { a, _ in a })
                    : PushPayloadRules.leastBytes(fields: texts.mapValues(\.fixedText), payload: fixedPayload)
                if least > PushPayloadRules.maxBytes {
                    fail(
                        node["variants"]?[language],
                        "variants.\(language): its fixed text and payload take \(least) bytes, and APNs and FCM take \(PushPayloadRules.maxBytes) in all (payload_too_large at every send)")
                }
            }
        }
        return TemplateDefinition(id: id, project: project, channel: channel, variants: variants, payload: payload, origin: origin)
    }

    /// A push field with a fixed form (`PushOptions`): a string or a number, not a template.
    mutating func pushLiteral(_ node: ConfigNode, field: String, _ path: String) -> String? {
        guard let text = node.scalarText else {
            fail(node, "\(path): expected a string or a number, found \(node.typeName)")
            return nil
        }
        if let problem = PushOptions.problem(field, text) {
            fail(node, "\(path): \(problem)")
            return nil
        }
        return text
    }

    /// Fails each member of the mapping `node` whose key is not `allowed`: "<path>: unknown field `key`".
    mutating func rejectUnknown(_ node: ConfigNode, allowed: [String], _ path: String) {
        for member in node.members where !allowed.contains(member.key) {
            fail(member.node, "\(path): unknown field `\(member.key)`")
        }
    }

    /// A `variants` mapping's languages (ISO 639-1, or `default`) with their fields; the others are named and left out.
    mutating func variantLanguages(
        _ languages: [(key: String, node: ConfigNode)]
    ) -> [(language: String, node: ConfigNode, fields: [(key: String, node: ConfigNode)])] {
        var valid: [(language: String, node: ConfigNode, fields: [(key: String, node: ConfigNode)])] = []
        for (language, fieldsNode) in languages {
            guard language == "default" || iso639_1.contains(language) else {
                fail(fieldsNode, "variants: \"\(language)\" is not an ISO 639-1 language code or `default`")
                continue
            }
            guard case .object(let fields) = fieldsNode.value else {
                fail(fieldsNode, "variants.\(language): expected a mapping of fields, found \(fieldsNode.typeName)")
                continue
            }
            valid.append((language, fieldsNode, fields))
        }
        return valid
    }

    mutating func templateText(_ node: ConfigNode, _ name: String) -> TemplateText? {
        guard case .string(let text) = node.value else {
            fail(node, "\(name): expected a string, found \(node.typeName)")
            return nil
        }
        let parsed: TemplateText
        do {
            parsed = try TemplateText(parsing: text)
        } catch {
            // As conditions: the line and column inside the text (a block scalar starts on the line after the key).
            fail(node, "\(name), line \(error.line) column \(error.column): \(error.message)")
            return nil
        }
        let problems = MessageVariables.problems(parsed.liquid)
        for problem in problems { fail(node, "\(name): \(problem)") }
        return problems.isEmpty ? parsed : nil
    }

    // MARK: Campaigns

    mutating func campaign(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> CampaignDefinition? {
        let type = string(node, "type", required: false) ?? "marketing"
        if !["marketing", "transactional"].contains(type) {
            fail(node["type"], "type: expected marketing or transactional, found \"\(type)\"")
        }
        guard let triggerNode = node["trigger"] else {
            fail(node, "missing `trigger` (event, segment_entry, segment_exit, schedule, api, session_start or push_open)")
            return nil
        }
        guard let trigger = trigger(triggerNode) else { return nil }
        let audience = node["audience"] != nil ? identifier(node, "audience") : nil
        if trigger.isScheduled, audience == nil {
            fail(node, "a scheduled campaign needs an `audience` segment: the profiles it sends to")
        }
        var cancelOn: [String] = []
        if let cancelNode = node["cancel_on"] {
            if case .array(let items) = cancelNode.value {
                for item in items {
                    if case .string(let name) = item.value, let valid = eventName(item, name, "cancel_on") {
                        cancelOn.append(valid)
                    } else if case .string = item.value {
                        continue
                    } else {
                        fail(item, "cancel_on: expected event names")
                    }
                }
            } else {
                fail(cancelNode, "cancel_on: expected a list of event names, found \(cancelNode.typeName)")
            }
        }
        let delay = duration(node, "delay")
        if !cancelOn.isEmpty && delay == nil { fail(node["cancel_on"], "cancel_on: only a campaign with a `delay` can be cancelled") }
        var messages: [CampaignDefinition.Message] = []
        /// Where each message's `variants` is, for errors.
        var variantNodes: [Int: ConfigNode] = [:]
        var cards: [String] = []
        if let cardsNode = node["cards"] {
            if case .array(let items) = cardsNode.value, (1...10).contains(items.count) {
                for item in items {
                    guard case .string(let card) = item.value, Self.isIdentifier(card) else {
                        fail(item, "cards: expected content card ids")
                        continue
                    }
                    if cards.contains(card) { fail(item, "cards: \(card) twice") } else { cards.append(card) }
                }
            } else {
                fail(cardsNode, "cards: expected a list of 1 to 10 content card ids")
            }
        }
        if node["messages"] == nil, node["cards"] != nil {
            // A campaign of cards only.
        } else if case .array(let items)? = node["messages"]?.value, !items.isEmpty {
            for (index, item) in items.enumerated() {
                guard var message = message(item, at: "messages[\(index)]") else { continue }
                if let variants = item["variants"] {
                    message.variantTemplates = variantTemplates(variants, at: "messages[\(index)].variants")
                    variantNodes[messages.count] = variants
                }
                messages.append(message)
            }
        } else {
            fail(node["messages"] ?? node, "messages: expected a list of {channel, template} (or `cards` alone)")
        }
        var campaign = CampaignDefinition(
            id: id, project: project, name: string(node, "name", required: false) ?? id,
            enabled: bool(node, "enabled", default: true), marketing: type != "transactional", trigger: trigger,
            audience: audience, delay: delay, cancelOn: cancelOn, expiresAfter: duration(node, "expires_after"),
            reeligibility: reeligibility(node["reeligibility"]), messages: messages, origin: origin)
        campaign.cards = cards
        (campaign.quietHours, campaign.ignoreFrequencyCap) = marketingRules(node, marketing: campaign.marketing, "campaign")
        campaign.tracking = bool(node, "tracking", default: true)
        campaign.tags = identifiers(node, "tags", "tags")
        if let experimentNode = node["experiment"] {
            campaign.experiment = experiment(experimentNode)
        }
        if let conversionsNode = node["conversions"] { campaign.conversions = conversions(conversionsNode) }
        let declared = Set(campaign.experiment?.variants.map(\.id) ?? [])
        for (index, message) in messages.enumerated() {
            for variant in message.variantTemplates.keys.sorted() where !declared.contains(variant) {
                fail(variantNodes[index] ?? node, "messages[\(index)].variants.\(variant): not a variant of the campaign's experiment")
            }
        }
        if let limit = node["rate_limit"] {
            campaign.rateLimit = rateLimit(limit)
            if !trigger.isScheduled {
                fail(limit, "rate_limit: only a scheduled campaign is spread at a rate (a triggered one sends as its triggers come)")
            }
        }
        return campaign
    }

    /// `{SALE: {actions: [{id: BUY, title: Buy now, deeplink: "demo://buy", foreground: true, destructive: false}]}}`:
    /// names and action ids of 1 to 64 letters, digits, `_`, `-` or `.`; 1 to 4 actions (3 on Android, which shows no
    /// more), titles of 1 to 40 characters.
    mutating func categories(_ node: ConfigNode, platform: Platform) -> [String: [PushAction]] {
        guard case .object(let members) = node.value else {
            fail(node, "categories: expected a mapping from category name to {actions: [...]}, found \(node.typeName)")
            return [:]
        }
        let most = platform == .android ? 3 : 4
        var categories: [String: [PushAction]] = [:]
        for (name, category) in members {
            let path = "categories.\(name)"
            guard Rules.isActionName(name) else {
                fail(category, "\(path): a category name is 1 to 64 letters, digits, `_`, `-` or `.`")
                continue
            }
            rejectUnknown(category, allowed: ["actions"], path)
            guard case .array(let items)? = category["actions"]?.value, (1...most).contains(items.count) else {
                fail(category["actions"] ?? category, "\(path).actions: expected a list of 1 to \(most) actions (\(platform))")
                continue
            }
            var actions: [PushAction] = []
            for (index, item) in items.enumerated() {
                let at = "\(path).actions[\(index)]"
                rejectUnknown(item, allowed: ["id", "title", "deeplink", "foreground", "destructive", "action"], at)
                guard let id = string(item, "id"), let title = string(item, "title") else { continue }
                guard Rules.isActionName(id) else {
                    fail(item["id"], "\(at).id: an action id is 1 to 64 letters, digits, `_`, `-` or `.`")
                    continue
                }
                guard (1...40).contains(title.count) else {
                    fail(item["title"], "\(at).title: 1 to 40 characters")
                    continue
                }
                if actions.contains(where: { $0.id == id }) { fail(item["id"], "\(at).id: \(id) twice in the category") }
                var button = PushAction(
                    id: id, title: title, deeplink: string(item, "deeplink", required: false),
                    foreground: bool(item, "foreground", default: true), destructive: bool(item, "destructive", default: false))
                if let node = item["action"] {
                    guard case .object = node.value else {
                        fail(node, "\(at).action: expected an action {id, args}, such as {id: batch.user.tag, args: {a: add, c: interests, t: ski}}")
                        continue
                    }
                    guard let action = appAction(node, "\(at).action") else { continue }
                    button.action = action
                }
                actions.append(button)
            }
            categories[name] = actions
        }
        return categories
    }

    /// `quiet_hours` (project, off, or a window of its own) and `ignore_frequency_cap` of a campaign or a journey
    /// (`what`, in errors): marketing only.
    mutating func marketingRules(_ node: ConfigNode, marketing: Bool, _ what: String) -> (QuietHoursSetting, Bool) {
        var setting = QuietHoursSetting.project
        if let window = node["quiet_hours"] {
            switch window.value {
            case .bool(false), .string("off"): setting = .off
            case .string("project"): setting = .project
            default: if let own = quietHours(window) { setting = .own(own) }
            }
            if !marketing {
                fail(window, "quiet_hours: transactional \(what)s are never held; remove it or make the \(what) marketing")
            }
        }
        let ignore = bool(node, "ignore_frequency_cap", default: false)
        if ignore && !marketing {
            fail(node["ignore_frequency_cap"], "ignore_frequency_cap: transactional \(what)s are never capped; remove it")
        }
        return (setting, ignore)
    }

    /// One message of a campaign or a journey: `{channel, template, app, endpoint, landing}` (`path` names it in
    /// errors).
    mutating func message(_ item: ConfigNode, at path: String) -> CampaignDefinition.Message? {
        guard let channelText = string(item, "channel"), let template = identifier(item, "template") else { return nil }
        guard let channel = MessageChannel(rawValue: channelText) else {
            fail(item["channel"], "\(path).channel: expected push, email, sms or webhook, found \"\(channelText)\"")
            return nil
        }
        let app = item["app"] != nil ? identifier(item, "app") : nil
        if app != nil && channel != .push { fail(item["app"], "\(path).app: only push messages target an app") }
        var message = CampaignDefinition.Message(channel: channel, template: template, app: app)
        if channel == .webhook {
            if item["endpoint"] == nil {
                fail(item, "\(path): missing `endpoint` (the webhook_endpoint it calls)")
            } else {
                message.endpoint = identifier(item, "endpoint")
            }
        } else if item["endpoint"] != nil {
            fail(item["endpoint"], "\(path).endpoint: only a webhook message calls an endpoint")
        }
        if item["landing"] != nil {
            message.landing = identifier(item, "landing")
            if channel != .push { fail(item["landing"], "\(path).landing: only a push lands on an in-app message when opened") }
        }
        return message
    }

    /// `{max: 600, per: 1m}`: at most `max` messages per period (1 second to 1 day); returned per minute.
    mutating func rateLimit(_ node: ConfigNode) -> Double? {
        guard case .object = node.value else {
            fail(node, "rate_limit: expected {max: 600, per: 1m}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["max", "per"], "rate_limit")
        guard case .number(let max)? = node["max"]?.value, max >= 1, max <= 100_000_000, max == max.rounded() else {
            fail(node["max"] ?? node, "rate_limit.max: expected a whole number of messages, 1 to 100000000")
            return nil
        }
        guard let text = string(node, "per") else { return nil }
        guard let period = Self.duration(text), period >= 1, period <= 86_400 else {
            fail(node["per"], "rate_limit.per: expected a period from 1s to 1d such as 1m, found \"\(text)\"")
            return nil
        }
        return max * 60 / period
    }

    /// `{favorite_foods: 100}`: the most items an array attribute keeps (Braze's per-attribute maximum, 1 to 100;
    /// 25 for the others).
    mutating func arrayLimits(_ node: ConfigNode) -> [String: Int] {
        guard case .object = node.value else {
            fail(node, "array_limits: expected a mapping of attribute names to a number of items, found \(node.typeName)")
            return [:]
        }
        var limits: [String: Int] = [:]
        for member in node.members {
            guard Rules.isValidName(member.key), member.key == member.key.lowercased() else {
                fail(member.node, "array_limits.\(member.key): attribute names are 1 to 30 lowercase letters, digits or underscores")
                continue
            }
            guard case .number(let count) = member.node.value, count == count.rounded(), (1...Double(ProjectDefinition.largestArrayLimit)).contains(count)
            else {
                fail(member.node, "array_limits.\(member.key): expected a whole number of items, 1 to \(ProjectDefinition.largestArrayLimit)")
                continue
            }
            limits[member.key] = Int(count)
        }
        return limits
    }

    /// `{attributes: 500, event_names: 500, product_ids: 1000, installations: 100}`: how much one profile may hold (each
    /// 1 to 100,000; the others keep their default).
    mutating func profileLimits(_ node: ConfigNode) -> ProfileLimits {
        var limits = ProfileLimits()
        guard case .object = node.value else {
            fail(node, "profile_limits: expected a mapping of limits (\(ProfileLimits.Kind.allCases.map(\.rawValue).joined(separator: ", "))), found \(node.typeName)")
            return limits
        }
        for member in node.members {
            guard let kind = ProfileLimits.Kind(rawValue: member.key) else {
                fail(member.node, "profile_limits.\(member.key): expected one of \(ProfileLimits.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
                continue
            }
            guard case .number(let count) = member.node.value, count == count.rounded(), (1...Double(ProfileLimits.largest)).contains(count)
            else {
                fail(member.node, "profile_limits.\(member.key): expected a whole number, 1 to \(ProfileLimits.largest)")
                continue
            }
            limits[kind] = Int(count)
        }
        return limits
    }

    /// `[{max: 3, per: 24h, channel: push}, {max: 10, per: 7d}]`: every rule must pass; without `channel` a rule counts
    /// every channel together.
    mutating func frequencyCaps(_ node: ConfigNode) -> [FrequencyCap] {
        guard case .array(let items) = node.value else {
            fail(node, "frequency_caps: expected a list of {max: 3, per: 24h, channel: push}, found \(node.typeName)")
            return []
        }
        var caps: [FrequencyCap] = []
        for (index, item) in items.enumerated() {
            let name = "frequency_caps[\(index)]"
            guard case .object = item.value else {
                fail(item, "\(name): expected {max: 3, per: 24h, channel: push}, found \(item.typeName)")
                continue
            }
            rejectUnknown(item, allowed: ["max", "per", "channel"], name)
            guard case .number(let max)? = item["max"]?.value, max >= 1, max <= Double(FrequencyCap.largestMax),
                max == max.rounded()
            else {
                fail(item["max"] ?? item, "\(name).max: expected a whole number of messages, 1 to \(FrequencyCap.largestMax)")
                continue
            }
            guard let text = string(item, "per") else { continue }
            guard let period = Self.duration(text), period > 0, period <= FrequencyCap.longestPeriod else {
                fail(item["per"], "\(name).per: expected a period such as 24h or 7d, at most 90d, found \"\(text)\"")
                continue
            }
            var channel: MessageChannel?
            if let channelText = string(item, "channel", required: false) {
                guard let known = MessageChannel(rawValue: channelText), known != .webhook else {
                    fail(item["channel"], "\(name).channel: expected push, email or sms (webhooks are never capped), found \"\(channelText)\"")
                    continue
                }
                channel = known
            }
            caps.append(FrequencyCap(max: Int(max), period: period, channel: channel))
        }
        return caps
    }

    /// `{from: "21:00", to: "08:00", action: hold|drop}`: local times of the recipient, the window may span midnight.
    mutating func quietHours(_ node: ConfigNode) -> QuietHours? {
        guard case .object = node.value else {
            fail(node, "quiet_hours: expected {from: \"21:00\", to: \"08:00\", action: hold or drop}, found \(node.typeName)")
            return nil
        }
        rejectUnknown(node, allowed: ["from", "to", "action"], "quiet_hours")
        func time(_ key: String) -> LocalTime? {
            guard let value = node[key] else {
                fail(node, "quiet_hours: missing `\(key)`")
                return nil
            }
            guard case .string(let text) = value.value, let time = LocalTime(text) else {
                let text = if case .string(let text) = value.value { "\"\(text)\"" } else { value.typeName }
                fail(value, "quiet_hours.\(key): expected a time of day HH:MM (00:00 to 23:59), found \(text)")
                return nil
            }
            return time
        }
        let from = time("from"), to = time("to")
        let actionText = string(node, "action", required: false) ?? "hold"
        guard let action = QuietHours.Action(rawValue: actionText) else {
            fail(node["action"], "quiet_hours.action: expected hold or drop, found \"\(actionText)\"")
            return nil
        }
        guard let from, let to else { return nil }
        guard from != to else {
            fail(node, "quiet_hours: `from` and `to` are the same time (\(from)): the window would be empty or the whole day")
            return nil
        }
        return QuietHours(from: from, to: to, action: action)
    }

    mutating func trigger(_ node: ConfigNode) -> CampaignDefinition.Trigger? {
        guard case .object(let members) = node.value, let first = members.first else {
            fail(node, "trigger: expected a mapping with one of event, segment_entry, segment_exit, schedule, api, session_start or push_open")
            return nil
        }
        switch first.key {
        case "event":
            rejectUnknown(node, allowed: ["event", "where"], "trigger")
            guard let text = string(node, "event"), let name = eventName(node["event"], text, "trigger.event") else { return nil }
            var condition: SegmentExpression?
            if let text = string(node, "where", required: false) {
                guard let parsed = self.condition(node["where"], text: text, namespaces: ["event"]) else { return nil }
                condition = parsed
            }
            return .event(name: name, condition: condition)
        case "segment_entry":
            return identifier(node, "segment_entry").map { .segmentEntry(segment: $0) }
        case "segment_exit":
            return identifier(node, "segment_exit").map { .segmentExit(segment: $0) }
        case "schedule":
            let schedule = first.node
            guard let startText = string(schedule, "at") else { return nil }
            if let time = LocalTime(startText) { return localSchedule(schedule, time: time) }
            for member in schedule.members where !["at", "every"].contains(member.key) {
                fail(member.node, "schedule.\(member.key): only a schedule at a time of day (at: \"09:00\") has it")
            }
            guard let start = WireTime.parse(startText) else {
                fail(
                    schedule["at"],
                    "schedule.at: expected an ISO-8601 time such as 2026-12-01T09:00:00Z, or a time of day such as 09:00, found \"\(startText)\"")
                return nil
            }
            return .schedule(start: start, every: duration(schedule, "every"))
        case "api":
            guard case .bool(true) = first.node.value else {
                fail(first.node, "trigger.api: expected true")
                return nil
            }
            return .api
        case let key where AppTrigger(rawValue: key) != nil:
            let kind = AppTrigger(rawValue: key)!
            rejectUnknown(node, allowed: [key, "where"], "trigger")
            guard case .bool(true) = first.node.value else {
                fail(first.node, "trigger.\(key): expected true")
                return nil
            }
            var condition: SegmentExpression?
            if let text = string(node, "where", required: false) {
                guard let parsed = self.condition(node["where"], text: text, namespaces: ["event"]) else { return nil }
                for path in parsed.paths where !kind.attributes.contains(path.names.joined(separator: ".")) {
                    fail(
                        node["where"],
                        "trigger.where: a \(key) trigger has \(kind.attributes.map { "event.\($0)" }.joined(separator: ", ")), not event.\(path.names.joined(separator: "."))")
                    return nil
                }
                condition = parsed
            }
            return .app(kind, condition: condition)
        default:
            fail(first.node, "trigger: expected event, segment_entry, segment_exit, schedule, api, session_start or push_open, found `\(first.key)`")
            return nil
        }
    }

    /// `{at: "09:00", timezone: local | <IANA zone>, on: 2026-12-07, every: 1d, missed: next | skip}`.
    mutating func localSchedule(_ node: ConfigNode, time: LocalTime) -> CampaignDefinition.Trigger? {
        rejectUnknown(node, allowed: ["at", "timezone", "on", "every", "missed"], "schedule")
        guard let zoneText = string(node, "timezone") else { return nil }
        var zone: String?
        if zoneText != "local" {
            guard ianaTimeZones.contains(zoneText), TimeZone(identifier: zoneText) != nil else {
                fail(node["timezone"], "schedule.timezone: expected local or an IANA time zone name, found \"\(zoneText)\"")
                return nil
            }
            zone = zoneText
        }
        guard let dayText = string(node, "on") else { return nil }
        guard let day = LocalDay(dayText) else {
            fail(node["on"], "schedule.on: expected a date YYYY-MM-DD, found \"\(dayText)\"")
            return nil
        }
        var everyDays: Int?
        if let every = duration(node, "every") {
            guard every.truncatingRemainder(dividingBy: 86_400) == 0 else {
                fail(node["every"], "schedule.every: a schedule at a time of day repeats in whole days (1d, 7d, 2w)")
                return nil
            }
            everyDays = Int(every / 86_400)
        }
        let missedText = string(node, "missed", required: false) ?? "next"
        guard let missed = LocalSchedule.Missed(rawValue: missedText) else {
            fail(node["missed"], "schedule.missed: expected next or skip, found \"\(missedText)\"")
            return nil
        }
        return .localSchedule(LocalSchedule(time: time, zone: zone, firstDay: day, everyDays: everyDays, missed: missed))
    }

    mutating func reeligibility(_ node: ConfigNode?) -> CampaignDefinition.Reeligibility {
        guard let node else { return .once }
        switch node.value {
        case .string("once"): return .once
        case .string("always"): return .always
        case .object:
            guard case .number(let count)? = node["max"]?.value, count >= 1, count <= 1_000_000, count == count.rounded() else {
                fail(node, "reeligibility.max: expected a whole number of sends, 1 to 1000000")
                return .once
            }
            guard let period = duration(node, "per") else {
                fail(node, "reeligibility.per: expected a period such as 7d")
                return .once
            }
            return .limit(count: Int(count), period: period)
        default:
            fail(node, "reeligibility: expected once, always or {max: N, per: 7d}")
            return .once
        }
    }
}
