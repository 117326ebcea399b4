import Foundation
import GRDB
import OrchestratorDomain
import PartitionStore
import ServiceSupport
import Shared

extension OrchestratorPartitions: AppReadSource {
    /// The in-app messages for the installation under the profile `key`, once the app's write `after` (a record id the
    /// ingest returned) is applied there.
    func inAppMessages(key: String, installationID: String, after writeID: String?, ifNoneMatch: String?, now: Date) async throws
        -> AppRead<InAppEligibility.Answer>
    {
        try await readProfile(key: key, after: writeID) { db, config in
            try InAppEligibility(db: db, config: config, now: now).answer(key: key, installationID: installationID) { tag in
                EntityTags.names(tag, in: ifNoneMatch)
            }
        }
    }

    /// The content card feed of the installation under the profile `key`, since `cursor`, once the app's write
    /// `after` is applied there.
    func contentCards(
        key: String, installationID: String, after writeID: String?, since cursor: ContentCardFeed.Cursor?, now: Date
    ) async throws -> AppRead<JSONValue> {
        try await readProfile(key: key, after: writeID) { db, config in
            try ContentCardFeed(db: db, config: config, now: now).answer(key: key, installationID: installationID, since: cursor)
        }
    }

    /// Reads the profile's partition, if this instance runs it: `answer` is nil when the profile does not hold the
    /// installation.
    private func readProfile<Answer: Sendable>(
        key: String, after writeID: String?, _ answer: @escaping @Sendable (Database, HeraldConfiguration) throws -> Answer?
    ) async throws -> AppRead<Answer> {
        guard let rules else { return .notReady }
        let config = rules.config
        let partition = KeyPartitioner.partition(of: key, partitions: Int32(rules.partitions))
        guard owner.isRunning(partition), let database = await owner.openDatabases.first(where: { $0.partition == partition })?.database
        else { return .notOwner(partition: partition) }
        return try await Self.read(database, key: key, after: writeID) { db in try answer(db, config) }
    }

    /// Reads the profile `key` in `database`: `answer` is nil when the profile does not hold the installation; a write
    /// `after` not applied there yet is `writePending`.
    static func read<Answer: Sendable>(
        _ database: PartitionDatabase, key: String, after writeID: String?, _ answer: @escaping @Sendable (Database) throws -> Answer?
    ) async throws -> AppRead<Answer> {
        let project = ProfileKey.project(of: key)
        return try await database.read { db -> AppRead<Answer> in
            guard let found = try answer(db) else { return .notHeld }
            if let writeID, try !RecordDedupe.applied(db, scope: project, id: "\(key) \(writeID)") { return .writePending }
            return .answer(found)
        }
    }
}
