import Foundation

/// A question for the notifier instances (`herald.export.questions`, one partition, read from its end by every
/// notifier): every row their partitions hold of the profiles named, or of the contacts with the address or number.
/// The orchestrator instance an export reaches puts it after it found the profiles in its own service's partitions,
/// and gathers the answers (`ExportAnswer`) before it answers the request (docs/data-rights.md, "Export"). Services
/// still talk only through Kafka.
package struct ExportQuestion: WireMessage {
    package static let kind = "export_question"
    package static let version = 1

    /// Drawn by the asker: the answers carry it.
    package var id: String
    package var project: String
    /// The profiles the orchestrator found (`<project>/<custom_id>`, an installation's or an alias's profile key).
    package var profileKeys: [String]
    /// The address or number the export was asked by: the notifier's contacts hold them too.
    package var email: String?
    package var phone: String?
    /// Push tokens whole rather than masked.
    package var tokens: Bool
    /// The instance that asks, and until when it waits: a question read later is not answered.
    package var askedBy: String
    package var until: Date

    package init(
        id: String, project: String, profileKeys: [String], email: String? = nil, phone: String? = nil, tokens: Bool,
        askedBy: String, until: Date
    ) {
        self.id = id
        self.project = project
        self.profileKeys = profileKeys
        self.email = email
        self.phone = phone
        self.tokens = tokens
        self.askedBy = askedBy
        self.until = until
    }

    enum CodingKeys: String, CodingKey {
        case id, project, email, phone, tokens, until
        case profileKeys = "profile_keys"
        case askedBy = "asked_by"
    }
}
