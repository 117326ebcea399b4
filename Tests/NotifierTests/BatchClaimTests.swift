import Crypto
import CurlClient
import Foundation
import ProviderSimulators
import Shared
import Testing

@testable import Notifier

/// The sends a batch brings are claimed in the transaction that stores them, up to the room their channel's worker
/// has, and handed to it (issue 58: no claim transaction of their own); what the room leaves is the worker's.
@Suite("Notifier: sends claimed in their batch's transaction", .timeLimit(.minutes(5)))
struct BatchClaimTests {
    /// An APNs provider on the harness's simulator with `limit` calls in flight (the worker's window).
    static func apns(_ harness: NotifierHarness, limit: Int) throws -> APNsProvider {
        var settings = APNsProvider.Settings()
        settings.productionURL = harness.apns.url
        settings.sandboxURL = harness.apns.url
        settings.timeout = NotifierHarness.providerTimeout
        settings.maxInFlight = limit
        return APNsProvider(
            driver: harness.driver,
            signer: try APNsTokenSigner(p8: P256.Signing.PrivateKey().pemRepresentation, keyID: "KEY1234567", teamID: "TEAM123456"),
            settings: settings, bundleIDs: ["demo/demo-ios": "com.example.demo"])
    }

    @Test("a send whose contact is at hand is claimed by the batch that stores it: its target is `sending` before any worker ran, and it is sent once")
    func claimedInTheBatch() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        let worker = await harness.attachWorker(.push, providers: ["ios": try Self.apns(harness, limit: 10)])
        try await harness.send(sendRequest(id: "in-batch"))
        // No worker has run a claim: the batch's own transaction fanned the send out and claimed its target.
        #expect(try await harness.partitions.ledger(sendID: "in-batch").map(\.state) == ["sending"])
        #expect(await harness.partitions.attemptsInFlight(0) == 1)
        harness.run(worker)
        let reports = try await harness.reports { $0.contains { $0.sendID == "in-batch" && $0.outcome == .sent } }
        #expect(reports.filter { $0.sendID == "in-batch" }.map(\.outcome) == [.sent])
        #expect(harness.simulators.count("apns") == 1)
        await harness.shutdown()
    }

    @Test("the batch claims no more than its worker's room: a send to three devices with one slot claims one target, the worker the other two, each sent once")
    func roomBoundsTheClaim() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [
            installationJSON("i-1", token: String(repeating: "a", count: 64)), installationJSON("i-2", token: String(repeating: "b", count: 64)),
            installationJSON("i-3", token: String(repeating: "c", count: 64)),
        ]))
        let worker = await harness.attachWorker(.push, providers: ["ios": try Self.apns(harness, limit: 1)])
        try await harness.send(sendRequest(id: "three"))
        #expect(try await harness.partitions.ledger(sendID: "three").map(\.state).sorted() == ["pending", "pending", "sending"])
        // The slot is taken: nothing is left for a claim until the attempt in hand finishes.
        let taken = worker.reserve(upTo: 1)
        worker.unreserve(taken)
        #expect(taken == 0)
        harness.run(worker)
        let reports = try await harness.reports { $0.filter { $0.sendID == "three" && $0.outcome == .sent }.count == 3 }
        #expect(Set(reports.filter { $0.sendID == "three" }.compactMap(\.installationID)) == ["i-1", "i-2", "i-3"])
        #expect(harness.simulators.count("apns") == 3)
        await harness.shutdown()
    }

    @Test("without an attached worker a batch claims nothing: the send waits for a worker's claim, as before")
    func noWorkerNoClaim() async throws {
        let harness = try await NotifierHarness()
        try await harness.contact(contactJSON(installations: [installationJSON("i-ios")]))
        try await harness.send(sendRequest(id: "later"))
        #expect(try await harness.partitions.ledger(sendID: "later").isEmpty)
        try await harness.startWorkers([.push])
        let reports = try await harness.reports { $0.contains { $0.sendID == "later" && $0.outcome == .sent } }
        #expect(reports.filter { $0.sendID == "later" }.map(\.outcome) == [.sent])
        await harness.shutdown()
    }
}
