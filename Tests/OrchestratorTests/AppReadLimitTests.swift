import Foundation
import HTTPTypes
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import OrchestratorDomain
import ServiceSupport
import Shared
import Testing

@testable import Orchestrator

/// The apps' reads on the orchestrator are public, and share the CPU and SQLite's readers with the apply loop: 3,000
/// syncs in 128 parallel streams were once all served. They are bounded as the ingest's writes are: requests in flight,
/// per client address and per installation (`AppReads.register(on:limits:maxInFlight:peerKey:)`).
@Suite("Orchestrator: the apps' reads are bounded", .timeLimit(.minutes(5)))
struct AppReadLimitTests {
    /// Answers every read "not held" at once, or, gated, only once its gate opens.
    final class Source: AppReadSource {
        let gate: Gate?

        init(gated: Bool = false) { gate = gated ? Gate() : nil }

        func wait() async { await gate?.wait() }

        func inAppMessages(key: String, installationID: String, after writeID: String?, ifNoneMatch: String?, now: Date) async throws
            -> AppRead<InAppEligibility.Answer>
        {
            await wait()
            return .notHeld
        }

        func contentCards(
            key: String, installationID: String, after writeID: String?, since cursor: ContentCardFeed.Cursor?, now: Date
        ) async throws -> AppRead<JSONValue> {
            await wait()
            return .notHeld
        }

        func geofences(key: String, installationID: String, app: String, after writeID: String?, ifNoneMatch: String?) async throws
            -> AppRead<GeofenceSync.Answer>
        {
            await wait()
            return .notHeld
        }
    }

    static let peerKey = "the-instance-peer-key"
    /// The sample's iOS app key.
    static let appKey = "live_demo_ios_0123456789"

    /// The statuses of `requests` (client address, installation, extra headers) through the service's composition, over a
    /// real socket from 127.0.0.1, trusted as a proxy so that `X-Forwarded-For` names each client.
    static func statuses(
        _ limits: RateLimits, _ requests: [(client: String, installation: String, headers: HTTPFields)], source: Source = Source(),
        path: String = "in-app-messages"
    ) async throws -> [HTTPResponse.Status] {
        var limits = limits
        limits.trustedProxies = [AddressRange("127.0.0.1")!]
        let frozen = ContinuousClock.now
        limits.clock = { frozen }
        let router = Router(context: ServiceRequestContext.self)
        AppReads(manager: source, catalog: try AppsCatalog.load(path: sampleAppsFile), owners: nil, instance: "test")
            .register(on: router, limits: limits, maxInFlight: 100, peerKey: peerKey)
        let app = Application(router: router, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        return try await app.test(.live) { client in
            var statuses: [HTTPResponse.Status] = []
            for request in requests {
                var headers = request.headers
                headers[HTTPField.Name("X-Forwarded-For")!] = request.client
                headers[HTTPField.Name("X-Api-Key")!] = Self.appKey
                statuses.append(try await client.execute(
                    uri: "/v1/app/\(path)?installation_id=\(request.installation)", method: .get, headers: headers) { $0.status })
            }
            return statuses
        }
    }

    @Test("per client address (an IPv6 one by its /64) and per installation: 429 past either; another client goes on")
    func perClient() async throws {
        let none = HTTPFields()
        let byAddress = try await Self.statuses(
            RateLimits(perAddress: 1, perKey: 0),
            [("198.51.100.1", "A", none), ("198.51.100.1", "B", none), ("198.51.100.1", "C", none), ("198.51.100.2", "D", none),
             ("2001:db8:1:2::1", "E", none), ("2001:db8:1:2::2", "F", none), ("2001:db8:1:2::3", "G", none)])
        #expect(byAddress == [.conflict, .conflict, .tooManyRequests, .conflict, .conflict, .conflict, .tooManyRequests])
        let byInstallation = try await Self.statuses(
            RateLimits(perAddress: 0, perKey: 0, perInstallation: 1),
            [("198.51.100.1", "A", none), ("198.51.100.2", "A", none), ("198.51.100.3", "A", none), ("198.51.100.3", "B", none)])
        #expect(byInstallation == [.conflict, .conflict, .tooManyRequests, .conflict])
    }

    @Test("the geofence sync is an app's read like the others: limited per installation, 409 for an installation not held")
    func geofences() async throws {
        let none = HTTPFields()
        let statuses = try await Self.statuses(
            RateLimits(perAddress: 0, perKey: 0, perInstallation: 1), [("198.51.100.1", "A", none), ("198.51.100.2", "A", none), ("198.51.100.3", "A", none)],
            path: "geofences")
        #expect(statuses == [.conflict, .conflict, .tooManyRequests])
    }

    /// A read another instance forwarded was counted where it arrived; one that only says it was forwarded is not
    /// trusted to have been.
    @Test("a read forwarded by a peer (its key) is not counted again; the forwarding header alone is")
    func forwarded() async throws {
        var peer = HTTPFields()
        peer[.heraldForwardedBy] = "orchestrator-a"
        peer[.heraldPeerKey] = Self.peerKey
        var forged = HTTPFields()
        forged[.heraldForwardedBy] = "orchestrator-a"
        forged[.heraldPeerKey] = "guessed"
        let limits = RateLimits(perAddress: 1, perKey: 0)
        #expect(try await Self.statuses(limits, Array(repeating: ("198.51.100.1", "A", peer), count: 5)).allSatisfy { $0 == .conflict })
        #expect(try await Self.statuses(limits, Array(repeating: ("198.51.100.1", "A", forged), count: 3)).last == .tooManyRequests)
    }

    @Test("past the reads in flight allowed, 503 overloaded with Retry-After at once")
    func inFlight() async throws {
        let source = Source(gated: true)
        let gate = try #require(source.gate)
        let router = Router(context: ServiceRequestContext.self)
        AppReads(manager: source, catalog: try AppsCatalog.load(path: sampleAppsFile), owners: nil, instance: "test")
            .register(on: router, limits: .off, maxInFlight: 2, peerKey: Self.peerKey)
        let app = Application(router: router, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        // Through the router (requests at once; a live client sends them one after another on its connection).
        try await app.test(.router) { client in
            @Sendable func read() async throws -> (HTTPResponse.Status, String?) {
                try await client.execute(
                    uri: "/v1/app/in-app-messages?installation_id=I", method: .get, headers: [HTTPField.Name("X-Api-Key")!: Self.appKey]
                ) { ($0.status, $0.headers[.retryAfter]) }
            }
            async let first = read()
            async let second = read()
            do {
                try await waitUntil("two reads in flight") { gate.waiting.withLock { $0 } == 2 }
            } catch {
                gate.open()
                throw error
            }
            // Answered at once, or the gate opens after 10 s and the test fails.
            let third = try await gate.answeredBeforeOpening { try await read() }
            #expect(third?.0 == .serviceUnavailable && third?.1 == "1", "\(String(describing: third))")
            gate.open()
            #expect(try await first.0 == .conflict)
            #expect(try await second.0 == .conflict)
        }
    }
}
