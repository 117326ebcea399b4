import Foundation
import Shared

/// Who sent a request: the connection's peer; when the peer is one of the operator's proxies (`HERALD_TRUSTED_PROXIES`),
/// the right-most address of `X-Forwarded-For` that is not one of them (each proxy appends the address it received
/// the request from; what a client writes to the left is its own to invent).
package struct ClientAddress: Sendable {
    package let trustedProxies: [AddressRange]

    package init(trustedProxies: [AddressRange]) { self.trustedProxies = trustedProxies }

    package func of(peer: String?, forwardedFor: [String]) -> String {
        guard let peer else { return "unknown" }
        guard isTrusted(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }
        for hop in hops.reversed() where !hop.isEmpty {
            guard AddressRange.parse(hop) != nil else { return peer }  // not an address: trust nothing further left
            if !isTrusted(hop) { return hop }
        }
        return peer
    }

    private func isTrusted(_ address: String) -> Bool { trustedProxies.contains { $0.contains(address) } }
}
