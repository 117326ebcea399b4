import Foundation
import GRDB

/// The orchestrator's data directory read from outside the service (the `herald` command, beside it or on a copy):
/// each partition database opened read-only, whatever the partition count.
package enum DataDirectory {
    /// A command's `--data-dir`, else `$HERALD_DATA_DIR` (the service's own setting), else `data/orchestrator`.
    package static func path(_ option: String?) -> String {
        option ?? ProcessInfo.processInfo.environment["HERALD_DATA_DIR"] ?? "data/orchestrator"
    }

    /// The first answer `read` gives from a partition database of `directory`, in partition-file order.
    package static func first<T>(in directory: String, _ read: (Database) throws -> T?) throws -> T? {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for file in files.sorted() where file.hasPrefix("partition-") && file.hasSuffix(".sqlite") {
            var configuration = Configuration()
            configuration.readonly = true
            let queue = try DatabaseQueue(path: (directory as NSString).appendingPathComponent(file), configuration: configuration)
            if let answer = try queue.read(read) { return answer }
        }
        return nil
    }
}
