import Foundation

// The payloads of the orchestrator's own records, which move identity state between the partitions of the keys
// involved (docs/orchestrator.md, Identity). The ingest never writes them.

/// `install_link`, to an installation's home: link it to the profile `targetCustomID`; `merge`: its anonymous history
/// merges (the profile is new).
package struct InstallLink: Sendable, Equatable {
    package var targetCustomID: String
    package var merge: Bool

    package init(targetCustomID: String, merge: Bool) {
        self.targetCustomID = targetCustomID
        self.merge = merge
    }
}

/// `install_move`: an installation's state (its row's moving columns; nil: the home had no row) to its new holder, with
/// the anonymous history when it merges.
package struct InstallMove: Sendable, Equatable {
    package var installation: [JSONMember]?
    package var merge: MergedHistory?

    package init(installation: [JSONMember]?, merge: MergedHistory? = nil) {
        self.installation = installation
        self.merge = merge
    }
}

/// `token_claim`, to a token's key: the token belongs to the profile `ownerKey` and the record's installation, registered
/// there at `registeredAt`.
package struct TokenClaim: Sendable, Equatable {
    package var token: String
    package var ownerKey: String
    package var registeredAt: Date?

    package init(token: String, ownerKey: String, registeredAt: Date?) {
        self.token = token
        self.ownerKey = ownerKey
        self.registeredAt = registeredAt
    }

    /// The registration time as the wire carries it.
}

/// `token_release`, to the token's previous owner: the token moved to `movedTo`. To the token's own key, with
/// `erasedOwner` (an erased profile's): the key forgets that owner (docs/data-rights.md).
package struct TokenRelease: Sendable, Equatable {
    package var token: String
    package var movedTo: String?
    package var erasedOwner: String? = nil

    package init(token: String, movedTo: String?, erasedOwner: String? = nil) {
        self.token = token
        self.movedTo = movedTo
        self.erasedOwner = erasedOwner
    }
}

/// `alias_claim`, to an alias's key: the alias belongs to `targetCustomID` (the first claim wins); `merge` as for
/// `install_link`.
package struct AliasClaim: Sendable, Equatable {
    package var targetCustomID: String
    package var merge: Bool

    package init(targetCustomID: String, merge: Bool) {
        self.targetCustomID = targetCustomID
        self.merge = merge
    }
}

