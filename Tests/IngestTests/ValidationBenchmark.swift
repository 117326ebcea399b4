import Foundation
import HTTPTypes
import HeraldTestSupport
import Shared
import Testing

@testable import Ingest

/// Not a test: figures for scripts/bench/validation (runs only with HERALD_BENCH=1, in release). How long the ingest
/// takes to answer a request built to be slow: 140,000 attribute names (about 2 MB) on the app API, whose key ships in
/// every app (each name once searched the whole list for an earlier write of it: 36 s for one request; they are now
/// refused while parsing, past 1,000 members in an object), and the worst shape the parser lets through: 200 profile
/// updates of 999 invalid names each (199,800 problems, 100 kept).
@Suite("Validation benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct ValidationBenchmark {
    static let names = 140_000

    func time(_ label: String, _ uri: String, body: String, rest: Bool = false) async throws {
        let started = ContinuousClock.now
        let answer = try await call(uri, key: rest ? restKey : iosKey, rest: rest, body: body, maxBody: 8 << 20)
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.attoseconds) / 1e15 + Double(elapsed.components.seconds) * 1000
        print("validation \(label): \(body.utf8.count) bytes answered \(answer.status.code) in \(String(format: "%.0f", milliseconds)) ms")
        printFigure("ingest_\(label)_ms", milliseconds, unit: "ms", goal: "<1000ms")
    }

    @Test("answers to 140,000-name requests")
    func hostileRequests() async throws {
        let distinct = (0..<Self.names).map { #""a\#($0)":1"# }.joined(separator: ",")
        try await time("profile_140k_names", "/v1/app/profile", body: #"{"installation_id":"I","attributes":{\#(distinct)}}"#)
        let twice = (0..<Self.names / 2).map { #""b\#($0)":1,"B\#($0)":2"# }.joined(separator: ",")
        try await time("profile_140k_duplicates", "/v1/app/profile", body: #"{"installation_id":"I","attributes":{\#(twice)}}"#)
        let invalid = (0..<Self.names).map { #""bad-\#($0)":1"# }.joined(separator: ",")
        try await time("profile_140k_invalid", "/v1/app/profile", body: #"{"installation_id":"I","attributes":{\#(invalid)}}"#)
        try await time(
            "event_140k_attributes", "/v1/app/events",
            body: #"{"installation_id":"I","events":[{"name":"e","attributes":{\#(distinct)}}]}"#)
        let bad = (0..<999).map { #""bad-\#($0)":1"# }.joined(separator: ",")
        let updates = (0..<200).map { #"{"identifiers":{"custom_id":"u\#($0)"},"attributes":{\#(bad)}}"# }.joined(separator: ",")
        try await time("profiles_200x999_invalid", "/v1/profiles/update", body: "[\(updates)]", rest: true)
    }
}
