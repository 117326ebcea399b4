import Foundation

/// How much one profile may hold (a project's `profile_limits`): distinct custom attribute names, event names, product
/// ids and installations. A write that would go past one is refused for what is new (an attribute, an event, a
/// purchase, an installation joining the profile), with a dead letter naming the limit; what the profile already holds
/// is still updated. Without them, anyone holding a public key could grow a profile's rows (and its contact snapshot,
/// past the broker's 1 MB) by sending new names.
package struct ProfileLimits: Sendable, Equatable {
    package enum Kind: String, CaseIterable, Sendable {
        case attributes
        case eventNames = "event_names"
        case productIDs = "product_ids"
        case installations
    }

    package var attributes = 500
    package var eventNames = 500
    package var productIDs = 1_000
    package var installations = 100

    package init() {}

    package subscript(kind: Kind) -> Int {
        get {
            switch kind {
            case .attributes: attributes
            case .eventNames: eventNames
            case .productIDs: productIDs
            case .installations: installations
            }
        }
        set {
            switch kind {
            case .attributes: attributes = newValue
            case .eventNames: eventNames = newValue
            case .productIDs: productIDs = newValue
            case .installations: installations = newValue
            }
        }
    }

    package static let largest = 100_000
}
