import Foundation
import GRDB
import Metrics
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
        try await withPartition(of: key) { database, rules in
            try await Self.inAppAnswer(
                database, tags: database.readTags, rules: rules, key: key, installationID: installationID, after: writeID,
                ifNoneMatch: ifNoneMatch, now: now)
        }
    }

    /// The content card feed of the installation under the profile `key`, since `cursor`, once the app's write
    /// `after` is applied there.
    func contentCards(
        key: String, installationID: String, after writeID: String?, since cursor: ContentCardFeed.Cursor?, now: Date
    ) async throws -> AppRead<JSONValue> {
        try await withPartition(of: key) { database, rules in
            let config = rules.config
            return try await Self.read(database, key: key, after: writeID) { db in
                try ContentCardFeed(db: db, config: config, now: now).answer(key: key, installationID: installationID, since: cursor)
            }
        }
    }

    /// The geofences of the installation of `app` under the profile `key` (docs/geofences.md), once the app's write
    /// `after` is applied there.
    func geofences(key: String, installationID: String, app: String, after writeID: String?, ifNoneMatch: String?) async throws
        -> AppRead<GeofenceSync.Answer>
    {
        try await withPartition(of: key) { database, rules in
            let config = rules.config
            return try await Self.read(database, key: key, after: writeID) { db in
                try GeofenceSync(db: db, config: config).answer(key: key, installationID: installationID, app: app) { tag in
                    EntityTags.names(tag, in: ifNoneMatch)
                }
            }
        }
    }

    /// Reads the profile's partition, if this instance runs it.
    private func withPartition<Answer: Sendable>(
        of key: String, _ read: (PartitionDatabase, EngagementRules) async throws -> AppRead<Answer>
    ) async throws -> AppRead<Answer> {
        guard let rules else { return .notReady }
        let partition = KeyPartitioner.partition(of: key, partitions: Int32(rules.partitions))
        guard owner.isRunning(partition), let database = await owner.openDatabases.first(where: { $0.partition == partition })?.database
        else { return .notOwner(partition: partition) }
        return try await read(database, rules)
    }

    /// The in-app answer for the installation under the profile `key` in its partition's `database`. A revalidation
    /// (`If-None-Match`) with no write to wait for is answered from the partition's kept tag (`tags`, the database's
    /// `readTags`) when it is the app's, without reading: a tag is dropped as soon as the profile's rows or the
    /// configuration change, or time alone may change the answer. Otherwise the answer is read, and its tag kept for
    /// the next revalidation.
    static func inAppAnswer(
        _ database: PartitionDatabase, tags: ReadTagCache?, rules: EngagementRules, key: String, installationID: String,
        after writeID: String?, ifNoneMatch: String?, now: Date
    ) async throws -> AppRead<InAppEligibility.Answer> {
        let name = "in-app \(installationID)"
        if writeID == nil, let ifNoneMatch, let kept = tags?.tag(key, name, generation: rules.generation, at: now),
            EntityTags.names(kept, in: ifNoneMatch)
        {
            answeredFromKeptTag.increment()
            return .answer(.unchanged(kept))
        }
        if ifNoneMatch != nil { answeredByReading.increment() }
        // Taken before the read begins: a change of the profile committed meanwhile keeps this answer's tag out.
        let stamp = tags?.stamp(key)
        let config = rules.config
        let read = try await read(database, key: key, after: writeID) { db in
            try InAppEligibility(db: db, config: config, now: now).answer(key: key, installationID: installationID) { tag in
                EntityTags.names(tag, in: ifNoneMatch)
            }
        }
        if case .answer(let answer) = read, let tags, let stamp, let until = answer.holdsUntil {
            tags.put(key, name, ReadTagCache.Tag(etag: answer.etag, until: until, generation: rules.generation), stamp: stamp)
        }
        return read
    }

    private static let answeredFromKeptTag = Counter(label: "herald_in_app_revalidations_total", dimensions: [("answered", "kept_tag")])
    private static let answeredByReading = Counter(label: "herald_in_app_revalidations_total", dimensions: [("answered", "read")])

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
