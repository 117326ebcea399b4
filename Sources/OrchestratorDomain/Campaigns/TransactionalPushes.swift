import Foundation
import GRDB
import PartitionStore
import Shared

/// `push_send` records (`POST /v1/sends/push`): a transactional push to one device, written as a send request on
/// `herald.sends.push` (docs/campaigns.md, "Transactional sends"). To a raw token it is keyed by the token's key and
/// needs no contact; to an installation it is keyed by the profile holding it (`WriteRouter` sends it there), so that
/// the send names the profile's contact revision and the notifier finds its token there.
struct TransactionalPushes {
    let db: Database
    let write: Write
    /// The apps' push categories (their buttons).
    let config: HeraldConfiguration

    /// The send request of a `push_send` record, keyed by `key`. Its id comes from the key and the record's id (as a
    /// campaign's from its profile and occurrence), so a replay (the same `id` or `Idempotency-Key`) is one send.
    func sendRequest(_ push: TransactionalPush, key: String) throws -> PendingOutput {
        let write = self.write
        var content: [String: String] = [:]
        for field in push.notification { if let text = field.value.stringValue { content[field.key] = text } }
        let payload = push.payload.map { members in Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 }) }
        let app = push.app
        var send = SendRequest(
            sendID: SendIDDerivation.of(push, receivedAt: write.receivedAt).transactional(key: key, recordID: write.id),
            project: write.project, profileKey: key, customID: write.customID, channel: .push,
            marketing: false, app: app, campaign: push.campaign ?? "transactional", step: "push",
            occurrence: write.id, template: "api", language: "default", content: content, payload: payload,
            trigger: SendRequest.Trigger(type: .api, eventID: write.id, at: write.receivedAt), decidedAt: write.receivedAt,
            expiresAt: nil)
        send.requestID = write.requestID
        send.transactional = true
        if let token = write.ingest.deviceToken, let app {
            send.token = SendRequest.RawToken(token: token, app: app, environment: push.environment)
        } else {
            send.installationID = write.installationID
            send.contactRevision = try ProfilesTable(db).contactRevision(key)
        }
        send.actions = config.pushActions(project: write.project, app: app, category: content["category"])
        return PendingOutput(topic: HeraldTopic.sendsPush.name, key: key, value: try Wire.encode(send))
    }
}
