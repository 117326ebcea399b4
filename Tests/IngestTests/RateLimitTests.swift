import Foundation
import HTTPTypes
import HeraldTestSupport
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import ServiceSupport
import Shared
import Synchronization
import Testing

@testable import Ingest

@Suite("Ingest API: rate limits per client address and per key")
struct RateLimitTests {
    final class ManualClock: Sendable {
        let start = ContinuousClock.now
        let offset = Mutex<Duration>(.zero)
        var now: ContinuousClock.Instant { start + offset.withLock { $0 } }
        func advance(_ duration: Duration) { offset.withLock { $0 += duration } }
    }

    @Test("a token bucket: a burst, then the rate; when the next token and a full bucket come")
    func buckets() {
        let clock = ManualClock()
        let buckets = TokenBuckets(rate: 2, burst: 4, clock: { clock.now })
        #expect((0..<4).map { _ in buckets.take("a").allowed } == [true, true, true, true])
        let refused = buckets.take("a")
        #expect(!refused.allowed && refused.remaining == 0 && refused.retryAfter == .milliseconds(500) && refused.untilFull == .seconds(2))
        #expect(buckets.take("b").allowed, "another name has its own bucket")
        clock.advance(.milliseconds(500))
        #expect(buckets.take("a").allowed)
        #expect(!buckets.take("a").allowed)
        clock.advance(.seconds(10))
        #expect(buckets.take("a").remaining == 3, "refilled up to the burst, no further")
    }

    @Test("the table of buckets is bounded: full ones go first, then the least recently used")
    func bounded() {
        let clock = ManualClock()
        let buckets = TokenBuckets(rate: 1, burst: 2, maxBuckets: 100, clock: { clock.now })
        for index in 0..<1_000 { _ = buckets.take("address-\(index)") }
        #expect(buckets.count <= 100)
        // A bucket in use survives a flood of others once they are idle.
        clock.advance(.seconds(5))
        _ = buckets.take("busy")
        _ = buckets.take("busy")
        for index in 1_000..<1_200 { _ = buckets.take("address-\(index)") }
        #expect(buckets.count <= 100)
    }

    @Test(
        "the client: the peer, or behind a trusted proxy the right-most address of X-Forwarded-For that is not a proxy",
        arguments: [
            ("203.0.113.9", ["198.51.100.1"], "203.0.113.9"),  // not a proxy: its header is the client's own
            ("10.0.0.5", ["198.51.100.1"], "198.51.100.1"),
            ("10.0.0.5", ["1.1.1.1, 198.51.100.1, 10.0.0.4"], "198.51.100.1"),  // a spoofed left entry and a second proxy
            ("10.0.0.5", ["198.51.100.1", "10.0.0.3"], "198.51.100.1"),  // the header twice
            ("10.0.0.5", ["not-an-address, 10.0.0.4"], "10.0.0.5"),
            ("10.0.0.5", [], "10.0.0.5"),
            ("::ffff:10.0.0.5", ["2001:db8::7"], "2001:db8::7"),
        ] as [(String, [String], String)])
    func client(peer: String, forwarded: [String], client: String) {
        let clients = ClientAddress(trustedProxies: [AddressRange("10.0.0.0/8")!])
        #expect(clients.of(peer: peer, forwardedFor: forwarded) == client)
    }

    @Test("address ranges", arguments: [
        ("10.0.0.0/8", "10.255.1.2", true), ("10.0.0.0/8", "11.0.0.1", false), ("192.0.2.7", "192.0.2.7", true),
        ("192.0.2.7", "192.0.2.8", false), ("fd00::/8", "fd12:3456::1", true), ("fd00::/8", "fe80::1", false),
        ("0.0.0.0/0", "203.0.113.1", true), ("10.0.0.0/8", "::ffff:10.1.2.3", true), ("10.0.0.0/8", "fd00::1", false),
    ])
    func ranges(range: String, address: String, inside: Bool) {
        #expect(AddressRange(range)?.contains(address) == inside)
    }

    @Test("invalid ranges are refused", arguments: ["10.0.0.0/33", "fd00::/129", "host.example", "10.0.0/8", ""])
    func invalidRanges(text: String) {
        #expect(AddressRange(text) == nil)
    }

