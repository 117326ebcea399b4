import Foundation

/// What one record on `herald.ingest` does, with its fields: one case per op, each with its typed payload. Written
/// (`members`) and read (`init(op:fields:)`) here; a new op is a case of `IngestOp`, a case here, and the branches the
/// compiler then asks for (the orchestrator's `OpApplier`).
package enum IngestPayload: Sendable, Equatable {
    case profileUpdate(ProfileUpdate)
    case event(ValidatedEvent)
    case identify
    /// An app's logout; `from_custom_id`: the profile it logs out from, proven by the app (signed identity): the link
    /// is undone only if it still points there.
    case logout(fromCustomID: String?)
    case installation(InstallationReport)
    case pushToken(PushTokenRegistration)
    case location(LocationReport)
    case optOut
    case optIn
    /// An app's wipe (no field); at the home, the orchestrator's (`from_custom_id`: the profile that already dropped it).
    case wipe(fromCustomID: String?)
    /// A delete, which erases everything the services hold of the profile and answers with a receipt on
    /// `herald.erasures` (docs/data-rights.md); `doNotContact`: its addresses go on the suppression list too (written only
    /// when true).
    case profileDelete(doNotContact: Bool)
    case campaignTrigger(CampaignTrigger)
    case journeyTrigger(JourneyTrigger)
    case purchase(Purchase)
    /// The envelope's alias for its custom ID's profile (or an alias-only profile without one).
    case alias
    case pushSend(TransactionalPush)
    case session(SessionReport)
    case pushOpen(PushOpenReport)
    case inApp(InAppReport)
    case contentCard(CardReport)
    case geofence(GeofenceReport)

    // The orchestrator's own.
    case installLink(InstallLink)
    /// To an installation's home: forget its link to the deleted profile `targetCustomID`.
    case installUnlink(targetCustomID: String?)
    case installDetach
    case installMove(InstallMove)
    case installDrop
    case tokenClaim(TokenClaim)
    case tokenRelease(TokenRelease)
    case aliasClaim(AliasClaim)
    case aliasRefused
    /// To an alias's key: the profile `targetCustomID` gave the alias up.
    case aliasUnlink(targetCustomID: String)
    /// To a profile: an alias-only profile's history.
    case aliasMove(merge: MergedHistory?)
    case journeyUpdate(JourneyUpdate)

    package var op: IngestOp {
        switch self {
        case .profileUpdate: .profileUpdate
        case .event: .event
        case .identify: .identify
        case .logout: .logout
        case .installation: .installation
        case .pushToken: .pushToken
        case .location: .location
        case .optOut: .optOut
        case .optIn: .optIn
        case .wipe: .wipe
        case .profileDelete: .profileDelete
        case .campaignTrigger: .campaignTrigger
        case .journeyTrigger: .journeyTrigger
        case .purchase: .purchase
        case .alias: .alias
        case .pushSend: .pushSend
        case .session: .session
        case .pushOpen: .pushOpen
        case .inApp: .inApp
        case .contentCard: .contentCard
        case .geofence: .geofence
        case .installLink: .installLink
        case .installUnlink: .installUnlink
        case .installDetach: .installDetach
        case .installMove: .installMove
        case .installDrop: .installDrop
        case .tokenClaim: .tokenClaim
        case .tokenRelease: .tokenRelease
        case .aliasClaim: .aliasClaim
        case .aliasRefused: .aliasRefused
        case .aliasUnlink: .aliasUnlink
        case .aliasMove: .aliasMove
        case .journeyUpdate: .journeyUpdate
        }
    }

    /// Writes the op's fields, after the envelope: events (the most frequent writes by far) straight from their typed
    /// fields, the other ops through `members`.
    func write(into writer: inout JSONWriter) {
        switch self {
        case .event(let event):
            writer.key("event")
            event.write(into: &writer)
        case .profileUpdate(let update):
            if let profile = update.profile { writer.member("profile", profile.json) }
            if let events = update.events {
                writer.key("events")
                writer.openArray()
                for event in events { event.write(into: &writer) }
                writer.closeArray()
            }
        default:
            for member in members { writer.member(member.key, member.value) }
        }
    }

    /// The fields of an op `write(into:)` does not write itself.
    private var members: [JSONMember] {
        switch self {
        case .event, .profileUpdate: return []
        case .installation(let report): return [JSONMember("installation", report.json)]
        case .pushToken(let registration): return [JSONMember("push", registration.json)]
        case .location(let location): return [JSONMember("location", location.json)]
        case .wipe(let from), .logout(let from): return from.map { [JSONMember("from_custom_id", .string($0))] } ?? []
        case .campaignTrigger(let trigger):
            return [JSONMember("campaign", .string(trigger.campaign)), JSONMember("trigger_properties", .object(trigger.properties))]
        case .journeyTrigger(let trigger):
            return [JSONMember("journey", .string(trigger.journey)), JSONMember("entry_properties", .object(trigger.properties))]
        case .purchase(let purchase): return [JSONMember("purchase", purchase.json)]
        case .pushSend(let push): return [JSONMember("push", push.json)]
        case .session(let session): return [JSONMember("session", session.json)]
        case .pushOpen(let open): return [JSONMember("push_open", open.json)]
        case .inApp(let report): return [JSONMember("in_app", report.json)]
        case .contentCard(let report): return [JSONMember("content_card", report.json)]
        case .geofence(let report): return [JSONMember("geofence", report.json)]
        case .installLink(let link):
            return [JSONMember("target_custom_id", .string(link.targetCustomID)), JSONMember("merge", .bool(link.merge))]
        case .installUnlink(let target): return target.map { [JSONMember("target_custom_id", .string($0))] } ?? []
        case .installMove(let move):
            var members = [JSONMember("installation", move.installation.map(JSONValue.object) ?? .null)]
            if let merge = move.merge { members.append(JSONMember("merge", merge.json)) }
            return members
        case .tokenClaim(let claim):
            var members = [JSONMember("token", .string(claim.token)), JSONMember("owner_key", .string(claim.ownerKey))]
            if let registeredAt = claim.registeredAt { members.append(JSONMember("registered_at", .time(registeredAt))) }
            return members
        case .tokenRelease(let release):
            var members = [JSONMember("token", .string(release.token))]
            if let movedTo = release.movedTo { members.append(JSONMember("moved_to", .string(movedTo))) }
            if let owner = release.erasedOwner { members.append(JSONMember("erased_owner", .string(owner))) }
            return members
        case .aliasClaim(let claim):
            return [JSONMember("target_custom_id", .string(claim.targetCustomID)), JSONMember("merge", .bool(claim.merge))]
        case .aliasUnlink(let target): return [JSONMember("target_custom_id", .string(target))]
        case .aliasMove(let merge): return merge.map { [JSONMember("merge", $0.json)] } ?? []
        case .journeyUpdate(let update):
            return [
                JSONMember("journey", .string(update.journey)), JSONMember("entry_id", .string(update.entryID)),
                JSONMember("node", .string(update.node)), JSONMember("profile", update.profile.json),
            ]
        case .profileDelete(let doNotContact): return doNotContact ? [JSONMember("do_not_contact", .bool(true))] : []
        case .identify, .optOut, .optIn, .alias, .installDetach, .installDrop, .aliasRefused:
            return []
        }
    }

    /// Reads the fields of a record of `op`.
    init(op: IngestOp, fields: WireObject) throws(WireError) {
        switch op {
        case .profileUpdate:
            let events = try fields.optionalArray("events")?.enumerated().map { index, event throws(WireError) in
                try ValidatedEvent(wire: event, path: "events[\(index)]")
            }
            self = .profileUpdate(
                ProfileUpdate(profile: try fields.value("profile").map { value throws(WireError) in try ProfileEdit(wire: value, path: "profile") }, events: events))
        case .event: self = .event(try ValidatedEvent(wire: try Self.required(fields, "event"), path: "event"))
        case .identify: self = .identify
        case .logout: self = .logout(fromCustomID: try fields.optionalString("from_custom_id"))
        case .installation:
            self = .installation(try InstallationReport(wire: try Self.required(fields, "installation"), path: "installation"))
        case .pushToken: self = .pushToken(try PushTokenRegistration(wire: try Self.required(fields, "push"), path: "push"))
        case .location: self = .location(try LocationReport(wire: try Self.required(fields, "location"), path: "location"))
        case .optOut: self = .optOut
        case .optIn: self = .optIn
        case .wipe: self = .wipe(fromCustomID: try fields.optionalString("from_custom_id"))
        case .profileDelete: self = .profileDelete(doNotContact: try fields.optionalBool("do_not_contact") ?? false)
        case .campaignTrigger:
            self = .campaignTrigger(
                CampaignTrigger(
                    campaign: try fields.string("campaign"),
                    properties: try fields.optionalObject("trigger_properties")?.members ?? []))
        case .journeyTrigger:
            self = .journeyTrigger(
                JourneyTrigger(journey: try fields.string("journey"), properties: try fields.optionalObject("entry_properties")?.members ?? []))
        case .purchase: self = .purchase(try Purchase(wire: try Self.required(fields, "purchase"), path: "purchase"))
        case .alias: self = .alias
        case .pushSend: self = .pushSend(try TransactionalPush(wire: try Self.required(fields, "push"), path: "push"))
        case .session: self = .session(try SessionReport(wire: try Self.required(fields, "session"), path: "session"))
        case .pushOpen: self = .pushOpen(try PushOpenReport(wire: try Self.required(fields, "push_open"), path: "push_open"))
        case .inApp: self = .inApp(try InAppReport(wire: try Self.required(fields, "in_app"), path: "in_app"))
        case .contentCard:
            self = .contentCard(try CardReport(wire: try Self.required(fields, "content_card"), path: "content_card"))
        case .geofence: self = .geofence(try GeofenceReport(wire: try Self.required(fields, "geofence"), path: "geofence"))
        case .installLink:
            self = .installLink(InstallLink(targetCustomID: try fields.string("target_custom_id"), merge: try fields.bool("merge")))
        case .installUnlink: self = .installUnlink(targetCustomID: try fields.optionalString("target_custom_id"))
        case .installDetach: self = .installDetach
        case .installMove:
            self = .installMove(
                InstallMove(
                    installation: try fields.optionalObject("installation")?.members,
                    merge: try fields.value("merge").map { value throws(WireError) in try MergedHistory(wire: value, path: "merge") }))
        case .installDrop: self = .installDrop
        case .tokenClaim:
            self = .tokenClaim(
                TokenClaim(
                    token: try fields.string("token"), ownerKey: try fields.string("owner_key"),
                    registeredAt: try fields.optionalTime("registered_at")))
        case .tokenRelease:
            self = .tokenRelease(TokenRelease(
                token: try fields.string("token"), movedTo: try fields.optionalString("moved_to"),
                erasedOwner: try fields.optionalString("erased_owner")))
        case .aliasClaim:
            self = .aliasClaim(AliasClaim(targetCustomID: try fields.string("target_custom_id"), merge: try fields.bool("merge")))
        case .aliasRefused: self = .aliasRefused
        case .aliasUnlink: self = .aliasUnlink(targetCustomID: try fields.string("target_custom_id"))
        case .aliasMove:
            self = .aliasMove(merge: try fields.value("merge").map { value throws(WireError) in try MergedHistory(wire: value, path: "merge") })
        case .journeyUpdate:
            self = .journeyUpdate(
                JourneyUpdate(
                    journey: try fields.string("journey"), entryID: try fields.string("entry_id"), node: try fields.string("node"),
                    profile: try ProfileEdit(wire: try Self.required(fields, "profile"), path: "profile")))
        }
    }

    private static func required(_ fields: WireObject, _ name: String) throws(WireError) -> JSONValue {
        guard let value = fields.value(name) else { throw WireError(reason: "\(name): missing") }
        return value
    }
}
