import Foundation
import GRDB
import PartitionStore
import Shared

/// `deferred_records`: records an earlier version kept for later (ops it did not implement yet), applied when a
/// version that knows them opens the partition.
struct DeferredRecordsTable {
    let db: Database

    init(_ db: Database) { self.db = db }

    /// Every record kept, in order, as the partition's records.
    func all(partition: Int32) throws -> [KafkaRecord] {
        try Row.fetchAll(db, sql: "SELECT topic, offset, key, value FROM deferred_records ORDER BY topic, offset").map { row in
            let key: String? = row["key"]
            let value: Data? = row["value"]
            return KafkaRecord(
                topic: row["topic"], partition: partition, offset: row["offset"], key: key.map { Array($0.utf8) },
                value: value.map { Array($0) })
        }
    }

    func deleteAll() throws {
        try db.execute(sql: "DELETE FROM deferred_records")
    }
}
