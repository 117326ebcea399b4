import Foundation
import GRDB
import Liquid
import Shared

/// A live profile's template variables, read from the orchestrator's data directory (read-only), for
/// `herald template render --profile`: what a message to that profile would read, without a trigger.
package enum MessagePreview {
    /// The profile's variables (`c`, `b`, Braze's standard attributes) and its time zone; nil when no partition
    /// database of `directory` holds `key`.
    package static func variables(directory: String, key: String, defaultTimeZone: String) throws -> (LiquidObject, TimeZone)? {
        try DataDirectory.first(in: directory) { db in
            let values = ProfileValues(db: db, key: key, defaultTimeZone: defaultTimeZone)
            guard values.exists else { return nil }
            let trigger = TriggerContext(type: .preview, occurrence: "preview", at: Date())
            let context = MessageContext(values: values, context: trigger, campaign: nil, step: "preview")
            return (context.variables(for: [["c"], ["b"], ["${user_id}"]]), values.timeZone)
        }
    }
}
