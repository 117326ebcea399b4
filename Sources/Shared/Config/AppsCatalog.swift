import Foundation

/// Projects, their apps and API keys, read from the file named by `HERALD_APPS_FILE` (see config/apps.sample.json).
package struct AppsCatalog: Sendable, Equatable {
    package struct App: Sendable, Equatable {
        package var id: String
        package var platform: Platform
        package var apiKey: String
        package var devAPIKey: String
        package var inboxSecret: String?
        /// iOS: the bundle id, sent as APNs' `apns-topic` (required to push to the app).
        package var bundleID: String? = nil
        /// Signed identity (Braze's SDK Authentication), the default: app writes that name a `custom_id` must carry
        /// `X-CustomID-Auth` made under one of `identitySecrets` by the customer's server, and writes without one
        /// change only anonymous data (docs/security.md). An app accepts unsigned custom IDs only when its entry says
        /// `"require_signed_identity": false`.
        package var requireSignedIdentity = true
        /// The secrets a custom ID's proof may be made with (two while one is rotated out).
        package var identitySecrets: [String] = []
    }

    /// An event pipeline that sends Segment's Tracking API (Segment's or RudderStack's libraries) with its write key.
    package struct Source: Sendable, Equatable {
        package var id: String
        /// `segment`: the only kind so far.
        package var kind: String
        package var writeKey: String
        /// Whether the source may set a profile's email and phone (`contact_fields`, false by default). A website's
        /// write key is public: anyone holding it could otherwise change where a user's login codes and emails go. A
        /// source whose key stays on the customer's servers may say true.
        package var contactFields = false
        /// As for an app: a message naming a `userId` carries its proof (`integrations.Herald.custom_id_auth`) made
        /// under one of `identitySecrets`, unless the source says `"require_signed_identity": false`.
        package var requireSignedIdentity = true
        package var identitySecrets: [String] = []
    }

    /// A webhook endpoint's secrets (`kind: webhook_endpoint` in the configuration names the endpoint; its secrets stay
    /// here, read by the notifier): Standard Webhooks' `whsec_<base64>`, each call signed with every one listed (two
    /// while one is rotated out). `privateNetwork`: the endpoint may be at a private, loopback or link-local address
    /// (the address guard lets it through by name; docs/webhooks.md, "Addresses").
    package struct Webhook: Sendable, Equatable {
        package var endpoint: String
        /// As written (`whsec_…`).
        package var secrets: [String]
        package var privateNetwork = false

        /// Each secret's key bytes (the base64 after `whsec_`).
        package var keys: [[UInt8]] { secrets.compactMap(Self.key) }

        /// The key of a `whsec_` secret; nil when it is not one.
        package static func key(_ secret: String) -> [UInt8]? {
            guard secret.hasPrefix("whsec_"), let data = Data(base64Encoded: String(secret.dropFirst(6))) else { return nil }
            return [UInt8](data)
        }

        /// Standard Webhooks' secrets hold 24 to 64 bytes.
        package static let keyBytes = 24...64
    }

    /// Which vendor's rules a project's REST key may also write with (docs/ingest.md, "Compatibility").
    package enum Compatibility: String, Sendable, Equatable {
        /// Herald's own API only (Batch's rules).
        case batch
        /// Also Braze's `/users/track`, `/users/identify`, `/users/alias/new` and `/users/delete`, with Braze's rules.
        case braze
    }

    package struct Project: Sendable, Equatable {
        package var id: String
        package var restAPIKeys: [String]
        package var apps: [App]
        package var compatibility: Compatibility = .batch
        /// US dollars per unit of a currency (ISO 4217), for the revenue of purchases; USD is 1.
        package var usdRates: [String: Double] = [:]
        package var sources: [Source] = []
        /// The number this project's SMS are sent from (E.164), when not the notifier's `HERALD_SMS_FROM`. A reply
        /// (STOP, START) changes the subscription of the projects that send from the number it was sent to.
        package var smsFrom: String?
        /// The secrets of the project's webhook endpoints, by endpoint id.
        package var webhooks: [String: Webhook] = [:]
    }

    /// Who a key belongs to.
    package enum Credential: Sendable, Equatable {
        /// A project's server-side REST key.
        case rest(project: String)
        /// An app's key; `dev` for keys starting with `DEV`.
        case app(project: String, app: String, dev: Bool)
        /// A Segment source's write key.
        case source(project: String, source: String)
    }

    package var projects: [Project]
    private var keys: [String: Credential]

    package func credential(for key: String) -> Credential? { keys[key] }

    /// An app of a project.
    package func app(project: String, id: String) -> App? {
        projects.first { $0.id == project }?.apps.first { $0.id == id }
    }

    package func project(_ id: String) -> Project? { projects.first { $0.id == id } }

    /// Reads and checks a catalog file; every error names the file and the field.
    package static func load(path: String) throws(ConfigError) -> AppsCatalog {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigError("HERALD_APPS_FILE", "cannot read \(path)")
        }
        do {
            return try parse(Array(data))
        } catch {
            throw ConfigError("HERALD_APPS_FILE", "\(path): \(error)")
        }
    }

    package struct FormatError: Error, CustomStringConvertible {
        package var path: String
        package var message: String
        package var description: String { path.isEmpty ? message : "\(path): \(message)" }
    }

    package static func parse(_ bytes: [UInt8]) throws(FormatError) -> AppsCatalog {
        let root: JSONValue
        do {
            root = try JSONParser.parse(bytes)
        } catch {
            throw FormatError(path: "", message: "not JSON: \(error)")
        }
        var catalog = AppsCatalog(projects: [], keys: [:])
        guard case .array(let projects)? = root["projects"] else {
            throw FormatError(path: "projects", message: "expected an array of projects")
        }
        for (p, project) in projects.enumerated() {
            let path = "projects[\(p)]"
            let id = try identifier(project["id"], path: "\(path).id")
            guard !catalog.projects.contains(where: { $0.id == id }) else {
                throw FormatError(path: "\(path).id", message: "project \"\(id)\" is defined twice")
            }
            let restKeys = try strings(project["rest_api_keys"], path: "\(path).rest_api_keys")
            for (k, key) in restKeys.enumerated() {
                try catalog.register(key, .rest(project: id), path: "\(path).rest_api_keys[\(k)]", dev: false)
            }
            guard case .array(let apps)? = project["apps"] else {
                throw FormatError(path: "\(path).apps", message: "expected an array of apps")
            }
            var parsedApps: [App] = []
            for (a, app) in apps.enumerated() {
                let appPath = "\(path).apps[\(a)]"
                let appID = try identifier(app["id"], path: "\(appPath).id")
                guard !parsedApps.contains(where: { $0.id == appID }) else {
                    throw FormatError(path: "\(appPath).id", message: "app \"\(appID)\" is defined twice")
                }
                guard let platform = Platform(rawValue: try string(app["platform"], path: "\(appPath).platform")) else {
                    throw FormatError(path: "\(appPath).platform", message: "expected \(Platform.listed)")
                }
                let live = try string(app["api_key"], path: "\(appPath).api_key")
                let dev = try string(app["dev_api_key"], path: "\(appPath).dev_api_key")
                try catalog.register(live, .app(project: id, app: appID, dev: false), path: "\(appPath).api_key", dev: false)
                try catalog.register(dev, .app(project: id, app: appID, dev: true), path: "\(appPath).dev_api_key", dev: true)
                let secret = try app["inbox_secret"].map { value throws(FormatError) in
                    // It makes every user's inbox proof: as long as the identity secrets, which make the others.
                    let secret = try string(value, path: "\(appPath).inbox_secret")
                    guard secret.utf8.count >= 16 else {
                        throw FormatError(path: "\(appPath).inbox_secret", message: "secrets are at least 16 characters")
                    }
                    return secret
                }
                let bundleID = try app["bundle_id"].map { value throws(FormatError) in
                    try string(value, path: "\(appPath).bundle_id")
                }
                if bundleID != nil && platform != .ios {
                    throw FormatError(path: "\(appPath).bundle_id", message: "only iOS apps have a bundle id")
                }
                var parsed = App(
                    id: appID, platform: platform, apiKey: live, devAPIKey: dev, inboxSecret: secret, bundleID: bundleID)
                (parsed.requireSignedIdentity, parsed.identitySecrets) = try parseSignedIdentity(app, path: appPath)
                parsedApps.append(parsed)
            }
            var parsed = Project(id: id, restAPIKeys: restKeys, apps: parsedApps)
            try parseCompatibility(project, path: path, into: &parsed)
            if let value = project["sms_from"] {
                let number = try string(value, path: "\(path).sms_from")
                do {
                    parsed.smsFrom = try Rules.phone(number)
                } catch {
                    throw FormatError(path: "\(path).sms_from", message: error.message)
                }
            }
            try catalog.parseSources(project, path: path, into: &parsed)
            try parseWebhooks(project, path: path, into: &parsed)
            catalog.projects.append(parsed)
        }
        return catalog
    }

    /// `compatibility` (`batch`, the default, or `braze`) and `usd_rates` (`{"EUR": 1.08}`: ISO 4217 codes, positive
    /// dollars per unit).
    private static func parseCompatibility(_ project: JSONValue, path: String, into parsed: inout Project) throws(FormatError) {
        if let value = project["compatibility"] {
            guard case .string(let text) = value, let mode = Compatibility(rawValue: text) else {
                throw FormatError(path: "\(path).compatibility", message: "expected \"batch\" or \"braze\"")
            }
            parsed.compatibility = mode
        }
        guard let rates = project["usd_rates"] else { return }
        guard case .object(let members) = rates else {
            throw FormatError(path: "\(path).usd_rates", message: "expected an object of currency codes and rates")
        }
        for member in members {
            guard iso4217.contains(member.key) else {
                throw FormatError(path: "\(path).usd_rates.\(member.key)", message: "not an ISO 4217 currency code")
            }
            guard case .number(let literal) = member.value, let rate = Double(literal), rate.isFinite, rate > 0 else {
                throw FormatError(path: "\(path).usd_rates.\(member.key)", message: "expected a positive number of US dollars")
            }
            parsed.usdRates[member.key] = rate
        }
    }

    /// `sources`: `[{"id", "kind": "segment", "write_key", "contact_fields"?, "require_signed_identity"?,
    /// "identity_secrets"?}]`. A source's id names it where an app's
    /// would (the anonymous ids it sends are installation-like), so it may not be an app's id.
    private mutating func parseSources(_ project: JSONValue, path: String, into parsed: inout Project) throws(FormatError) {
        guard let value = project["sources"] else { return }
        guard case .array(let sources) = value else { throw FormatError(path: "\(path).sources", message: "expected an array") }
        for (index, source) in sources.enumerated() {
            let sourcePath = "\(path).sources[\(index)]"
            let id = try Self.identifier(source["id"], path: "\(sourcePath).id")
            guard !parsed.apps.contains(where: { $0.id == id }), !parsed.sources.contains(where: { $0.id == id }) else {
                throw FormatError(path: "\(sourcePath).id", message: "\"\(id)\" already names an app or a source of this project")
            }
            let kind = try Self.string(source["kind"], path: "\(sourcePath).kind")
            guard kind == "segment" else { throw FormatError(path: "\(sourcePath).kind", message: "expected \"segment\"") }
            let key = try Self.string(source["write_key"], path: "\(sourcePath).write_key")
            try register(key, .source(project: parsed.id, source: id), path: "\(sourcePath).write_key", dev: false)
            var parsedSource = Source(id: id, kind: kind, writeKey: key)
            (parsedSource.requireSignedIdentity, parsedSource.identitySecrets) = try Self.parseSignedIdentity(source, path: sourcePath)
            switch source["contact_fields"] {
            case nil: break
            case .bool(let flag)?: parsedSource.contactFields = flag
            default: throw FormatError(path: "\(sourcePath).contact_fields", message: "expected true or false")
            }
            parsed.sources.append(parsedSource)
        }
    }

    /// `webhooks`: `[{"endpoint", "secrets": ["whsec_…"], "private_network"?}]`.
    private static func parseWebhooks(_ project: JSONValue, path: String, into parsed: inout Project) throws(FormatError) {
        guard let value = project["webhooks"] else { return }
        guard case .array(let entries) = value else { throw FormatError(path: "\(path).webhooks", message: "expected an array") }
        for (index, entry) in entries.enumerated() {
            let entryPath = "\(path).webhooks[\(index)]"
            let endpoint = try string(entry["endpoint"], path: "\(entryPath).endpoint")
            guard parsed.webhooks[endpoint] == nil else {
                throw FormatError(path: "\(entryPath).endpoint", message: "endpoint \"\(endpoint)\" is listed twice")
            }
            let secrets = try strings(entry["secrets"], path: "\(entryPath).secrets")
            guard (1...3).contains(secrets.count) else {
                throw FormatError(path: "\(entryPath).secrets", message: "one to three secrets (two while one is rotated out)")
            }
            for (s, secret) in secrets.enumerated() {
                guard let key = Webhook.key(secret), Webhook.keyBytes.contains(key.count) else {
                    throw FormatError(
                        path: "\(entryPath).secrets[\(s)]",
                        message: "expected whsec_ and the base64 of 24 to 64 random bytes (e.g. whsec_$(openssl rand -base64 32))")
                }
            }
            var webhook = Webhook(endpoint: endpoint, secrets: secrets)
            switch entry["private_network"] {
            case nil: break
            case .bool(let flag)?: webhook.privateNetwork = flag
            default: throw FormatError(path: "\(entryPath).private_network", message: "expected true or false")
            }
            parsed.webhooks[endpoint] = webhook
        }
    }

    /// `require_signed_identity` (a boolean, true when absent) and `identity_secrets` (secrets of at least 16
    /// characters). Signed identity is the default: an entry without secrets must say `"require_signed_identity":
    /// false`, so that nobody ships an app key that writes any user's profile without having decided to.
    private static func parseSignedIdentity(_ entry: JSONValue, path: String) throws(FormatError) -> (required: Bool, secrets: [String]) {
        var required = true
        switch entry["require_signed_identity"] {
        case nil: break
        case .bool(let flag)?: required = flag
        default: throw FormatError(path: "\(path).require_signed_identity", message: "expected true or false")
        }
        var secrets: [String] = []
        if entry["identity_secrets"] != nil {
            secrets = try strings(entry["identity_secrets"], path: "\(path).identity_secrets")
            for (index, secret) in secrets.enumerated() where secret.utf8.count < 16 {
                throw FormatError(path: "\(path).identity_secrets[\(index)]", message: "secrets are at least 16 characters")
            }
        }
        if required && secrets.isEmpty {
            throw FormatError(
                path: "\(path).identity_secrets",
                message: entry["require_signed_identity"] == nil
                    ? "signed identity is the default: list the secrets your server signs custom IDs with (X-CustomID-Auth), or say \"require_signed_identity\": false to let anyone holding this key write any custom ID"
                    : "require_signed_identity needs at least one secret to check proofs with")
        }
        return (required, secrets)
    }

    private mutating func register(_ key: String, _ credential: Credential, path: String, dev: Bool) throws(FormatError) {
        guard key.utf8.count >= 16, key.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw FormatError(path: path, message: "keys are at least 16 visible ASCII characters")
        }
        guard key.hasPrefix("DEV") == dev else {
            throw FormatError(path: path, message: dev ? "dev keys start with DEV" : "only dev keys start with DEV")
        }
        guard keys[key] == nil else { throw FormatError(path: path, message: "this key is already used elsewhere") }
        keys[key] = credential
    }

    /// Project and app ids: lowercase letters, digits, '-' and '_', 1…64, starting with a letter or digit (no '/',
    /// which separates a profile key's parts).
    private static func identifier(_ value: JSONValue?, path: String) throws(FormatError) -> String {
        let text = try string(value, path: path)
        let allowed = Set("abcdefghijklmnopqrstuvwxyz0123456789-_")
        guard (1...64).contains(text.count), text.allSatisfy(allowed.contains), text.first != "-", text.first != "_"
        else {
            throw FormatError(path: path, message: "ids are 1 to 64 lowercase letters, digits, '-' or '_'")
        }
        return text
    }

    private static func string(_ value: JSONValue?, path: String) throws(FormatError) -> String {
        guard case .string(let text)? = value, !text.isEmpty else {
            throw FormatError(path: path, message: "expected a non-empty string")
        }
        return text
    }

    private static func strings(_ value: JSONValue?, path: String) throws(FormatError) -> [String] {
        guard case .array(let items)? = value else { throw FormatError(path: path, message: "expected an array") }
        var result: [String] = []
        for (index, item) in items.enumerated() { result.append(try string(item, path: "\(path)[\(index)]")) }
        return result
    }
}

extension AppsCatalog {
    /// `HERALD_APPS_FILE`, read and checked, and refused when it uses a published sample key without
    /// `HERALD_ALLOW_SAMPLE_KEYS=true`.
    package static func read(_ env: inout EnvironmentReader, hint: String) throws(ConfigError) -> AppsCatalog {
        let path = try env.required("HERALD_APPS_FILE", hint: hint)
        let allowSamples = try env.bool("HERALD_ALLOW_SAMPLE_KEYS", default: false)
        let catalog = try load(path: path)
        let uses = PublishedSampleKeys.uses(in: catalog)
        guard allowSamples || uses.isEmpty else {
            let listed = uses.prefix(3).joined(separator: ", ") + (uses.count > 3 ? " and \(uses.count - 3) more" : "")
            throw ConfigError(
                "HERALD_APPS_FILE",
                "\(path) uses keys published in config/apps.sample.json (\(listed)): anyone can write to your "
                    + "profiles with them; make your own, or set HERALD_ALLOW_SAMPLE_KEYS=true to try Herald where "
                    + "nobody else can reach it")
        }
        return catalog
    }
}
