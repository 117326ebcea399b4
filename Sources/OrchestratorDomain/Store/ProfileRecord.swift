import Foundation
import GRDB
import PartitionStore
import Shared

/// A `profiles` row, its columns as Swift types.
struct ProfileRecord: FetchableRecord {
    var key: String
    var project: String
    var customID: String?
    var email: String?
    /// `subscribed` or `unsubscribed` (the wire's marketing state).
    var emailMarketing: String?
    var emailMarketingChangedAt: Date?
    var emailBouncedAt: Date?
    var phoneNumber: String?
    var smsMarketing: String?
    var smsMarketingChangedAt: Date?
    var language: String?
    var region: String?
    var timezone: String?
    var createdAt: Date
    var updatedAt: Date
    /// The revision of the profile's last contact snapshot.
    var contactRevision: Int

    init(row: Row) throws {
        key = row["profile_key"]
        project = row["project"]
        customID = row["custom_id"]
        email = row["email"]
        emailMarketing = row["email_marketing"]
        emailMarketingChangedAt = try row.time("email_marketing_changed_at")
        emailBouncedAt = try row.time("email_bounced_at")
        phoneNumber = row["phone_number"]
        smsMarketing = row["sms_marketing"]
        smsMarketingChangedAt = try row.time("sms_marketing_changed_at")
        language = row["language"]
        region = row["region"]
        timezone = row["timezone"]
        createdAt = try row.requiredTime("created_at")
        updatedAt = try row.requiredTime("updated_at")
        contactRevision = row["contact_revision"]
    }

    /// A native field's value.
    subscript(native: ProfileNative) -> String? {
        switch native {
        case .email: email
        case .emailMarketing: emailMarketing
        case .phoneNumber: phoneNumber
        case .smsMarketing: smsMarketing
        case .language: language
        case .region: region
        case .timezone: timezone
        }
    }
}
