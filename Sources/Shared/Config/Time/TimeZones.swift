import Foundation
import Synchronization

/// Time zones by IANA name, made once per process (Foundation builds each from ICU's data).
package enum TimeZones {
    private static let cache = Mutex<[String: TimeZone]>([:])
    package static let utc = TimeZone(identifier: "UTC")!

    /// The zone named `name`, or UTC when Foundation does not know the name (names are checked against tzdata's list
    /// where they enter: the ingest and the configuration).
    package static func named(_ name: String) -> TimeZone {
        if let zone = cache.withLock({ $0[name] }) { return zone }
        let zone = TimeZone(identifier: name) ?? utc
        cache.withLock { $0[name] = zone }
        return zone
    }
}
