import Foundation

/// Projects, apps, segments, templates and campaigns: the configuration the operator keeps as files
/// (docs/configuration.md) and `herald config apply` publishes to `herald.config`, one record per object.
package struct HeraldConfiguration: Sendable {
    package var projects: [String: ProjectDefinition] = [:]
    package var apps: [String: AppDefinition] = [:]
    package var segments: [String: SegmentDefinition] = [:]
    package var templates: [String: TemplateDefinition] = [:]
    package var campaigns: [String: CampaignDefinition] = [:]
    package var contentBlocks: [String: ContentBlockDefinition] = [:]
    /// Global holdout groups (`kind: holdout`, docs/measurement.md), by key.
    package var holdouts: [String: HoldoutGroup] = [:]
    /// Geofence sets (`kind: geofence_set`, docs/geofences.md), by key.
    package var geofenceSets: [String: GeofenceSetDefinition] = [:]
    /// The projects' webhook endpoints (`kind: webhook_endpoint`, docs/webhooks.md), by key.
    package var webhookEndpoints: [String: WebhookEndpointDefinition] = [:]
    /// Journeys (`kind: journey`, docs/journeys.md), by key.
    package var journeys: [String: JourneyDefinition] = [:]
    package var inAppMessages: [String: InAppMessageDefinition] = [:] {
        didSet { inAppMessagesByPriority = Self.byPriority(inAppMessages) }
    }
    /// Each project's in-app messages, highest priority first (then by id): what a sync walks, sorted once here
    /// rather than at every sync.
    package private(set) var inAppMessagesByPriority: [String: [InAppMessageDefinition]] = [:]
    package var contentCards: [String: ContentCardDefinition] = [:] {
        didSet { (contentCardDigests, contentCardVersions) = Self.cardDigests(contentCards) }
    }
    /// Each card's digest of what its delivered cards show (`ContentCardDefinition.content`): a card whose digest
    /// changed since its delivery is rendered anew. Computed once per configuration, not at every sync.
    package private(set) var contentCardDigests: [String: String] = [:]
    /// Each project's digest of all its cards' digests: the version an app's feed cursor carries.
    package private(set) var contentCardVersions: [String: String] = [:]

    package init() {}

    /// The object's key on `herald.config`: `<kind>/<project>/<id>` (`project/<id>` for a project).
    package static func key(kind: String, project: String?, id: String) -> String {
        kind == "project" ? "project/\(id)" : "\(kind)/\(project ?? "")/\(id)"
    }

    /// Reads objects (each a mapping with `kind`, `id` and, but for projects, `project`), then checks what they
    /// reference. Returns the configuration and every problem found; objects with problems are left out.
    package static func read(_ objects: [(file: String, node: ConfigNode)]) -> (HeraldConfiguration, [ConfigIssue]) {
        var config = HeraldConfiguration()
        var issues: [ConfigIssue] = []
        var seen: [String: String] = [:]
        for (file, node) in objects {
            var reader = ConfigReader(file: file)
            guard let object = reader.object(node) else {
                issues += reader.issues
                continue
            }
            if let earlier = seen[object.key] {
                issues.append(ConfigIssue(file: file, line: node.line, message: "\(object.key) is also defined in \(earlier)"))
                continue
            }
            seen[object.key] = "\(file):\(node.line)"
            issues += reader.issues
            guard reader.issues.isEmpty else { continue }
            switch object {
            case .project(let project): config.projects[project.id] = project
            case .app(let app): config.apps[app.key] = app
            case .segment(let segment): config.segments[segment.key] = segment
            case .template(let template): config.templates[template.key] = template
            case .campaign(let campaign): config.campaigns[campaign.key] = campaign
            case .contentBlock(let block): config.contentBlocks[block.key] = block
            case .inAppMessage(let message): config.inAppMessages[message.key] = message
            case .contentCard(let card): config.contentCards[card.key] = card
            case .holdout(let holdout): config.holdouts[holdout.key] = holdout
            case .geofenceSet(let set): config.geofenceSets[set.key] = set
            case .webhookEndpoint(let endpoint): config.webhookEndpoints[endpoint.key] = endpoint
            case .journey(let journey): config.journeys[journey.key] = journey
            }
        }
        issues += config.resolvePlaces()
        issues += config.attachLandings()
        issues += config.crossCheck()
        return (config, issues)
    }

    /// References between objects: every campaign's segments, templates and apps exist in its project, and each
    /// template is of its message's channel.
    func crossCheck() -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        func check(_ exists: Bool, _ origin: ConfigOrigin, _ message: String) {
            if !exists { issues.append(ConfigIssue(file: origin.file, line: origin.line, message: message)) }
        }
        for segment in segments.values {
            check(projects[segment.project] != nil, segment.origin, "segment \(segment.id): no project \(segment.project)")
        }
        for template in templates.values {
            check(projects[template.project] != nil, template.origin, "template \(template.id): no project \(template.project)")
        }
        for holdout in holdouts.values {
            check(projects[holdout.project] != nil, holdout.origin, "holdout \(holdout.id): no project \(holdout.project)")
            for id in holdout.exemptCampaigns {
                check(
                    campaigns["\(holdout.project)/\(id)"] != nil, holdout.origin,
                    "holdout \(holdout.id): exempt_campaigns: no campaign \(id) in project \(holdout.project)")
            }
        }
        for app in apps.values {
            check(projects[app.project] != nil, app.origin, "app \(app.id): no project \(app.project)")
        }
        for set in geofenceSets.values.sorted(by: { $0.key < $1.key }) {
            check(projects[set.project] != nil, set.origin, "geofence_set \(set.id): no project \(set.project)")
            for app in set.apps {
                check(apps["\(set.project)/\(app)"] != nil, set.origin, "geofence_set \(set.id): apps: no app \(app) in project \(set.project)")
            }
        }
        for campaign in campaigns.values.sorted(by: { $0.key < $1.key }) {
            let project = campaign.project
            let name = "campaign \(campaign.id)"
            check(projects[project] != nil, campaign.origin, "\(name): no project \(project)")
            if let audience = campaign.audience {
                check(segments["\(project)/\(audience)"] != nil, campaign.origin, "\(name): audience: no segment \(audience) in project \(project)")
            }
            switch campaign.trigger {
            case .segmentEntry(let segment), .segmentExit(let segment):
                let field = campaign.trigger == .segmentEntry(segment: segment) ? "segment_entry" : "segment_exit"
                check(segments["\(project)/\(segment)"] != nil, campaign.origin, "\(name): trigger.\(field): no segment \(segment) in project \(project)")
            default: break
            }
            for (index, message) in campaign.messages.enumerated() {
                issues += messageIssues(message, project: project, at: "\(name): messages[\(index)]", campaign.origin)
                for (variant, id) in message.variantTemplates.sorted(by: { $0.key < $1.key }) {
                    let other = templates["\(project)/\(id)"]
                    check(
                        other != nil, campaign.origin,
                        "\(name): messages[\(index)].variants.\(variant): no template \(id) in project \(project)")
                    if let other {
                        check(
                            other.channel == message.channel, campaign.origin,
                            "\(name): messages[\(index)].variants.\(variant): template \(id) is for \(other.channel.rawValue), not \(message.channel.rawValue)")
                    }
                }
            }
            for card in campaign.cards {
                check(contentCards["\(project)/\(card)"] != nil, campaign.origin, "\(name): cards: no content_card \(card) in project \(project)")
            }
        }
        for card in contentCards.values.sorted(by: { $0.key < $1.key }) {
            check(projects[card.project] != nil, card.origin, "content_card \(card.id): no project \(card.project)")
        }
        for message in inAppMessages.values.sorted(by: { $0.key < $1.key }) {
            let project = message.project
            let name = "in_app_message \(message.id)"
            check(projects[project] != nil, message.origin, "\(name): no project \(project)")
            if let audience = message.audience {
                check(segments["\(project)/\(audience)"] != nil, message.origin, "\(name): audience: no segment \(audience) in project \(project)")
            }
            for (index, trigger) in message.triggers.enumerated() {
                if case .pushOpen(let campaign?) = trigger.kind {
                    check(campaigns["\(project)/\(campaign)"] != nil, message.origin, "\(name): triggers[\(index)].push_open: no campaign \(campaign) in project \(project)")
                }
            }
        }
        return issues + journeyIssues() + contentBlockIssues()
    }

    /// What a message references (its template, of its channel; its app; its webhook endpoint) missing from `project`;
    /// `path` names the message.
    func messageIssues(_ message: CampaignDefinition.Message, project: String, at path: String, _ origin: ConfigOrigin) -> [ConfigIssue] {
        var problems: [String] = []
        if let template = templates["\(project)/\(message.template)"] {
            if template.channel != message.channel {
                problems.append("\(path): template \(message.template) is for \(template.channel.rawValue), not \(message.channel.rawValue)")
            }
        } else {
            problems.append("\(path).template: no template \(message.template) in project \(project)")
        }
        if let app = message.app, apps["\(project)/\(app)"] == nil {
            problems.append("\(path).app: no app \(app) in project \(project)")
        }
        if message.channel == .webhook, webhookEndpoints["\(project)/\(message.endpoint ?? "")"] == nil {
            problems.append("\(path).endpoint: no webhook_endpoint \(message.endpoint ?? "") in project \(project)")
        }
        return problems.map { ConfigIssue(file: origin.file, line: origin.line, message: $0) }
    }

    static func cardDigests(_ cards: [String: ContentCardDefinition]) -> ([String: String], [String: String]) {
        let digests = cards.mapValues { ContentCardDefinition.digest($0.content) }
        let versions = Dictionary(grouping: cards.values, by: \.project).mapValues { list in
            ContentCardDefinition.digest(list.map(\.key).sorted().map { "\($0) \(digests[$0]!)" }.joined(separator: "\n"))
        }
        return (digests, versions)
    }

    static func byPriority(_ messages: [String: InAppMessageDefinition]) -> [String: [InAppMessageDefinition]] {
        Dictionary(grouping: messages.values, by: \.project).mapValues { list in
            list.sorted { ($0.priority, $1.id) > ($1.priority, $0.id) }
        }
    }

    /// The default language of a project's templates.
    package func defaultLanguage(project: String) -> String { projects[project]?.defaultLanguage ?? "en" }

    /// The time zone of a project's profiles that have none of their own.
    package func defaultTimeZone(project: String) -> String { projects[project]?.timeZone ?? "UTC" }

    /// The frequency caps that hold a campaign back (none for transactional campaigns and those that ignore them).
    package func frequencyCaps(of campaign: CampaignDefinition) -> [FrequencyCap] {
        guard campaign.marketing, !campaign.ignoreFrequencyCap else { return [] }
        return projects[campaign.project]?.frequencyCaps ?? []
    }

    /// The longest frequency-cap period of any project (how long the orchestrator keeps what it sent; 0: no caps).
    /// The buttons of a push's `category`, for each app of `project` the push may reach (`app`, or all of them) whose
    /// configuration defines the category; nil when none does.
    package func pushActions(project: String, app: String?, category: String?) -> [String: [PushAction]]? {
        guard let category, !category.isEmpty else { return nil }
        var actions: [String: [PushAction]] = [:]
        for definition in apps.values where definition.project == project && (app == nil || definition.id == app) {
            if let buttons = definition.categories[category] { actions[definition.id] = buttons }
        }
        return actions.isEmpty ? nil : actions
    }

    package var longestFrequencyCap: TimeInterval {
        projects.values.flatMap(\.frequencyCaps).map(\.period).max() ?? 0
    }

    /// The quiet hours a campaign's marketing sends follow (nil: none; transactional sends never have any).
    package func quietHours(of campaign: CampaignDefinition) -> QuietHours? {
        guard campaign.marketing else { return nil }
        switch campaign.quietHours {
        case .project: return projects[campaign.project]?.quietHours
        case .off: return nil
        case .own(let window): return window
        }
    }
}

