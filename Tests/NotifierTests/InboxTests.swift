import CurlClient
import Foundation
import HTTPTypes
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import NIOCore
import ProviderSimulators
import ServiceSupport
import Shared
import Testing

@testable import Notifier

/// The inbox: pushes delivered through the harness (workers and the APNs/FCM simulators) land in it; the API is
/// called through Hummingbird's router.
@Suite("Notifier: inbox", .serialized, .timeLimit(.minutes(5)))
struct InboxTests {
    static let liveKey = "live_demo_ios_0123456789"
    static let secret = "inbox_secret_demo_ios"

    @Test("the documented X-CustomID-Auth vector: api key abcdef, user paul, secret foobar")
    func hmacVector() {
        #expect(
            CustomIDProof.make(apiKey: "abcdef", customID: "paul", secret: "foobar")
                == "796f1ab5d119d1b2eab8201e60335b56d1befff40c0f80263d64a169a8fd2e45")
        #expect(CustomIDProof.verify(
            "796f1ab5d119d1b2eab8201e60335b56d1befff40c0f80263d64a169a8fd2e45", apiKey: "abcdef", customID: "paul", secrets: ["foobar"]))
        #expect(!CustomIDProof.verify(
            "796f1ab5d119d1b2eab8201e60335b56d1befff40c0f80263d64a169a8fd2e4", apiKey: "abcdef", customID: "paul", secrets: ["foobar"]))
        #expect(!CustomIDProof.verify(
            "796f1ab5d119d1b2eab8201e60335b56d1befff40c0f80263d64a169a8fd2e45", apiKey: "abcdef", customID: "paula", secrets: ["foobar"]))
    }

    @Test("cursors round-trip and refuse what this API did not make")
    func cursors() {
        let cursor = Inbox.Cursor(sentAt: 1_700_000_000_123_456, notificationID: "send:1")
        #expect(Inbox.Cursor(token: cursor.token) == cursor)
        for bad in ["", "!!", Base64URL.encode(Array("12".utf8)), Base64URL.encode(Array("x:1".utf8)), Base64URL.encode(Array("1:".utf8))] {
            #expect(Inbox.Cursor(token: bad) == nil, "\(bad)")
        }
    }

    struct Answer: Sendable {
        var status: HTTPResponse.Status
        var json: JSONValue
        var ids: [String] {
            guard case .array(let items)? = json["notifications"] else { return [] }
            return items.compactMap { $0["notificationId"]?.stringValue }
        }
        var cursor: String? { json["cursor"]?.stringValue }
        var hasMore: Bool { if case .bool(let flag)? = json["hasMore"] { flag } else { false } }
        var code: String? { json["error"]?["code"]?.stringValue }
        func item(_ id: String) -> JSONValue? {
            guard case .array(let items)? = json["notifications"] else { return nil }
            return items.first { $0["notificationId"]?.stringValue == id }
        }
    }

    /// Calls the inbox API once. An installation of paul's (every installation of these tests but where a test says
    /// otherwise) is his: its inbox is read with his proof, as his app does.
    static func call(
        _ harness: NotifierHarness, _ uri: String, method: HTTPRequest.Method = .get, key: String? = liveKey,
        customAuth: String? = paulAuth()
    ) async throws -> Answer {
        let router = Router(context: ServiceRequestContext.self)
        InboxEndpoints(
            reads: InboxReads(partitions: harness.partitions, peers: harness.peers, partitionCount: 1), catalog: NotifierHarness.catalog,
            logger: harness.logger
        ).register(on: router)
        var fields: HTTPFields = [:]
        if let key { fields[HTTPField.Name("X-Api-Key")!] = key }
        if let customAuth { fields[HTTPField.Name("X-CustomID-Auth")!] = customAuth }
        let headers = fields
        return try await Application(router: router).test(.router) { client in
            try await client.execute(uri: uri, method: method, headers: headers) { response in
                let bytes = Array(response.body.readableBytesView)
                return Answer(status: response.status, json: bytes.isEmpty ? .null : try JSONParser.parse(bytes))
            }
        }
    }

    static func paulAuth(_ user: String = "paul") -> String { CustomIDProof.make(apiKey: liveKey, customID: user, secret: secret) }

    /// Delivers pushes with these ids to paul's installations and waits for their reports.
    static func deliver(
        _ harness: NotifierHarness, _ ids: [String], content: [String: String] = ["title": "Hello", "body": "World"], targets: Int = 1,
        variant: String? = nil
    ) async throws {
        for id in ids {
            var request = sendRequest(id: id, app: nil, content: content)
            if let variant { (request.experiment, request.variant) = ("v1", variant) }
            try await harness.send(request)
        }
        // Done when each send's ledger rows are final (the inbox is written with them).
        try await waitUntil("the deliveries of \(ids)") {
            for id in ids {
                let rows = (try? await harness.partitions.ledger(sendID: id)) ?? []
                guard rows.count >= targets, rows.allSatisfy({ ["sent", "failed", "suppressed"].contains($0.state) }) else { return false }
            }
            return true
        }
    }

    static func paul(_ installations: [String] = [installationJSON("i-ios")]) -> String { contactJSON(installations: installations) }

    @Test("keys: missing or unknown 401, REST or dev key 403; custom ID: missing, wrong or another user's proof 401")
    func authentication() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul())
        try await harness.startWorkers([.push])
        try await Self.deliver(harness, ["n1"])
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios", key: nil).status == .unauthorized)
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios", key: "nope").status == .unauthorized)
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios", key: "rest_demo_0123456789abcdef").code == "wrong_key_kind")
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios", key: "DEV_demo_ios_0123456789").code == "dev_api_key")
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios").ids == ["n1"])
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: nil).code == "missing_custom_id_auth")
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: "00").status == .unauthorized)
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: Self.paulAuth("anna")).code == "invalid_custom_id_auth")
        let other = CustomIDProof.make(apiKey: "live_demo_android_0123456789", customID: "paul", secret: Self.secret)
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: other).status == .unauthorized)
        let mine = try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: Self.paulAuth())
        #expect(mine.status == .ok && mine.ids == ["n1"])
        #expect(mine.item("n1")?["customId"]?.stringValue == "paul" && mine.item("n1")?["installId"]?.stringValue == "i-ios")
        // The Android app has no inbox secret: its inbox is off.
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios", key: "live_demo_android_0123456789").code == "inbox_not_enabled")
        await harness.shutdown()
    }

    @Test("an installation that belongs to a user: its inbox needs that user's proof; an anonymous installation's, the key alone")
    func linkedInstallation() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul())
        let anonymous = ContactSnapshot(
            project: "demo", customID: nil, email: .init(address: nil, marketing: nil, marketingChangedAt: nil),
            sms: .init(phoneNumber: nil, marketing: nil, marketingChangedAt: nil),
            installations: [try JSONDecoder().decode(ContactSnapshot.Installation.self, from: Data(installationJSON("i-anon").utf8))],
            updatedAt: Date(), revision: 0)
        try await harness.contact(String(decoding: try Wire.encode(anonymous), as: UTF8.self), key: "demo/install/i-anon")
        try await harness.startWorkers([.push])
        try await Self.deliver(harness, ["n1"])
        // The probe: an installation id alone once opened paul's notifications.
        let alone = try await Self.call(harness, "/v1/inbox/install/i-ios", customAuth: nil)
        #expect(alone.status == .unauthorized && alone.code == "missing_custom_id_auth" && alone.ids.isEmpty)
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios", customAuth: Self.paulAuth("anna")).code == "invalid_custom_id_auth")
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios/notifications/n1/read", method: .post, customAuth: nil).status == .unauthorized)
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios").ids == ["n1"])
        // Nobody's installation: the app key alone (an unknown one too: nothing in it).
        #expect(try await Self.call(harness, "/v1/inbox/install/i-anon", customAuth: nil).status == .ok)
        #expect(try await Self.call(harness, "/v1/inbox/install/i-unknown", customAuth: nil).status == .ok)
        await harness.shutdown()
    }

    /// A shared phone: paul used it, then anna. The installation's inbox once showed the next user the previous user's
    /// notifications ("Thank you, Zoe …" read with mallory's proof). It shows what was sent while its current holder
    /// held it.
    @Test("an installation's inbox shows its current holder's notifications and the anonymous ones, never a previous holder's")
    func sharedPhone() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul())
        try await harness.startWorkers([.push])
        try await Self.deliver(harness, ["for-paul"])
        // The device moves to anna (after paul's logout): paul's snapshot without it, anna's with it.
        try await harness.contact(Self.paul([]))
        let anna = ContactSnapshot(
            project: "demo", customID: "anna", email: .init(address: nil, marketing: nil, marketingChangedAt: nil),
            sms: .init(phoneNumber: nil, marketing: nil, marketingChangedAt: nil),
            installations: [try JSONDecoder().decode(ContactSnapshot.Installation.self, from: Data(installationJSON("i-ios").utf8))],
            updatedAt: Date(), revision: 0)
        try await harness.contact(String(decoding: try Wire.encode(anna), as: UTF8.self), key: "demo/anna")
        try await harness.send(sendRequest(id: "for-anna", app: nil, key: "demo/anna"))
        try await waitUntil("anna's push delivered") {
            (try? await harness.partitions.ledger(sendID: "for-anna"))?.contains { $0.state == "sent" } == true
        }
        let annas = try await Self.call(harness, "/v1/inbox/install/i-ios", customAuth: Self.paulAuth("anna"))
        #expect(annas.status == .ok && annas.ids == ["for-anna"], "\(annas.json)")
        // Nor can she mark or delete paul's.
        for (path, method) in [("/notifications/for-paul/read", HTTPRequest.Method.post), ("/notifications/for-paul", .delete)] {
            let mark = try await Self.call(harness, "/v1/inbox/install/i-ios" + path, method: method, customAuth: Self.paulAuth("anna"))
            #expect(mark.status == .notFound, "\(path)")
        }
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios/read-all?until=for-paul", method: .post, customAuth: Self.paulAuth("anna")).status == .notFound)
        // paul's proof no longer opens the installation; his own inbox keeps his.
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios").code == "invalid_custom_id_auth")
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul").ids == ["for-paul"])
        await harness.shutdown()
    }

    @Test("pages: newest first, a cursor to the next page, stable while new notifications arrive; limit is checked")
    func pagination() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul())
        try await harness.startWorkers([.push])
        for id in ["n1", "n2", "n3", "n4", "n5"] { try await Self.deliver(harness, [id]) }
        let first = try await Self.call(harness, "/v1/inbox/install/i-ios?limit=2")
        #expect(first.ids == ["n5", "n4"] && first.hasMore)
        // Two arrive between pages: the next pages go on from where the first stopped.
        try await Self.deliver(harness, ["n6"])
        try await Self.deliver(harness, ["n7"])
        let second = try await Self.call(harness, "/v1/inbox/install/i-ios?limit=2&from=\(try #require(first.cursor))")
        #expect(second.ids == ["n3", "n2"] && second.hasMore)
        let third = try await Self.call(harness, "/v1/inbox/install/i-ios?limit=2&from=\(try #require(second.cursor))")
        #expect(third.ids == ["n1"] && !third.hasMore && third.cursor == nil)
        let fresh = try await Self.call(harness, "/v1/inbox/install/i-ios")
        #expect(fresh.ids == ["n7", "n6", "n5", "n4", "n3", "n2", "n1"])
        let item = try #require(fresh.item("n7"))
        #expect(item["title"]?.stringValue == "Hello" && item["body"]?.stringValue == "World")
        #expect(item["source"]?.stringValue == "trigger" && item["sendId"]?.stringValue == "n7")
        #expect(item["payload"]?["aps"]?["alert"]?["title"]?.stringValue == "Hello")
        #expect(item["payload"]?["com.herald"]?["i"]?.stringValue == "n7")
        for bad in ["limit=0", "limit=101", "limit=x", "from=zzz", "include_silent=yes"] {
            let answer = try await Self.call(harness, "/v1/inbox/install/i-ios?\(bad)")
            #expect(answer.status == .badRequest, "\(bad)")
            #expect(answer.json["error"]?["message"]?.stringValue?.hasPrefix(String(bad.prefix { $0 != "=" })) == true, "\(bad)")
        }
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios?limit=100").ids.count == 7)
        await harness.shutdown()
    }

    @Test("read, opened, read-all up to a named notification (never one that arrives later), deleted never again")
    func marks() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul())
        try await harness.startWorkers([.push])
        for id in ["n1", "n2", "n3"] { try await Self.deliver(harness, [id], variant: id == "n2" ? "b" : nil) }
        let base = "/v1/inbox/install/i-ios"
        #expect(try await Self.call(harness, "\(base)/notifications/n1/read", method: .post).status == .noContent)
        #expect(try await Self.call(harness, "\(base)/notifications/n2/opened", method: .post).status == .noContent)
        // Opened again, and in the custom ID's inbox: the push was opened once, reported as the app's open would be,
        // for the send's campaign and experiment arm.
        #expect(try await Self.call(harness, "\(base)/notifications/n2/opened", method: .post).status == .noContent)
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul/notifications/n2/opened", method: .post).status == .noContent)
        // Each inbox reports its first read or open of a notification, under the one id the orchestrator counts once:
        // n1 read, n2 opened (and opened again, nothing more), n2 opened in the custom ID's inbox.
        let opens = try await harness.reports { $0.filter { $0.outcome == .opened }.count >= 3 }.filter { $0.outcome.isEngagement }
        #expect(opens.map(\.id) == ["n1/i-ios/opened", "n2/i-ios/opened", "n2/i-ios/opened"], "\(opens.map(\.id))")
        #expect(opens.last.map { ($0.key, $0.campaign, $0.experiment, $0.variant, $0.installationID) } ?? ("", nil, nil, nil, nil)
            == ("demo/paul", "cart", "v1", "b", "i-ios"))
        var page = try await Self.call(harness, base)
        #expect(page.item("n1")?["read"] == .bool(true) && page.item("n1")?["opened"] == .bool(false))
        #expect(page.item("n2")?["read"] == .bool(true) && page.item("n2")?["opened"] == .bool(true))
        #expect(page.item("n3")?["read"] == .bool(false))
        // The app shows n1…n3; n4 arrives before its "mark all read" reaches the server.
        try await Self.deliver(harness, ["n4"])
        let marked = try await Self.call(harness, "\(base)/read-all?until=n3", method: .post)
        #expect(marked.status == .ok && marked.json["marked"] == .number("1"))
        page = try await Self.call(harness, base)
        #expect(page.item("n3")?["read"] == .bool(true) && page.item("n4")?["read"] == .bool(false))
        #expect(try await Self.call(harness, "\(base)/read-all", method: .post).status == .badRequest)
        #expect(try await Self.call(harness, "\(base)/read-all?until=nope", method: .post).code == "notification_not_found")
        // Read-all reports nothing (the app marked a list, nobody opened anything); n3 opened afterwards is reported,
        // after every report before it.
        #expect(try await Self.call(harness, "\(base)/notifications/n3/opened", method: .post).status == .noContent)
        let after = try await harness.reports { $0.contains { $0.id == "n3/i-ios/opened" } }.filter { $0.outcome.isEngagement }
        #expect(after.map(\.id) == ["n1/i-ios/opened", "n2/i-ios/opened", "n2/i-ios/opened", "n3/i-ios/opened"], "\(after.map(\.id))")
        // Deleted: gone from every page, and marks on it are refused.
        #expect(try await Self.call(harness, "\(base)/notifications/n2", method: .delete).status == .noContent)
        #expect(try await Self.call(harness, "\(base)/notifications/n2", method: .delete).status == .notFound)
        #expect(try await Self.call(harness, "\(base)/notifications/n2/read", method: .post).status == .notFound)
        #expect(try await Self.call(harness, "\(base)/notifications/n9/read", method: .post).status == .notFound)
        #expect(try await Self.call(harness, base).ids == ["n4", "n3", "n1"])
        #expect(try await Self.call(harness, "\(base)?limit=1&from=\(Inbox.Cursor(sentAt: Int64.max, notificationID: "z").token)").ids == ["n4"])
        // The custom ID's inbox is its own: n2 is still there, n1 unread.
        let custom = try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: Self.paulAuth())
        #expect(custom.ids == ["n4", "n3", "n2", "n1"] && custom.item("n1")?["read"] == .bool(false))
        await harness.shutdown()
    }

    @Test("silent notifications are left out unless asked for; each device's inbox has its push, the custom ID's has one")
    func silentAndDevices() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul([
            installationJSON("i-ios"), installationJSON("i-ipad", token: String(repeating: "cd", count: 32)),
        ]))
        try await harness.startWorkers([.push])
        try await Self.deliver(harness, ["visible"], targets: 2)
        try await Self.deliver(harness, ["silent"], content: ["deeplink": "demo://sync"], targets: 2)
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios").ids == ["visible"])
        let all = try await Self.call(harness, "/v1/inbox/install/i-ios?include_silent=true")
        #expect(all.ids == ["silent", "visible"] && all.item("silent")?["silent"] == .bool(true))
        #expect(all.item("silent")?["payload"]?["aps"]?["content-available"] == .number("1"))
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ipad").ids == ["visible"])
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul?include_silent=true", customAuth: Self.paulAuth()).ids == ["silent", "visible"])
        await harness.shutdown()
    }

    @Test("not kept: pushes to a dev installation, test sends, transactional sends to a raw token, uninstall-tracking probes; an opted-out installation gets an error")
    func exclusions() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul([
            installationJSON("i-ios"), installationJSON("i-dev", token: String(repeating: "ef", count: 32), dev: true),
        ]))
        try await harness.startWorkers([.push])
        var test = sendRequest(id: "test-1", app: nil)
        test.test = true
        var raw = sendRequest(id: "raw-1", marketing: false, app: nil)
        raw.token = .init(token: String(repeating: "12", count: 32), app: "demo-ios")
        // An uninstall-tracking probe to the iPhone: a silent push nobody sees.
        var probe = sendRequest(id: "probe-1", marketing: false, app: "demo-ios", content: ["push_type": "background", "priority": "normal"])
        probe.trigger = .init(type: .uninstallTracking, at: Date())
        probe.installationID = "i-ios"
        try await harness.send(test)
        try await harness.send(raw)
        try await harness.send(probe)
        try await Self.deliver(harness, ["kept"], targets: 2)
        _ = try await harness.reports {
            $0.contains { $0.sendID == "test-1" } && $0.contains { $0.sendID == "raw-1" } && $0.contains { $0.sendID == "probe-1" }
        }
        // Every one of them was delivered: 2 + 2 + 1 (the raw token) + 1 (the probe) pushes.
        #expect(harness.simulators.count("apns") == 6)
        let silent = try await Self.call(harness, "/v1/inbox/install/i-ios?include_silent=true")
        #expect(silent.ids == ["kept"], "the probe is not kept, even among silent notifications")
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios").ids == ["kept"])
        #expect(try await Self.call(harness, "/v1/inbox/install/i-dev").ids == [])
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: Self.paulAuth()).ids == ["kept"])
        try await harness.contact(Self.paul([installationJSON("i-ios", optedOut: true)]))
        let refused = try await Self.call(harness, "/v1/inbox/install/i-ios")
        #expect(refused.status == .forbidden && refused.code == "opted_out")
        await harness.shutdown()
    }

    @Test("the retention: a purge deletes what is older, keeps the rest; a deleted profile's inbox goes with it")
    func retention() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(Self.paul())
        try await harness.startWorkers([.push])
        try await Self.deliver(harness, ["old"])
        let delivered = Date()
        var purge = RetentionPurge(
            partitions: harness.partitions, inboxRetention: .seconds(90 * 86_400), sendRetention: .seconds(30 * 86_400),
            interval: .seconds(3600), logger: harness.logger)
        purge.clock = { delivered.addingTimeInterval(89 * 86_400) }
        #expect(await purge.round().inbox == 0)
        try await Task.sleep(for: .seconds(1.1))
        try await Self.deliver(harness, ["new"])
        purge.clock = { delivered.addingTimeInterval(90 * 86_400 + 0.5) }
        // "old" is past 90 days (in both inboxes), "new" is not.
        #expect(await purge.round().inbox == 2)
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios").ids == ["new"])
        try await harness.feed([(.contacts, "demo/paul", nil)])
        #expect(try await Self.call(harness, "/v1/inbox/install/i-ios").ids == [])
        #expect(try await Self.call(harness, "/v1/inbox/custom/paul", customAuth: Self.paulAuth()).ids == [])
        await harness.shutdown()
    }
}
