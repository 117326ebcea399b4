import Foundation
import HeraldTestSupport
import Shared
import Testing
import _CryptoExtras

@testable import Notifier

/// Provider connections and their credentials: https only unless the providers are declared local simulators, and
/// SMTP credentials only over TLS.
@Suite("Notifier settings: transport security")
struct NotifierSettingsTests {
    static let keyFile: String = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-settings-\(UUID().uuidString).p8").path
        _ = FileManager.default.createFile(atPath: path, contents: Data("not read here".utf8))
        return path
    }()

    static let base = [
        "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "HERALD_APPS_FILE": sampleAppsFile, "HERALD_ALLOW_SAMPLE_KEYS": "true",
        "HERALD_PUBLIC_URL": "https://notify.example.com",
        // The sample's webhook endpoint: its calls' deadline below every provider's here (its own test says more).
        "HERALD_WEBHOOK_TIMEOUT_SECONDS": "1",
    ]
    static let apns = [
        "HERALD_APNS_KEY_FILE": keyFile, "HERALD_APNS_KEY_ID": "KEY1234567", "HERALD_APNS_TEAM_ID": "TEAM123456",
    ]
    static let sms = [
        "HERALD_SMS_URL": "http://127.0.0.1:9100/sms", "HERALD_SMS_ACCOUNT": "AC1", "HERALD_SMS_TOKEN": "t",
        "HERALD_SMS_FROM": "+15550000000",
    ]
    static let smtp = [
        "HERALD_SMTP_URL": "smtp://127.0.0.1:2525", "HERALD_EMAIL_FROM": "a@example.com",
        "HERALD_UNSUBSCRIBE_SECRET": "0123456789abcdef", "HERALD_SMTP_USER": "user", "HERALD_SMTP_PASSWORD": "secret",
    ]

    /// A Firebase service-account key file, as Google's console gives it.
    static let fcmAccountFile: String = {
        let key = try! _RSA.Signing.PrivateKey(keySize: .bits2048)
        let json = try! JSONSerialization.data(withJSONObject: [
            "type": "service_account", "project_id": "demo-fcm", "private_key_id": "k1", "private_key": key.pemRepresentation,
            "client_email": "herald@demo-fcm.iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token",
        ])
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("herald-fcm-\(UUID().uuidString).json").path
        _ = FileManager.default.createFile(atPath: path, contents: json)
        return path
    }()
    static let fcm = ["HERALD_FCM_SERVICE_ACCOUNT_FILE": fcmAccountFile]

    func read(_ parts: [String: String]...) -> ConfigError? {
        let values = parts.reduce(Self.base) { $0.merging($1) { $1 } }
        do {
            _ = try NotifierSettings.fromEnvironment(values)
            return nil
        } catch {
            return error
        }
    }

    @Test("the sample apps file's published keys are refused unless HERALD_ALLOW_SAMPLE_KEYS says a trial")
    func publishedSampleKeys() {
        var values = Self.base
        values["HERALD_ALLOW_SAMPLE_KEYS"] = nil
        let error = #expect(throws: ConfigError.self) { _ = try NotifierSettings.fromEnvironment(values) }
        #expect(error?.variable == "HERALD_APPS_FILE")
        #expect(read() == nil)
    }

    @Test(
        "plain http:// to a provider is refused, naming the variable, unless HERALD_ALLOW_PLAIN_HTTP says simulators",
        arguments: [
            (apns.merging(["HERALD_APNS_URL": "http://127.0.0.1:9101"]) { $1 }, "HERALD_APNS_URL"),
            (apns.merging(["HERALD_APNS_SANDBOX_URL": "http://127.0.0.1:9101"]) { $1 }, "HERALD_APNS_SANDBOX_URL"),
            (sms, "HERALD_SMS_URL"),
        ])
    func plainHTTP(variables: [String: String], variable: String) {
        #expect(read(variables)?.variable == variable)
        #expect(read(variables, ["HERALD_ALLOW_PLAIN_HTTP": "true"]) == nil)
        let secure = variables.mapValues { $0.replacingOccurrences(of: "http://", with: "https://") }
        #expect(read(secure) == nil)
    }

    @Test("HERALD_PUBLIC_URL is required with email or SMS: unsubscribe links and reply signatures must not name localhost")
    func publicURLRequired() throws {
        func without(_ parts: [String: String]...) -> ConfigError? {
            let values = parts.reduce(Self.base.merging(["HERALD_ALLOW_PLAIN_HTTP": "true", "HERALD_SMTP_STARTTLS": "required"]) { $1 }) {
                $0.merging($1) { $1 }
            }
            do {
                _ = try NotifierSettings.fromEnvironment(values.filter { $0.key != "HERALD_PUBLIC_URL" })
                return nil
            } catch {
                return error
            }
        }
        #expect(without(Self.smtp)?.variable == "HERALD_PUBLIC_URL")
        #expect(without(Self.sms)?.variable == "HERALD_PUBLIC_URL")
        #expect(without(Self.apns) == nil)
        #expect(read(Self.smtp, ["HERALD_SMTP_STARTTLS": "required"]) == nil)
    }

    @Test("SMTP credentials only over TLS: smtp:// with STARTTLS off or attempted is refused, simulators or not")
    func smtpCredentials() {
        for startTLS in ["off", "attempt"] {
            #expect(read(Self.smtp, ["HERALD_SMTP_STARTTLS": startTLS])?.variable == "HERALD_SMTP_STARTTLS")
            #expect(read(Self.smtp, ["HERALD_SMTP_STARTTLS": startTLS, "HERALD_ALLOW_PLAIN_HTTP": "true"])?.variable == "HERALD_SMTP_STARTTLS")
        }
        #expect(read(Self.smtp, ["HERALD_SMTP_STARTTLS": "required"]) == nil)
        #expect(read(Self.smtp, ["HERALD_SMTP_URL": "smtps://127.0.0.1:4650", "HERALD_SMTP_STARTTLS": "off"]) == nil)
        // Without credentials there is nothing to protect: a local sink without TLS is fine.
        #expect(read(Self.smtp.filter { !$0.key.hasPrefix("HERALD_SMTP_USER") && $0.key != "HERALD_SMTP_PASSWORD" }, ["HERALD_SMTP_STARTTLS": "off"]) == nil)
    }

    @Test("HERALD_EMAIL_FROM: any display name (encoded in the header), an ASCII address (SMTPUTF8 is not used)")
    func emailFrom() {
        for from in ["a@example.com", "Café Müller <news@example.com>", #""Demo, Inc." <news@example.com>"#] {
            #expect(read(Self.smtp, ["HERALD_EMAIL_FROM": from]) == nil, "\(from)")
        }
        for from in ["Demo <café@example.com>", "Demo <news>", "Demo", "news@exämple.com"] {
            #expect(read(Self.smtp, ["HERALD_EMAIL_FROM": from])?.variable == "HERALD_EMAIL_FROM", "\(from)")
        }
    }

    @Test("the drain waits at least the longest attempt of the configured providers: by default a margin more; less is refused naming the variable")
    func drainCoversTheLongestAttempt() throws {
        func settings(_ parts: [String: String]...) throws -> NotifierSettings {
            try NotifierSettings.fromEnvironment(parts.reduce(Self.base.merging(["HERALD_ALLOW_PLAIN_HTTP": "true"]) { $1 }) { $0.merging($1) { $1 } })
        }
        // APNs alone: 10 s; with FCM, a token fetch and a send (20 s); with SMTP, its 30 s transfer.
        #expect(try settings(Self.apns).longestAttempt == .seconds(10))
        #expect(try settings(Self.apns).drainTimeout == .seconds(15))
        // A longer APNs timeout (HERALD_APNS_TIMEOUT_SECONDS, 1–120) is the longest attempt, and the drain follows it.
        let slowAPNs = try settings(Self.apns, ["HERALD_APNS_TIMEOUT_SECONDS": "60"])
        #expect(slowAPNs.longestAttempt == .seconds(60) && slowAPNs.drainTimeout == .seconds(65))
        #expect(read(Self.apns, ["HERALD_APNS_TIMEOUT_SECONDS": "0"])?.variable == "HERALD_APNS_TIMEOUT_SECONDS")
        #expect(read(Self.apns, ["HERALD_APNS_TIMEOUT_SECONDS": "121"])?.variable == "HERALD_APNS_TIMEOUT_SECONDS")
        let smtp = try settings(Self.apns, Self.smtp, ["HERALD_SMTP_STARTTLS": "required"])
        #expect(smtp.longestAttempt == .seconds(30) && smtp.drainTimeout == .seconds(35))
        #expect(try settings(Self.apns, Self.smtp, ["HERALD_SMTP_STARTTLS": "required", "HERALD_DRAIN_TIMEOUT_MS": "30000"]).drainTimeout == .seconds(30))
        // The old default of 15 s with SMTP configured: an SMTP transfer could outlast the drain.
        let refused = read(Self.apns, Self.smtp, ["HERALD_ALLOW_PLAIN_HTTP": "true", "HERALD_SMTP_STARTTLS": "required", "HERALD_DRAIN_TIMEOUT_MS": "15000"])
        #expect(refused?.variable == "HERALD_DRAIN_TIMEOUT_MS")
        #expect(refused?.problem.contains("30000 ms") == true, "\(String(describing: refused))")
        // Webhooks (the sample's endpoint): 15 s a call by default, which the drain then waits.
        let webhooks = try settings(Self.apns, ["HERALD_WEBHOOK_TIMEOUT_SECONDS": "15"])
        #expect(webhooks.webhooksConfigured && webhooks.longestAttempt == .seconds(15) && webhooks.drainTimeout == .seconds(20))
    }

    @Test("each provider's call has its own deadline (FCM, SMTP, SMS), within its range, and the drain follows the longest")
    func providerTimeouts() throws {
        func settings(_ parts: [String: String]...) throws -> NotifierSettings {
            try NotifierSettings.fromEnvironment(parts.reduce(Self.base.merging(["HERALD_ALLOW_PLAIN_HTTP": "true"]) { $1 }) { $0.merging($1) { $1 } })
        }
        let smtpTLS = Self.smtp.merging(["HERALD_SMTP_STARTTLS": "required"]) { $1 }
        // Defaults: FCM 10 s a send (after a token fetch of up to 10 s), SMTP 30 s, SMS 10 s.
        let defaults = try settings(Self.fcm, smtpTLS, Self.sms)
        #expect(defaults.fcm?.timeout == .seconds(10) && defaults.smtp?.timeout == .seconds(30) && defaults.sms?.timeout == .seconds(10))
        #expect(try settings(Self.fcm).longestAttempt == .seconds(20))

        let fcm = try settings(Self.fcm, ["HERALD_FCM_TIMEOUT_SECONDS": "45"])
        #expect(fcm.fcm?.timeout == .seconds(45) && fcm.longestAttempt == .seconds(55) && fcm.drainTimeout == .seconds(60))
        let smtp = try settings(smtpTLS, ["HERALD_SMTP_TIMEOUT_SECONDS": "120"])
        #expect(smtp.smtp?.timeout == .seconds(120) && smtp.longestAttempt == .seconds(120) && smtp.drainTimeout == .seconds(125))
        let sms = try settings(Self.sms, ["HERALD_SMS_TIMEOUT_SECONDS": "3"])
        #expect(sms.sms?.timeout == .seconds(3) && sms.longestAttempt == .seconds(3))
        // A short SMTP deadline no longer holds the drain at 35 s.
        #expect(try settings(Self.apns, smtpTLS, ["HERALD_SMTP_TIMEOUT_SECONDS": "5"]).drainTimeout == .seconds(15))

        for (part, variable, outside) in [
            (Self.fcm, "HERALD_FCM_TIMEOUT_SECONDS", ["0", "121", "ten"]), (smtpTLS, "HERALD_SMTP_TIMEOUT_SECONDS", ["0", "301"]),
            (Self.sms, "HERALD_SMS_TIMEOUT_SECONDS", ["0", "121"]),
        ] {
            for value in outside {
                #expect(read(part, ["HERALD_ALLOW_PLAIN_HTTP": "true", variable: value])?.variable == variable, "\(variable)=\(value)")
            }
        }
    }
}
