import Foundation
import Shared

/// A profile's reachability as the orchestrator last published it on `herald.contacts`.
struct Contact: Sendable, Equatable {
    struct Channel: Sendable, Equatable {
        var address: String?
        var marketing: String?
        var marketingChangedAt: Date?
        var bouncedAt: Date? = nil

        /// The marketing state that holds now: a change made here (`local`, an SMS reply or an unsubscribe link) wins
        /// over an older snapshot; a later change in the snapshot wins over it.
        func marketing(local: (state: String, at: Date)?) -> String? {
            if let local, local.at >= (marketingChangedAt ?? .distantPast) { return local.state }
            return marketing
        }
    }

    struct Installation: Sendable, Equatable {
        var id: String
        var app: String?
        var dev: Bool
        var token: String?
        var environment: PushEnvironment?
        var notificationPermission: String?
        var optedOut: Bool
    }

    var project: String
    var customID: String?
    var email: Channel
    var sms: Channel
    var installations: [Installation]
    /// The snapshot's revision (`ContactSnapshot.revision`).
    var revision: Int = 0

    /// Snapshots as last decoded per profile key (by the applier as they came, by a claim as it read one), so that the
    /// claims of a profile's sends decode its stored snapshot only when it changed.
    static let recent = RecentDecodes<Contact>(capacity: 1024)

    /// Reads a snapshot record's value (`ContactSnapshot`); nil when it is not one.
    static func parse(_ bytes: [UInt8]) -> Contact? {
        (try? Wire.decode(ContactSnapshot.self, from: bytes)).map(Contact.init)
    }

    init(_ snapshot: ContactSnapshot) {
        project = snapshot.project
        customID = snapshot.customID
        email = Channel(
            address: snapshot.email.address, marketing: snapshot.email.marketing,
            marketingChangedAt: snapshot.email.marketingChangedAt, bouncedAt: snapshot.email.bouncedAt)
        sms = Channel(
            address: snapshot.sms.phoneNumber, marketing: snapshot.sms.marketing, marketingChangedAt: snapshot.sms.marketingChangedAt)
        revision = snapshot.revision
        installations = snapshot.installations.map {
            Installation(
                id: $0.installationID, app: $0.app, dev: $0.dev, token: $0.token, environment: $0.environment,
                notificationPermission: $0.notificationPermission, optedOut: $0.optedOut)
        }
    }
}