/// Where an object was written (for messages; lines are 0 for objects read from `herald.config`).
package struct ConfigOrigin: Sendable, Equatable {
    package var file: String
    package var line: Int
}

package enum ConfigObject: Sendable {
    case project(ProjectDefinition)
    case app(AppDefinition)
    case segment(SegmentDefinition)
    case template(TemplateDefinition)
    case campaign(CampaignDefinition)
    case contentBlock(ContentBlockDefinition)
    case inAppMessage(InAppMessageDefinition)
    case contentCard(ContentCardDefinition)
    case holdout(HoldoutGroup)
    case geofenceSet(GeofenceSetDefinition)
    case webhookEndpoint(WebhookEndpointDefinition)
    case journey(JourneyDefinition)

    package static let kinds = [
        "project", "app", "segment", "template", "content_block", "campaign", "in_app_message", "content_card", "holdout",
        "geofence_set", "webhook_endpoint", "journey",
    ]

    package var key: String {
        switch self {
        case .project(let project): HeraldConfiguration.key(kind: "project", project: nil, id: project.id)
        case .app(let app): HeraldConfiguration.key(kind: "app", project: app.project, id: app.id)
        case .segment(let segment): HeraldConfiguration.key(kind: "segment", project: segment.project, id: segment.id)
        case .template(let template): HeraldConfiguration.key(kind: "template", project: template.project, id: template.id)
        case .campaign(let campaign): HeraldConfiguration.key(kind: "campaign", project: campaign.project, id: campaign.id)
        case .contentBlock(let block): HeraldConfiguration.key(kind: "content_block", project: block.project, id: block.id)
        case .inAppMessage(let message): HeraldConfiguration.key(kind: "in_app_message", project: message.project, id: message.id)
        case .contentCard(let card): HeraldConfiguration.key(kind: "content_card", project: card.project, id: card.id)
        case .holdout(let holdout): HeraldConfiguration.key(kind: "holdout", project: holdout.project, id: holdout.id)
        case .geofenceSet(let set): HeraldConfiguration.key(kind: "geofence_set", project: set.project, id: set.id)
        case .webhookEndpoint(let endpoint): HeraldConfiguration.key(kind: "webhook_endpoint", project: endpoint.project, id: endpoint.id)
        case .journey(let journey): HeraldConfiguration.key(kind: "journey", project: journey.project, id: journey.id)
        }
    }
}

