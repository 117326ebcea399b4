import Logging
import ServiceLifecycle
import ServiceSupport
import Shared

enum Notifier {
    /// The send topics and the contacts they are co-partitioned with: range assignment gives one member the same
    /// partition number of each.
    static let topics: [HeraldTopic] = [.contacts, .sendsPush, .sendsEmail, .sendsSMS]

    /// The notifier: a member of its consumer group on `herald.contacts` and `herald.sends.*`, plus the ops endpoints.
    /// Delivery comes with the notifier issue; until then records are counted and no offset is stored or committed.
    static func buildServices(_ context: ServiceContext<StatefulServiceConfig>) async throws -> [any Service] {
        context.logger.info(
            "libcurl",
            metadata: ["version": .string(CurlInfo.version), "http2": .stringConvertible(CurlInfo.supportsHTTP2)])
        if !CurlInfo.supportsHTTP2 {
            context.logger.warning("libcurl lacks HTTP/2: APNs delivery will not work")
        }
        return try ServiceMain.consumingServices(context, service: "notifier", topics: topics)
    }
}
