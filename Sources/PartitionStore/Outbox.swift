import Foundation
import GRDB
import Metrics
import Shared

/// An output record produced by applying a record, before it has an outbox id.
package struct PendingOutput: Sendable, Equatable {
    package var topic: String
    package var key: String
    /// nil: a tombstone.
    package var value: [UInt8]?
    package var headers: [KafkaHeader] = []

    package init(topic: String, key: String, value: [UInt8]?, headers: [KafkaHeader] = []) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
    }

    package var outgoing: KafkaOutgoingRecord {
        KafkaOutgoingRecord(topic: topic, key: Array(key.utf8), value: value, headers: headers)
    }
}

/// A record to produce after the transaction that created it commits (the outbox of the design brief).
package struct OutboxRecord: Sendable, Equatable {
    package var id: Int64
    package var topic: String
    package var key: String
    /// nil: a tombstone.
    package var value: [UInt8]?
    package var headers: [KafkaHeader]

    package var outgoing: KafkaOutgoingRecord {
        KafkaOutgoingRecord(topic: topic, key: Array(key.utf8), value: value, headers: headers)
    }
}

/// The outbox table: written in the transaction that decided the output, read and deleted by the relay.
enum Outbox {
    static func insert(_ db: Database, _ output: PendingOutput) throws -> OutboxRecord {
        let headers = JSONValue.object(
            output.headers.map { JSONMember($0.name, $0.value.map { .string(String(decoding: $0, as: UTF8.self)) } ?? .null) })
        try db.cachedStatement(sql: "INSERT INTO outbox (topic, key, value, headers, created_at) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [
                output.topic, output.key, output.value.map { Data($0) }, String(decoding: headers.serialized, as: UTF8.self),
                WireTime.format(Date()),
            ])
        return OutboxRecord(
            id: db.lastInsertedRowID, topic: output.topic, key: output.key, value: output.value, headers: output.headers)
    }

    /// The oldest `limit` records past `produced` (an id; AUTOINCREMENT: an id is never given twice), in id order.
    static func pending(_ db: Database, after produced: Int64 = 0, limit: Int) throws -> [OutboxRecord] {
        let statement = try db.cachedStatement(
            sql: "SELECT id, topic, key, value, headers FROM outbox WHERE id > ? ORDER BY id LIMIT ?")
        return try Row.fetchAll(statement, arguments: [produced, limit])
            .map { row in
                let headersText: String = row["headers"]
                var headers: [KafkaHeader] = []
                if case .object(let members)? = try? JSONParser.parse(Array(headersText.utf8)) {
                    for member in members {
                        if case .string(let text) = member.value {
                            headers.append(KafkaHeader(member.key, text))
                        } else {
                            headers.append(KafkaHeader(member.key, nil as [UInt8]?))
                        }
                    }
                }
                let value: Data? = row["value"]
                return OutboxRecord(
                    id: row["id"], topic: row["topic"], key: row["key"], value: value.map { Array($0) }, headers: headers)
            }
    }

    /// Forgets every record up to `last`: what `pending` returned, oldest first (ids only grow, so none below it came
    /// since).
    static func delete(_ db: Database, through last: Int64) throws {
        try db.executeCached(sql: "DELETE FROM outbox WHERE id <= ?", arguments: [last])
    }

    static func delete(_ db: Database, ids: [Int64]) throws {
        try db.execute(
            sql: "DELETE FROM outbox WHERE id IN (\(ids.map { _ in "?" }.joined(separator: ",")))",
            arguments: StatementArguments(ids))
    }

    /// `herald_records_produced_total{topic}`: what the outbox delivered to the broker (send requests per channel,
    /// contact snapshots, reports, dead letters on `herald.dlq`…).
    static func countProduced(_ records: [OutboxRecord]) {
        var counts: [String: Int] = [:]
        for record in records { counts[record.topic, default: 0] += 1 }
        for (topic, count) in counts { countProduced(count, topic: topic) }
    }

    /// `herald_records_produced_total{topic}` for records of one topic (the outbox's, or a changelog's).
    static func countProduced(_ count: Int, topic: String) {
        Counter(label: "herald_records_produced_total", dimensions: [("topic", topic)]).increment(by: count)
    }
}
