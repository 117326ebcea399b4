import Foundation

/// A profile's reachability as the orchestrator last knew it (`herald.contacts`, compacted, keyed by profile key):
/// email and SMS with their marketing states, and every installation with its token, environment, permission and
/// opt-out. A profile that is gone gives a tombstone (a null value). The orchestrator writes it, the notifier reads it,
/// both through this type.
package struct ContactSnapshot: WireMessage {
    package static let kind = "contact"
    package static let version = 1

    package struct Email: Codable, Sendable, Equatable {
        package var address: String?
        package var marketing: String?
        package var marketingChangedAt: Date?
        /// A hard bounce of this address (it is unreachable until it changes).
        package var bouncedAt: Date?

        package init(address: String? = nil, marketing: String? = nil, marketingChangedAt: Date? = nil, bouncedAt: Date? = nil) {
            self.address = address
            self.marketing = marketing
            self.marketingChangedAt = marketingChangedAt
            self.bouncedAt = bouncedAt
        }

        enum CodingKeys: String, CodingKey {
            case address, marketing
            case marketingChangedAt = "marketing_changed_at", bouncedAt = "bounced_at"
        }
    }

    package struct SMS: Codable, Sendable, Equatable {
        package var phoneNumber: String?
        package var marketing: String?
        package var marketingChangedAt: Date?

        package init(phoneNumber: String? = nil, marketing: String? = nil, marketingChangedAt: Date? = nil) {
            self.phoneNumber = phoneNumber
            self.marketing = marketing
            self.marketingChangedAt = marketingChangedAt
        }

        enum CodingKeys: String, CodingKey {
            case marketing
            case phoneNumber = "phone_number", marketingChangedAt = "marketing_changed_at"
        }
    }

    package struct Installation: Codable, Sendable, Equatable {
        package var installationID: String
        package var app: String?
        /// Installed from a development build (the SDK's dev API key).
        package var dev: Bool
        package var token: String?
        /// `production` or `sandbox` (APNs).
        package var environment: PushEnvironment?
        package var notificationPermission: String?
        package var optedOut: Bool
        /// A token, notifications displayed, not opted out (`b.is_push_optin`).
        package var pushReachable: Bool

        package init(
            installationID: String, app: String?, dev: Bool = false, token: String?, environment: PushEnvironment?,
            notificationPermission: String?, optedOut: Bool = false, pushReachable: Bool
        ) {
            self.installationID = installationID
            self.app = app
            self.dev = dev
            self.token = token
            self.environment = environment
            self.notificationPermission = notificationPermission
            self.optedOut = optedOut
            self.pushReachable = pushReachable
        }

        enum CodingKeys: String, CodingKey {
            case app, dev, token, environment
            case installationID = "installation_id", notificationPermission = "notification_permission"
            case optedOut = "opted_out", pushReachable = "push_reachable"
        }

        /// Flags written as null or left out read as false.
        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            installationID = try container.decode(String.self, forKey: .installationID)
            app = try container.decodeIfPresent(String.self, forKey: .app)
            dev = try container.decodeIfPresent(Bool.self, forKey: .dev) ?? false
            token = try container.decodeIfPresent(String.self, forKey: .token)
            environment = try container.decodeIfPresent(PushEnvironment.self, forKey: .environment)
            notificationPermission = try container.decodeIfPresent(String.self, forKey: .notificationPermission)
            optedOut = try container.decodeIfPresent(Bool.self, forKey: .optedOut) ?? false
            pushReachable = try container.decodeIfPresent(Bool.self, forKey: .pushReachable) ?? false
        }
    }

    package var project: String
    package var customID: String?
    package var email: Email
    package var sms: SMS
    package var installations: [Installation]
    package var updatedAt: Date?
    /// Counts the profile's snapshots, one more each time one is published (0: from before revisions). A send request
    /// names the revision it was decided on (`SendRequest.contactRevision`).
    package var revision: Int

    package init(
        project: String, customID: String?, email: Email = Email(), sms: SMS = SMS(), installations: [Installation] = [],
        updatedAt: Date? = nil, revision: Int = 0
    ) {
        self.project = project
        self.customID = customID
        self.email = email
        self.sms = sms
        self.installations = installations
        self.updatedAt = updatedAt
        self.revision = revision
    }

    enum CodingKeys: String, CodingKey {
        case project, email, sms, installations, revision
        case customID = "custom_id", updatedAt = "updated_at"
    }

    /// A channel written as null or left out reads as one without an address.
    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        project = try container.decode(String.self, forKey: .project)
        customID = try container.decodeIfPresent(String.self, forKey: .customID)
        email = try container.decodeIfPresent(Email.self, forKey: .email) ?? Email()
        sms = try container.decodeIfPresent(SMS.self, forKey: .sms) ?? SMS()
        installations = try container.decodeIfPresent([Installation].self, forKey: .installations) ?? []
        updatedAt = try container.decodeIfPresent(Date.self, forKey: .updatedAt)
        revision = try container.decodeIfPresent(Int.self, forKey: .revision) ?? 0
    }
}