    /// Requests through the ingest's router over a real socket, from 127.0.0.1 (a trusted proxy here), as the clients
    /// `X-Forwarded-For` names.
    static func answers(
        _ limits: RateLimits, _ requests: [(uri: String, key: String, rest: Bool, client: String)]
    ) async throws -> [(status: HTTPResponse.Status, headers: HTTPFields)] {
        let catalog = try AppsCatalog.load(path: sampleAppsFile)
        var limits = limits
        limits.trustedProxies = [AddressRange("127.0.0.1")!]
        // Frozen: the buckets refill only when a test says so, however slow the machine.
        let frozen = ContinuousClock.now
        limits.clock = { frozen }
        let router = Ingest.buildRouter(
            api: IngestAPI(catalog: catalog, sink: FakeSink(), maxBodyBytes: 1 << 20, now: { fixedNow }), rateLimits: limits)
        let app = Application(router: router, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        return try await app.test(.live) { client in
            var answers: [(HTTPResponse.Status, HTTPFields)] = []
            for request in requests {
                var headers: HTTPFields = [HTTPField.Name("X-Forwarded-For")!: request.client]
                if request.rest {
                    headers[.authorization] = "Bearer \(request.key)"
                } else {
                    headers[HTTPField.Name("X-Api-Key")!] = request.key
                }
                let body = request.rest
                    ? #"[{"identifiers":{"custom_id":"paul"},"attributes":{"plan":"gold"}}]"#
                    : #"{"installation_id":"I","events":[{"name":"open"}]}"#
                answers.append(try await client.execute(uri: request.uri, method: .post, headers: headers, body: ByteBuffer(string: body)) {
                    ($0.status, $0.headers)
                })
            }
            return answers
        }
    }

    @Test("per client address for public keys: a burst of twice the rate, then 429 with Retry-After and RateLimit-*; another address goes on")
    func perAddress() async throws {
        let app = ("/v1/app/events", iosKey, false)
        let answers = try await Self.answers(
            RateLimits(perAddress: 2, perKey: 0),
            Array(repeating: (app.0, app.1, app.2, "198.51.100.1"), count: 5) + [(app.0, app.1, app.2, "198.51.100.2")])
        #expect(answers.map(\.status) == [.ok, .ok, .ok, .ok, .tooManyRequests, .ok])
        let refused = answers[4].headers
        #expect(refused[.retryAfter] == "1")
        #expect(refused[HTTPField.Name("RateLimit-Limit")!] == "4" && refused[HTTPField.Name("RateLimit-Remaining")!] == "0")
        #expect(refused[HTTPField.Name("RateLimit-Policy")!] == "4;w=2" && refused[HTTPField.Name("RateLimit-Reset")!] != nil)
        #expect(answers[0].headers[HTTPField.Name("RateLimit-Remaining")!] == "3", "every answer says what is left")
    }

    /// One sender spending an app key's bucket once locked out every device of the app: the key is shipped in each
    /// copy, so it is not limited as a whole. Its senders are limited by address (an IPv6 one by its /64, which a host
    /// is given whole) and by the installation they write for.
    @Test("an app key is limited per address (IPv6 per /64) and per installation, never as a whole")
    func publicKeys() async throws {
        let app = ("/v1/app/events", iosKey, false)
        // Many addresses with one key, each under its own limit: none is refused for the key.
        let spread = try await Self.answers(
            RateLimits(perAddress: 2, perKey: 2), (0..<12).map { (app.0, app.1, app.2, "198.51.100.\($0)") })
        #expect(spread.allSatisfy { $0.status == .ok })
        // Addresses of one /64 share a bucket; another /64 has its own.
        let sixtyFour = try await Self.answers(
            RateLimits(perAddress: 1, perKey: 0),
            (0..<3).map { (app.0, app.1, app.2, "2001:db8:1:2::\($0 + 1)") } + [(app.0, app.1, app.2, "2001:db8:1:3::1")])
        #expect(sixtyFour.map(\.status) == [.ok, .ok, .tooManyRequests, .ok])
        #expect(RateLimiter.bucketName(address: "2001:db8:1:2:aaaa:bbbb:cccc:dddd") == "2001:db8:1:2::/64")
        #expect(RateLimiter.bucketName(address: "::ffff:192.0.2.7") == "192.0.2.7")
        // One installation named from many addresses: its own bucket.
        let installation = try await Self.answers(
            RateLimits(perAddress: 0, perKey: 0, perInstallation: 1), (0..<3).map { (app.0, app.1, app.2, "198.51.100.\($0)") })
        #expect(installation.map(\.status) == [.ok, .ok, .tooManyRequests])
        #expect(installation[2].headers[.retryAfter] != nil)
    }

    @Test("a REST key is not limited by address but by key; an unknown key by address")
    func perKey() async throws {
        let rest = ("/v1/profiles/update", restKey, true, "198.51.100.1")
        let answers = try await Self.answers(RateLimits(perAddress: 1, perKey: 2), Array(repeating: rest, count: 5))
        #expect(answers.map(\.status) == [.ok, .ok, .ok, .ok, .tooManyRequests])
        let unknown = try await Self.answers(
            RateLimits(perAddress: 1, perKey: 100), Array(repeating: ("/v1/app/events", "nope_0123456789abcdef", false, "198.51.100.9"), count: 3))
        #expect(unknown.map(\.status) == [.unauthorized, .unauthorized, .tooManyRequests])
    }
}
