import Foundation
import Shared
import Synchronization

/// The port the process's HTTP server listens on, once it does (`HERALD_HTTP_PORT=0` picks one), and the address the
/// instance tells the others of its service (`OwnershipAnnouncer`).
package enum ListeningPort {
    private static let port = Mutex<Int?>(nil)

    static func set(_ value: Int) { port.withLock { $0 = value } }

    /// Waits until the server listens.
    package static func wait() async -> Int {
        while true {
            if let value = port.withLock({ $0 }) { return value }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// `HERALD_ADVERTISED_URL`, else `http://<host>:<port>`: the listening host, or the machine's name when it listens
    /// on every address.
    package static func advertisedURL(_ common: CommonConfig, advertised: String?) async -> String {
        if let advertised { return advertised }
        let port = await wait()
        let any = ["0.0.0.0", "::", "[::]", ""].contains(common.httpHost)
        let host = any ? ProcessInfo.processInfo.hostName : common.httpHost
        return "http://\(host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host):\(port)"
    }
}