package struct ProjectDefinition: Sendable {
    package var id: String
    package var name: String
    /// The language of templates' fallback variant.
    package var defaultLanguage: String
    /// The IANA time zone of a profile that has none of its own and no installation's (default `UTC`).
    package var timeZone: String = "UTC"
    /// The window of local time in which marketing sends are held or dropped (nil: none).
    package var quietHours: QuietHours?
    /// How many marketing messages one profile may receive per rolling period (every rule must pass).
    package var frequencyCaps: [FrequencyCap] = []
    /// The most items an array attribute keeps, where it is not 25 (`array_limits`, Braze's per-attribute maximum).
    package var arrayLimits: [String: Int] = [:]
    /// How much one profile may hold (`profile_limits`).
    package var profileLimits = ProfileLimits()
    /// How many live content cards (neither dismissed nor expired) one profile holds; a card past it is not delivered.
    package var maxContentCards = ContentCardDefinition.defaultMaxPerProfile
    /// Named points that segment conditions measure distances from (`places`).
    package var places: [String: Place] = [:]
    package static let defaultArrayLimit = 25
    package static let largestArrayLimit = 100
    package var origin: ConfigOrigin
}

package struct AppDefinition: Sendable {
    package var id: String
    package var project: String
    package var platform: Platform
    /// The APNs topic (iOS) or package name (Android).
    package var bundleID: String?
    /// Notification categories by name, with their buttons (docs/campaigns.md, "Templates").
    package var categories: [String: [PushAction]] = [:]
    /// How many geofences its installations monitor (`geofences: {max, reserved}`).
    package var geofenceLimit = GeofenceLimit()
    /// A silent push a day to each installation, so that an uninstall shows (docs/measurement.md, "Uninstalls").
    package var uninstallTracking = false
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }
}

