import Foundation
import GRDB
import PartitionStore
import Shared

/// What an anonymous or alias-only profile carries to the profile it merges into (docs/orchestrator.md, braze-rules
/// §1.2): language, region, time zone, address and phone where the profile has none, custom attributes (with their
/// times), event aggregates, purchases, content cards (with their views, clicks and dismissals, and the "received"
/// records of expired ones) and the last entry into each geofence (whose cooldown goes on).
struct ProfileHistory {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// The natives an anonymous or alias-only profile hands on, each only where the profile has none (an alias-only
    /// profile may have an address: Braze's server API sets them).
    static let mergedNatives: [ProfileNative] = [.language, .region, .timezone, .email, .phoneNumber]

    /// The profile's history (carried by an `install_move` or `alias_move` record); nil when there is no profile.
    func history(_ key: String) throws -> MergedHistory? {
        guard let profile = try ProfilesTable(db).record(key) else { return nil }
        var natives: [JSONMember] = []
        for native in Self.mergedNatives {
            if let value = profile[native] { natives.append(JSONMember(native.rawValue, .string(value))) }
        }
        let attributes = try ProfileAttributesTable(db).allInOrder(key).map { row in
            MergedHistory.Attribute(name: row.name, type: row.attribute.type, value: row.attribute.value, updatedAt: row.updatedAt)
        }
        let events = try EventAggregatesTable(db).all(key).map { event in
            MergedHistory.Event(
                name: event.name, count: event.count, first: event.first, last: event.last, label: event.label, tags: event.tags,
                attributes: event.attributes)
        }
        var history = MergedHistory(
            natives: natives, attributes: attributes, events: events, purchases: try Purchases(db).history(key),
            cards: try ContentCardsTable(db).history(key))
        history.geofenceEntries = try GeofenceEntriesTable(db).all(key)
        return history
    }

    /// Merges a history into a profile: natives only where the profile has none, attributes where the merged value
    /// is newer, event counts and purchases added.
    func merge(_ key: String, _ history: MergedHistory) throws {
        let profiles = ProfilesTable(db)
        for member in history.natives {
            guard let native = ProfileNative(rawValue: member.key), Self.mergedNatives.contains(native) else { continue }
            try profiles.fillNative(key, native, member.value.stringValue)
        }
        let attributes = ProfileAttributesTable(db)
        for attribute in history.attributes {
            try attributes.set(
                key, name: attribute.name, type: attribute.type, value: attribute.value, time: attribute.updatedAt, onlyIfNewer: true)
        }
        let events = EventAggregatesTable(db)
        for event in history.events {
            try events.add(
                key,
                EventAggregate(
                    name: event.name, count: event.count, first: event.first, last: event.last, label: event.label,
                    tags: event.tags, attributes: event.attributes))
        }
        try Purchases(db).merge(key, history.purchases)
        let cards = ContentCardsTable(db)
        for card in history.cards { try cards.receive(key, card) }
        let entries = GeofenceEntriesTable(db)
        for entry in history.geofenceEntries { try entries.merge(key, geofence: entry.geofence, at: entry.at) }
    }
}