/// What an anonymous or alias-only profile carries to the profile it merges into (braze-rules §1.2): its natives (each
/// kept only where the profile has none), custom attributes with their times, event aggregates and purchases.
package struct MergedHistory: Sendable, Equatable {
    package struct Attribute: Sendable, Equatable {
        package var name: String
        /// The type and the value as stored (JSON text).
        package var type: AttributeType
        package var value: String
        package var updatedAt: Date

        package init(name: String, type: AttributeType, value: String, updatedAt: Date) {
            self.name = name
            self.type = type
            self.value = value
            self.updatedAt = updatedAt
        }
    }

    package struct Event: Sendable, Equatable {
        package var name: String
        package var count: Int64
        package var first: Date
        package var last: Date
        package var label: String?
        /// JSON text, as stored.
        package var tags: String?
        package var attributes: String

        package init(name: String, count: Int64, first: Date, last: Date, label: String?, tags: String?, attributes: String) {
            self.name = name
            self.count = count
            self.first = first
            self.last = last
            self.label = label
            self.tags = tags
            self.attributes = attributes
        }
    }

    package struct Product: Sendable, Equatable {
        package var productID: String
        package var count: Int64
        package var revenueUSD: Double
        package var unpricedCount: Int64
        package var first: Date
        package var last: Date
        package var lastPrice: Double
        package var lastCurrency: String

        package init(
            productID: String, count: Int64, revenueUSD: Double, unpricedCount: Int64, first: Date, last: Date,
            lastPrice: Double, lastCurrency: String
        ) {
            self.productID = productID
            self.count = count
            self.revenueUSD = revenueUSD
            self.unpricedCount = unpricedCount
            self.first = first
            self.last = last
            self.lastPrice = lastPrice
            self.lastCurrency = lastCurrency
        }
    }

    /// A content card of the profile's feed, as stored (texts and context as JSON text): live, dismissed or expired
    /// (its "received" record).
    package struct Card: Sendable, Equatable {
        package var id: String
        package var cardKey: String
        package var campaignKey: String
        package var language: String
        package var texts: String
        package var content: String
        package var context: String
        package var createdAt: String
        package var updatedAt: String
        package var expiresAt: String
        package var viewedAt: String?
        package var clickedAt: String?
        package var dismissedAt: String?

        package init(
            id: String, cardKey: String, campaignKey: String, language: String, texts: String, content: String, context: String,
            createdAt: String, updatedAt: String, expiresAt: String, viewedAt: String?, clickedAt: String?, dismissedAt: String?
        ) {
            self.id = id
            self.cardKey = cardKey
            self.campaignKey = campaignKey
            self.language = language
            self.texts = texts
            self.content = content
            self.context = context
            self.createdAt = createdAt
            self.updatedAt = updatedAt
            self.expiresAt = expiresAt
            self.viewedAt = viewedAt
            self.clickedAt = clickedAt
            self.dismissedAt = dismissedAt
        }
    }

    /// Native field (`language`, `email`, …) → value.
    package var natives: [JSONMember]
    package var attributes: [Attribute]
    package var events: [Event]
    package var purchases: [Product]
    /// The content cards it received (`cards`, written only when there are some).
    package var cards: [Card]
    /// Its last counted entry into each geofence (`<set key>/<geofence id>` → time; `geofence_entries`, written only
    /// when there are some): the cooldown goes on in the profile it merges into.
    package var geofenceEntries: [(geofence: String, at: Date)] = []

    package init(natives: [JSONMember], attributes: [Attribute], events: [Event], purchases: [Product], cards: [Card] = []) {
        self.natives = natives
        self.attributes = attributes
        self.events = events
        self.purchases = purchases
        self.cards = cards
    }

    package static func == (left: MergedHistory, right: MergedHistory) -> Bool {
        left.natives == right.natives && left.attributes == right.attributes && left.events == right.events
            && left.purchases == right.purchases && left.cards == right.cards
            && left.geofenceEntries.map(\.geofence) == right.geofenceEntries.map(\.geofence)
            && left.geofenceEntries.map(\.at) == right.geofenceEntries.map(\.at)
    }
}

// MARK: Wire

extension MergedHistory.Product {
    /// `{"count", "revenue_usd", "unpriced_count", "first", "last", "last_price", "last_currency"}` (under its product id).
    package var json: JSONValue {
        .object([
            JSONMember("count", .number(String(count))), JSONMember("revenue_usd", .number(JSONValue.literal(revenueUSD))),
            JSONMember("unpriced_count", .number(String(unpricedCount))), JSONMember("first", .time(first)),
            JSONMember("last", .time(last)), JSONMember("last_price", .number(JSONValue.literal(lastPrice))),
            JSONMember("last_currency", .string(lastCurrency)),
        ])
    }
}

extension MergedHistory.Card {
    static let fields = [
        "id", "card_key", "campaign_key", "language", "texts", "content", "context", "created_at", "updated_at", "expires_at",
    ]

    var json: JSONValue {
        let values = [id, cardKey, campaignKey, language, texts, content, context, createdAt, updatedAt, expiresAt]
        var members = zip(Self.fields, values).map { JSONMember($0.0, .string($0.1)) }
        for (name, value) in [("viewed_at", viewedAt), ("clicked_at", clickedAt), ("dismissed_at", dismissedAt)] {
            if let value { members.append(JSONMember(name, .string(value))) }
        }
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let card = try WireObject(value, path: path)
        var values: [String] = []
        for field in Self.fields { values.append(try card.string(field)) }
        self.init(
            id: values[0], cardKey: values[1], campaignKey: values[2], language: values[3], texts: values[4], content: values[5],
            context: values[6], createdAt: values[7], updatedAt: values[8], expiresAt: values[9],
            viewedAt: try card.optionalString("viewed_at"), clickedAt: try card.optionalString("clicked_at"),
            dismissedAt: try card.optionalString("dismissed_at"))
    }
}