package struct SegmentDefinition: Sendable {
    package var id: String
    package var project: String
    package var name: String
    package var conditionText: String
    package var condition: SegmentExpression
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }
}

extension MessageChannel {
    /// The fields of a message on the channel: required, then optional.
    package var fields: (required: [String], optional: [String]) {
        switch self {
        // `body` is required unless `push_type: background` (ConfigReader).
        // `story`: the pages of a Push Story (`PushStory`), a list read apart.
        case .push: ([], ["body", "title", "subtitle", "deeplink", "image_url", "sound", "collapse_id", "story"] + PushOptions.names)
        case .email: (["subject", "text"], ["html", "from", "reply_to"])
        case .sms: (["text"], [])
        // `headers`: a mapping read apart, kept as the fields `header.<Name>` (`WebhookRequestRules`).
        case .webhook: ([], ["body", "path", "method", "content_type", "headers"])
        }
    }
}

/// A value of a push template's custom payload.
package enum PayloadValue: Sendable, Equatable {
    case text(TemplateText)
    case json(JSONValue)
}

package struct TemplateDefinition: Sendable, LanguageVariants {
    package var id: String
    package var project: String
    package var channel: MessageChannel
    /// Language (ISO 639-1, or `default`) → field → text.
    package var variants: [String: [String: TemplateText]]
    /// Push only: the custom payload, merged at the root of the notification: strings are templates, other values
    /// (numbers, booleans, lists, mappings) are sent as they are written.
    package var payload: [String: PayloadValue]
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }

    /// Every text of the template with where it is (`variants.en.body`, `payload.deep_link`), in a fixed order.
    package var texts: [(field: String, text: TemplateText)] {
        var texts = variantTexts
        for (name, value) in payload.sorted(by: { $0.key < $1.key }) {
            if case .text(let text) = value { texts.append(("payload.\(name)", text)) }
        }
        return texts
    }
}

