import Foundation
import Shared

/// Whether an email open or click was made by a machine rather than its recipient (docs/measurement.md, "Machine opens
/// and clicks"): Apple Mail Privacy Protection fetches every image of every message when it is delivered, and link
/// scanners (Microsoft Safe Links, Proofpoint, Mimecast, Barracuda) follow every link before the recipient sees it,
/// so raw counts overstate both. The rules, first match wins:
/// 1. a `HEAD` request (scanners check links without loading them);
/// 2. no user agent, or one of a known scanner, crawler or HTTP library;
/// 3. an open by Apple's proxy: the bare user agent `Mozilla/5.0`, or an address of Apple's 17.0.0.0/8;
/// 4. within `window` of the email leaving the notifier (no person reads and clicks that fast; scanners do).
/// Everything else is the recipient's, Gmail's and Yahoo's image proxies included: they fetch when the message is
/// opened.
enum MachineEngagement {
    static let window: TimeInterval = 10

    /// Lower-cased pieces of user agents that only machines send.
    static let machineAgents = [
        "bot", "spider", "crawl", "scanner", "urlscan", "preview", "proofpoint", "mimecast", "barracuda", "safelinks",
        "symantec", "forcepoint", "fortiguard", "trendmicro", "sophos", "cisco", "python-", "curl/", "wget/",
        "go-http-client", "java/", "okhttp", "apache-httpclient", "libwww-perl", "headlesschrome", "phantomjs",
    ]

    static let apple = AddressRange("17.0.0.0/8")!

    enum Kind: String, Sendable { case open, click }

    /// Why a request is a machine's; nil when it is the recipient's.
    static func reason(
        _ kind: Kind, method: String, userAgent: String?, address: String?, secondsSinceSend: TimeInterval
    ) -> String? {
        if method == "HEAD" { return "head_request" }
        let agent = (userAgent ?? "").trimmingCharacters(in: .whitespaces)
        if agent.isEmpty { return "no_user_agent" }
        let lower = agent.lowercased()
        if machineAgents.contains(where: lower.contains) { return "machine_user_agent" }
        if kind == .open {
            if agent == "Mozilla/5.0" { return "apple_privacy_proxy" }
            if let address, apple.contains(address) { return "apple_privacy_proxy" }
        }
        if secondsSinceSend < window { return "too_soon" }
        return nil
    }
}
