import Foundation
import GRDB
import Shared

/// Times are stored as their wire text (`WireTime`: ISO 8601 in UTC with milliseconds), which sorts as it reads; a
/// record type reads them as `Date`. A stored text that is not a time is an error naming its column, never a silent nil.
extension Row {
    /// A nullable time column.
    package func time(_ column: String) throws -> Date? {
        guard let text = self[column] as String? else { return nil }
        guard let date = WireTime.parse(text) else { throw DatabaseError(message: "\(column): not a time: \(text)") }
        return date
    }

    /// A `NOT NULL` time column.
    package func requiredTime(_ column: String) throws -> Date {
        guard let date = try time(column) else { throw DatabaseError(message: "\(column): no time") }
        return date
    }
}
