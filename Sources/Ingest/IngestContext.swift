import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceSupport
import Shared

/// The request context: Hummingbird's, plus the request id that follows a write into Kafka (`herald-request-id`).
struct IngestContext: RequestContext, RemoteAddressRequestContext, InFlightBudgetContext {
    var coreContext: CoreRequestContextStorage
    var requestID = ""
    /// A random id of this request, unique across requests and instances; writes without an id get `<serverID>:<i>`.
    let serverID = UUID().uuidString.lowercased()
    /// The connection: closed when a body does not arrive whole in time.
    let channel: any Channel
    /// The peer (operator endpoints without `HERALD_OPERATOR_TOKEN` answer loopback peers only).
    var remoteAddress: SocketAddress? { channel.remoteAddress }
    /// `Prefer: handling=strict` (RFC 7240): a request with any problem is refused whole instead of stored in part.
    var strict = false
    /// Its share of the in-flight byte budget: an inflated body grows it (`IngestAPI.body`).
    var inFlight: InFlightReservation?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}
