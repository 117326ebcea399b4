/// The keys and secrets printed in config/apps.sample.json (and so in every clone of Herald and in the README). A
/// service that accepts them accepts anyone's writes: the ingest and the notifier refuse to start with an apps file
/// that uses one, unless `HERALD_ALLOW_SAMPLE_KEYS` says this is a trial on a machine nobody else reaches (`make run`,
/// the tests). `ConfigTests` checks that every key and secret of the sample file is listed here.
package enum PublishedSampleKeys {
    package static let values: Set<String> = [
        "rest_demo_0123456789abcdef",
        "live_demo_ios_0123456789", "DEV_demo_ios_0123456789", "inbox_secret_demo_ios", "identity_secret_demo_ios",
        "live_demo_android_0123456789", "DEV_demo_android_0123456789", "identity_secret_demo_android",
        "segment_demo_0123456789abcdef", "identity_secret_demo_web",
        "segment_backend_demo_0123456789",
        "whsec_ZGVtby13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5YWJjZGVm", "whsec_ZGVtby13ZWJob29rLW5leHQtc2VjcmV0LTAxMjM0NTY3ODk=",
    ]

    /// Where `catalog` uses a published value, as `project/app field` lines, in the file's order.
    package static func uses(in catalog: AppsCatalog) -> [String] {
        var found: [String] = []
        func check(_ value: String?, _ place: String) {
            if let value, values.contains(value) { found.append(place) }
        }
        for project in catalog.projects {
            for key in project.restAPIKeys { check(key, "\(project.id) rest_api_keys") }
            for app in project.apps {
                let place = "\(project.id)/\(app.id)"
                check(app.apiKey, "\(place) api_key")
                check(app.devAPIKey, "\(place) dev_api_key")
                check(app.inboxSecret, "\(place) inbox_secret")
                for secret in app.identitySecrets { check(secret, "\(place) identity_secrets") }
            }
            for source in project.sources {
                let place = "\(project.id)/\(source.id)"
                check(source.writeKey, "\(place) write_key")
                for secret in source.identitySecrets { check(secret, "\(place) identity_secrets") }
            }
            for (endpoint, webhook) in project.webhooks.sorted(by: { $0.key < $1.key }) {
                for secret in webhook.secrets { check(secret, "\(project.id) webhooks \(endpoint) secrets") }
            }
        }
        return found
    }
}
