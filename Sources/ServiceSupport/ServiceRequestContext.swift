import Foundation
import Hummingbird
import NIOCore

/// The request context of the orchestrator's and the notifier's HTTP endpoints: Hummingbird's, plus the peer's
/// address (operator endpoints without `HERALD_OPERATOR_TOKEN` answer loopback peers only) and connection.
package struct ServiceRequestContext: RequestContext, RemoteAddressRequestContext, InFlightBudgetContext {
    package var coreContext: CoreRequestContextStorage
    package let remoteAddress: SocketAddress?
    /// The connection: a body that does not arrive within its deadline closes it (`BodyDeadline`).
    package let channel: any Channel
    /// Its share of the in-flight byte budget (`InFlightLimitMiddleware`).
    package var inFlight: InFlightReservation?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }
}

extension ServiceRequestContext {
    /// A path parameter, percent-decoded (as it came when it does not decode; empty when absent).
    package func decodedParameter(_ name: String) -> String {
        let raw = parameters.get(name) ?? ""
        return raw.removingPercentEncoding ?? raw
    }
}

extension SocketAddress {
    /// 127.0.0.0/8, ::1, or an IPv4-mapped loopback (::ffff:127.x.x.x); a Unix socket is local too.
    package var isLoopback: Bool {
        switch self {
        case .v4: return ipAddress?.hasPrefix("127.") == true
        case .v6:
            guard let ip = ipAddress?.lowercased() else { return false }
            return ip == "::1" || ip.hasPrefix("::ffff:127.")
        case .unixDomainSocket: return true
        }
    }
}