/// What an app reports that can trigger a campaign (`POST /v1/app/activity`): never a server's write (braze-rules 23).
package enum AppTrigger: String, Sendable, CaseIterable {
    /// A session of an installation started (the newest of its sessions: a late report of an older one does not).
    case sessionStart = "session_start"
    /// A notification of a campaign was opened, or one of its buttons pressed.
    case pushOpen = "push_open"

    /// What its condition may read, after `event.`.
    package var attributes: [String] {
        switch self {
        case .sessionStart: ["app", "session_id"]
        case .pushOpen: ["campaign", "action", "page", "app"]
        }
    }
}

package struct CampaignDefinition: Sendable {
    package enum Trigger: Sendable, Equatable {
        /// An event by name, with an optional condition on it (`event.<attribute>`, `event.label`).
        case event(name: String, condition: SegmentExpression?)
        /// Entering a segment.
        case segmentEntry(segment: String)
        /// Leaving a segment.
        case segmentExit(segment: String)
        /// At a time, or every period from a start, to the members of the audience segment.
        case schedule(start: Date, every: TimeInterval?)
        /// At a wall-clock time, in each member's time zone or one named zone, on a day or every N days.
        case localSchedule(LocalSchedule)
        /// `POST /v1/campaigns/{id}/trigger` on the ingest, with recipients and properties.
        case api
        /// Something the app reported (a session start, a notification opened), with an optional condition on it
        /// (`event.app`, `event.campaign`, `event.action`).
        case app(AppTrigger, condition: SegmentExpression?)

        /// Sent to the members of the audience segment on a schedule.
        package var isScheduled: Bool {
            switch self {
            case .schedule, .localSchedule: true
            default: false
            }
        }
    }

    package enum Reeligibility: Sendable, Equatable {
        /// Each time the trigger fires.
        case always
        /// Once per profile, ever.
        case once
        /// At most `count` sends per profile in any `period` seconds.
        case limit(count: Int, period: TimeInterval)
    }

    package struct Message: Sendable, Equatable {
        package var channel: MessageChannel
        package var template: String
        /// Push: only this app's installations (nil: every app of the project).
        package var app: String?
        /// The experiment's variants that send this message with another template: variant id → template id.
        package var variantTemplates: [String: String] = [:]
        /// Push: the in-app message shown when this push is opened (a landing, batch-rules §8.1): it gets a
        /// `push_open` trigger of the campaign, and the push names it (`com.herald.ld`, `herald_landing`).
        package var landing: String? = nil
        /// Webhook: the project's endpoint the message calls (`kind: webhook_endpoint`).
        package var endpoint: String? = nil

        /// The template a profile of `variant` gets (nil: no experiment).
        package func template(variant: String?) -> String { variant.flatMap { variantTemplates[$0] } ?? template }
    }

    package var id: String
    package var project: String
    package var name: String
    package var enabled: Bool
    /// Marketing sends need the channel's marketing subscription; transactional ones only a reachable address.
    package var marketing: Bool
    package var trigger: Trigger
    /// The segment the profile must be in when the send is decided (the recipients, for a schedule).
    package var audience: String?
    /// How long to wait after the trigger before deciding.
    package var delay: TimeInterval?
    /// Events that cancel a waiting delay.
    package var cancelOn: [String]
    /// A send decided later than this after the trigger is dropped (and counted).
    package var expiresAfter: TimeInterval?
    package var reeligibility: Reeligibility
    package var messages: [Message]
    /// The content cards each decision delivers into the profile's feed (`kind: content_card` ids).
    package var cards: [String] = []
    /// Marketing sends only: the project's quiet hours, none, or the campaign's own.
    package var quietHours: QuietHoursSetting = .project
    /// Marketing only: the project's frequency caps do not hold this campaign back (its sends still count).
    package var ignoreFrequencyCap = false
    /// Email opens and clicks tracked (an open pixel, links through the notifier); `tracking: false` turns both off.
    package var tracking = true
    /// Labels for grouping (`tags: [onboarding]`): a holdout group's `exempt_tags` name them.
    package var tags: [String] = []
    /// Scheduled campaigns only: at most this many messages per minute, the audience spread at that rate
    /// (docs/campaigns.md, "Send rate limits").
    package var rateLimit: Double?
    /// A control group and variants (docs/measurement.md).
    package var experiment: Experiment?
    /// The events that count as its goal reached, in order (a conversion's index is its position).
    package var conversions: [Conversion] = []
    /// The journey whose message node this campaign is (`JourneyDefinition.campaign(node:)`), nil for a
    /// campaign.
    package var journey: String?
    /// The journey (by key) this campaign is the scheduled entry of (`JourneyDefinition.scheduledEntry`): each
    /// profile its run reaches enters the journey instead of being sent a message.
    package var enters: String?
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }
}