extension MergedHistory {
    var json: JSONValue {
        var members: [JSONMember] = [
            JSONMember("natives", .object(natives)),
            JSONMember(
                "attributes",
                .array(attributes.map { .array([.string($0.name), .string($0.type.rawValue), .string($0.value), .time($0.updatedAt)]) })),
            JSONMember(
                "events",
                .array(
                    events.map { event in
                        .object([
                            JSONMember("name", .string(event.name)), JSONMember("count", .number(String(event.count))),
                            JSONMember("first", .time(event.first)), JSONMember("last", .time(event.last)),
                            JSONMember("label", event.label.map(JSONValue.string) ?? .null),
                            JSONMember("tags", event.tags.map(JSONValue.string) ?? .null),
                            JSONMember("attributes", .string(event.attributes)),
                        ])
                    })),
            JSONMember("purchases", .object(purchases.map { JSONMember($0.productID, $0.json) })),
        ]
        if !cards.isEmpty { members.append(JSONMember("cards", .array(cards.map(\.json)))) }
        if !geofenceEntries.isEmpty {
            members.append(JSONMember("geofence_entries", .object(geofenceEntries.map { JSONMember($0.geofence, .time($0.at)) })))
        }
        return .object(members)
    }

    init(wire value: JSONValue, path: String) throws(WireError) {
        let object = try WireObject(value, path: path)
        let natives = try object.optionalObject("natives")?.members ?? []
        for native in natives {
            guard case .string = native.value else { throw WireError(reason: "\(object.path("natives")).\(native.key): expected a string") }
        }
        var attributes: [Attribute] = []
        for (index, item) in (try object.optionalArray("attributes") ?? []).enumerated() {
            guard case .array(let parts) = item, parts.count == 4, case .string(let name) = parts[0], case .string(let code) = parts[1], let type = AttributeType(rawValue: code),
                case .string(let text) = parts[2], case .string(let updatedText) = parts[3], let updatedAt = WireTime.parse(updatedText)
            else { throw WireError(reason: "\(object.path("attributes"))[\(index)]: expected [name, type, value, updated_at]") }
            attributes.append(Attribute(name: name, type: type, value: text, updatedAt: updatedAt))
        }
        var events: [Event] = []
        for (index, item) in (try object.optionalArray("events") ?? []).enumerated() {
            let event = try WireObject(item, path: "\(object.path("events"))[\(index)]")
            events.append(
                Event(
                    name: try event.string("name"), count: try event.int64("count"), first: try event.time("first"),
                    last: try event.time("last"), label: try event.optionalString("label"), tags: try event.optionalString("tags"),
                    attributes: try event.optionalString("attributes") ?? "{}"))
        }
        var purchases: [Product] = []
        for member in try object.optionalObject("purchases")?.members ?? [] {
            let product = try WireObject(member.value, path: "\(object.path("purchases")).\(member.key)")
            purchases.append(
                Product(
                    productID: member.key, count: try product.int64("count"), revenueUSD: try product.double("revenue_usd"),
                    unpricedCount: try product.int64("unpriced_count"), first: try product.time("first"),
                    last: try product.time("last"), lastPrice: try product.double("last_price"),
                    lastCurrency: try product.string("last_currency")))
        }
        var cards: [Card] = []
        for (index, item) in (try object.optionalArray("cards") ?? []).enumerated() {
            cards.append(try Card(wire: item, path: "\(object.path("cards"))[\(index)]"))
        }
        self.init(natives: natives, attributes: attributes, events: events, purchases: purchases, cards: cards)
        for member in try object.optionalObject("geofence_entries")?.members ?? [] {
            guard case .string(let text) = member.value, let at = WireTime.parse(text) else {
                throw WireError(reason: "\(object.path("geofence_entries")).\(member.key): expected a time")
            }
            geofenceEntries.append((member.key, at))
        }
    }
}
