import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import OrchestratorDomain

func pushFields(app: String? = nil, environment: String? = nil) -> [JSONMember] {
    var push: [JSONMember] = [
        JSONMember("campaign", .string("receipts")),
        JSONMember("notification", .object([JSONMember("body", .string("Your order shipped")), JSONMember("badge", .string("+1"))])),
        JSONMember("payload", .object([JSONMember("order", .number("42"))])),
    ]
    if let app { push.append(JSONMember("app", .string(app))) }
    if let environment { push.append(JSONMember("environment", .string(environment))) }
    return [JSONMember("push", .object(push))]
}

/// `POST /v1/sends/push` in the orchestrator: a send request where the device is (issue 22, item 5).
@Suite("Transactional push to one device", .serialized)
struct TransactionalPushTests {
    @Test("to an identified installation: forwarded from its home to the profile, the send names the installation and the contact revision", arguments: [1, 2, 3, 4] as [UInt64])
    func identifiedInstallation(seed: UInt64) async throws {
        let cluster = try Cluster(seed: seed)
        cluster.duplicateOutputs = seed % 2 == 0
        cluster.app(.identify, "id1", installation: "I", customID: "paul")
        cluster.app(.pushToken, "t1", installation: "I", customID: "paul", push(tokenA))
        try await cluster.settle()
        cluster.server(.pushSend, "tx-1", installation: "I", pushFields(app: "ios"))
        cluster.server(.pushSend, "tx-1", installation: "I", pushFields(app: "ios"))  // a retried call: one send
        try await cluster.settle()
        let sends = cluster.sends.filter { $0.send.occurrence == "tx-1" }
        #expect(Set(sends.map(\.send.sendID)).count == 1)
        let (key, send) = try #require(sends.first)
        #expect(key == "demo/paul" && send.profileKey == "demo/paul" && send.customID == "paul")
        #expect(send.installationID == "I" && send.app == "ios" && send.token == nil && !send.marketing)
        #expect(send.campaign == "receipts" && send.content == ["body": "Your order shipped", "badge": "+1"])
        #expect(send.transactional == true, "its free label is never a metric label")
        #expect(send.payload == ["order": .number("42")])
        #expect(send.contactRevision != nil && send.contactRevision == cluster.contacts["demo/paul"]??["revision"].flatMap { if case .number(let n) = $0 { Int(n) } else { nil } })
        #expect(cluster.deadLetters.isEmpty)
    }

    @Test("to an anonymous installation: sent from its home")
    func anonymousInstallation() async throws {
        let cluster = try Cluster()
        cluster.app(.pushToken, "t1", installation: "A", push(tokenA))
        try await cluster.settle()
        cluster.server(.pushSend, "tx-2", installation: "A", pushFields())
        try await cluster.settle()
        #expect(cluster.sends.map(\.key) == ["demo/install/A"])
        #expect(cluster.sends.first?.send.installationID == "A" && cluster.sends.first?.send.app == nil)
    }

    @Test("to a raw token: keyed by the token, with its app and environment, no contact needed")
    func rawToken() async throws {
        let cluster = try Cluster()
        cluster.server(.pushSend, "tx-3", token: tokenB, pushFields(app: "ios", environment: "sandbox"))
        try await cluster.settle()
        let (key, send) = try #require(cluster.sends.first)
        #expect(key == "demo/token/\(tokenB)" && send.profileKey == key)
        #expect(send.token == SendRequest.RawToken(token: tokenB, app: "ios", environment: .sandbox))
        #expect(send.contactRevision == nil && send.installationID == nil)
    }

    @Test("a push_send naming no device, or a token without its app, is a dead letter")
    func unreadable() async throws {
        let cluster = try Cluster()
        cluster.server(.pushSend, "tx-4", token: tokenB, pushFields())
        cluster.server(.pushSend, "tx-5", customID: "paul", pushFields(app: "ios"))
        try await cluster.settle()
        #expect(cluster.sends.isEmpty)
        #expect(cluster.deadLetters.map(\.reason).allSatisfy { $0.hasPrefix("push_send without") } && cluster.deadLetters.count == 2)
    }
}
