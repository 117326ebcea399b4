import Foundation
import GRDB
import OrchestratorDomain
import PartitionStore
import Shared

/// What a read of an installation's in-app messages found in this instance's partitions.
enum InAppRead: Sendable {
    case answer(InAppEligibility.Answer)
    /// No partition here holds the installation under that profile: an identify or logout not applied yet, another
    /// user's installation, or a partition of another instance.
    case notHeld
    /// The profile is here, but the app's write the request names is not applied yet.
    case writePending
    /// The configuration is not read yet.
    case notReady
    /// Another instance owns the profile's partition (or none does, during a rebalance).
    case notOwner(partition: Int32)
}

extension OrchestratorPartitions {
    /// The in-app messages for the installation under the profile `key`, once the app's write `after` (a record id the
    /// ingest returned) is applied there.
    func inAppMessages(key: String, installationID: String, after writeID: String?, now: Date) async throws -> InAppRead {
        guard let rules else { return .notReady }
        let config = rules.config
        let project = ProfileKey.project(of: key)
        let partition = KeyPartitioner.partition(of: key, partitions: Int32(rules.partitions))
        guard owner.isRunning(partition), let database = await owner.openDatabases.first(where: { $0.partition == partition })?.database
        else { return .notOwner(partition: partition) }
        return try await database.read { db -> InAppRead in
            guard let answer = try InAppEligibility(db: db, config: config, now: now).answer(key: key, installationID: installationID)
            else { return .notHeld }
            if let writeID, try !RecordDedupe.applied(db, scope: project, id: "\(key) \(writeID)") { return .writePending }
            return .answer(answer)
        }
    }
}
