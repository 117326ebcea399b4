import Foundation
import GRDB
import PartitionStore
import Shared

/// The badge count each installation shows (issue 22, rich push): a template's `badge: 3` sets it, `badge: +1` adds
/// to it. The number is decided once per send and target, when the send is fanned out into the ledger, and kept on
/// the ledger row's target, so that a retry or an attempt repeated after a crash shows the same number, and a count
/// moves once per send. The counts live in the partition's database (captured by its changelog like every table): an
/// installation that moves to a profile of another partition starts again from the next number a template sets.
enum Badges {
    /// The badge `send` gives `target` (nil: the send sets none), without recording it yet.
    static func decide(_ db: Database, send: SendRequest, target: DeliveryTarget) throws -> Int? {
        guard send.channel == .push, let text = send.content["badge"], let badge = PushOptions.badge(text),
            let installation = target.installationID
        else { return nil }
        switch badge {
        case .set(let number): return number
        case .add(let amount):
            let current = try InstallationBadgesTable(db).count(project: send.project, installationID: installation) ?? 0
            return min(current + amount, 99_999)
        }
    }

    /// Records the count a target was given (once its ledger row is in).
    static func record(_ db: Database, project: String, target: DeliveryTarget, now: Date) throws {
        guard let badge = target.badge, let installation = target.installationID else { return }
        try InstallationBadgesTable(db).set(project: project, installationID: installation, count: badge, at: now)
    }
}
