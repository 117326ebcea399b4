/// An app's platform, which picks the push provider (APNs for `ios`, FCM for `android` and `web`) and the token's form.
/// The apps file's `platform`, the configuration's app, the install sync's `platform`, and the notifier's providers by
/// platform all carry this one type.
package enum Platform: String, Codable, Sendable, CaseIterable {
    case ios, android, web

    /// `ios, android or web`: what an error message lists as expected.
    package static let listed = allCases.dropLast().map(\.rawValue).joined(separator: ", ") + " or " + allCases.last!.rawValue
}

/// The APNs host a token belongs to: Apple's development (`sandbox`) or production gateway. A token is valid on one of
/// them only; absent means production.
package enum PushEnvironment: String, Codable, Sendable, CaseIterable {
    case sandbox, production
}
