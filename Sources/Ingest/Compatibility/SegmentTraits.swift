import Foundation
import Shared

/// Segment's identify traits as Herald's profile (docs/ingest.md, "Segment traits"): `email` and `phone` are the
/// native address fields, every other trait a custom attribute under its mapped name (`firstName` → `first_name`); an
/// object trait (`address`, `company`) is flattened one level (`address_city`); `id` repeats the user id and is not
/// stored. The message's `context.locale` (`en-US`) and `context.timezone` fill the language, region and time zone.
enum SegmentTraits {
    static let natives: [String: String] = ["email": "$email_address", "phone": "$phone_number"]
    static let ignored: Set<String> = ["id", "userId", "user_id", "anonymousId"]

    /// `contactFields`: whether the source may set email and phone (`AppsCatalog.Source.contactFields`).
    static func edit(
        traits: JSONValue?, context: JSONValue?, identified: Bool, contactFields: Bool, path: String, values: inout LenientValues
    ) -> ProfileEdit {
        var edit = ProfileEditBuilder()
        let path = path.isEmpty ? "" : "\(path)."
        if let context { locale(context, path: path, into: &edit, values: &values) }
        guard let traits else { return edit.edit }
        guard case .object(let members) = traits else {
            values.drop("\(path)traits", "invalid_type", "traits are an object")
            return edit.edit
        }
        for member in members where !ignored.contains(member.key) {
            let memberPath = "\(path)traits.\(member.key)"
            if let native = natives[member.key] {
                guard contactFields else {
                    values.drop(memberPath, "not_allowed", "this source may not set email or phone (contact_fields: false in the apps file)")
                    continue
                }
                do {
                    let (name, value) = try ProfileValidation.native(native, member.value, identified: identified)
                    edit.setNative(name, value)
                } catch {
                    values.drop(memberPath, error.code, error.message)
                }
                continue
            }
            if case .object(let inner) = member.value {
                for field in inner {
                    let name = values.name("\(member.key) \(field.key)", as: .attribute, path: "\(memberPath).\(field.key)")
                    if let operation = scalarEdit(field.value, path: "\(memberPath).\(field.key)", values: &values) {
                        edit.setAttribute(name, operation)
                    }
                }
                continue
            }
            let name = values.name(member.key, as: .attribute, path: memberPath)
            if let operation = scalarEdit(member.value, path: memberPath, values: &values) { edit.setAttribute(name, operation) }
        }
        return edit.edit
    }

    /// A trait's value: a scalar or an array sets the attribute, `null` removes it; nested objects are not kept.
    static func scalarEdit(_ value: JSONValue, path: String, values: inout LenientValues) -> AttributeEdit? {
        switch value {
        case .null: return .remove
        case .array(let items): return .set(.stringArray(values.stringArray(items, path: path)))
        case .object:
            values.drop(path, "too_deep", "traits nest one level (address.city is kept as address_city)")
            return nil
        default: return values.scalar(value, path: path).map(AttributeEdit.set)
        }
    }

    /// `context.locale` (`en-US`, `fr_FR`, `de`) → language and region; `context.timezone` → time zone. What is not a
    /// known code is left out and reported. `prefix`: the message's path and a dot, or nothing.
    static func locale(_ context: JSONValue, path prefix: String, into edit: inout ProfileEditBuilder, values: inout LenientValues) {
        if case .string(let locale)? = context["locale"] {
            let parts = locale.split(whereSeparator: { $0 == "-" || $0 == "_" }).map(String.init)
            if let language = parts.first, let code = try? Rules.language(language) {
                edit.setNative("language", .string(code))
            } else {
                values.adjust("\(prefix)context.locale", "ignored_field", "\(locale) names no ISO 639-1 language")
            }
            if parts.count >= 2, let region = try? Rules.region(parts[1]) { edit.setNative("region", .string(region)) }
        }
        if case .string(let zone)? = context["timezone"] {
            if let name = try? Rules.timeZone(zone) {
                edit.setNative("timezone", .string(name))
            } else {
                values.adjust("\(prefix)context.timezone", "ignored_field", "\(zone) is not an IANA time zone")
            }
        }
    }
}
