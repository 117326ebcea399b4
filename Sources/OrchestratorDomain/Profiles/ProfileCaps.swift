import Foundation
import GRDB
import Metrics
import PartitionStore
import Shared

/// A project's `profile_limits` where a write adds to a profile: a new attribute name, event name, product id or
/// installation past its limit is refused (what the profile already holds is still updated), counted in
/// `herald_profile_limit_refusals_total{limit}`, and named in a dead letter of the write (`refusal`). The limits are
/// checked per write, so two writes of one batch each within the limit may together pass it by a little: they bound
/// growth, they are not an exact quota.
struct ProfileCaps {
    let db: Database
    let limits: ProfileLimits

    /// The edit without the new attribute names past the limit, and those names.
    func admit(_ edit: ProfileEdit, key: String) throws -> (edit: ProfileEdit, refused: [String]) {
        let adding = edit.attributes.filter { if case .remove = $0.edit { false } else { true } }
        guard !adding.isEmpty else { return (edit, []) }
        let table = ProfileAttributesTable(db)
        let held = try table.count(key)
        guard held + adding.count > limits.attributes else { return (edit, []) }
        var room = limits.attributes - held
        var admitted = edit
        var refused: [String] = []
        admitted.attributes = try edit.attributes.filter { name, change in
            if case .remove = change { return true }
            if try table.has(key, name: name) { return true }
            guard room > 0 else {
                refused.append(name)
                return false
            }
            room -= 1
            return true
        }
        Self.count(.attributes, refused.count)
        return (admitted, refused)
    }

    func admitsEvent(_ name: String, key: String) throws -> Bool {
        let table = EventAggregatesTable(db)
        return try admits(.eventNames, try table.has(key, name: name) || table.count(key) < limits.eventNames)
    }

    func admitsProduct(_ product: String, key: String) throws -> Bool {
        let table = PurchaseAggregatesTable(db)
        return try admits(.productIDs, try table.has(key, product: product) || table.count(key) < limits.productIDs)
    }

    /// Whether the installation may join the profile (it holds it already, or has room).
    func admitsInstallation(_ installationID: String, key: String) throws -> Bool {
        let table = InstallationsTable(db)
        return try admits(.installations, try table.holds(key, installationID) || table.count(key) < limits.installations)
    }

    private func admits(_ kind: ProfileLimits.Kind, _ admitted: Bool) -> Bool {
        if !admitted { Self.count(kind, 1) }
        return admitted
    }

    private static func count(_ kind: ProfileLimits.Kind, _ refused: Int) {
        guard refused > 0 else { return }
        Counter(label: "herald_profile_limit_refusals_total", dimensions: [("limit", kind.rawValue)]).increment(by: refused)
    }

    /// The dead letter of a write whose additions were refused, naming the limit and what was refused.
    func refusal(_ write: Write, _ kind: ProfileLimits.Kind, _ refused: [String]) -> PendingOutput {
        let shown = refused.prefix(10).joined(separator: ", ") + (refused.count > 10 ? " and \(refused.count - 10) more" : "")
        return OrchestratorApplier.deadLetter(
            write.record,
            reason: "profile_limit: the profile holds its \(limits[kind]) \(kind.rawValue) (the project's profile_limits.\(kind.rawValue)); refused: \(shown)")
    }
}
