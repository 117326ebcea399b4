import ServiceLifecycle
import ServiceSupport
import Shared

enum Orchestrator {
    static let topics: [HeraldTopic] = [.ingest, .deliveries]

    /// The orchestrator: a member of its consumer group on `herald.ingest` and `herald.deliveries`, plus the ops
    /// endpoints. Processing of the records (profiles in per-partition SQLite) comes with the profiles issue; until
    /// then records are counted and no offset is stored or committed, so the code that will process them reads them all.
    static func buildServices(_ context: ServiceContext<StatefulServiceConfig>) async throws -> [any Service] {
        try ServiceMain.consumingServices(context, service: "orchestrator", topics: topics)
    }
}
