import Foundation

/// Times on the wire: ISO-8601 in UTC with milliseconds, e.g. `2026-11-22T11:40:54.123Z`.
///
/// Every record carries several, and the orchestrator formats a few per write: they are written and read by hand
/// (civil-date arithmetic, no formatter, no `tm`). What is read is RFC 3339's `date-time` exactly (the API's schema
/// says `format: date-time`), plus Braze's offsets without a colon (`-0800`).
package enum WireTime {
    private static let millisecondsPerDay: Int64 = 86_400_000

    /// Rounds to the nearest millisecond (a formatter would truncate 0.123 stored as 0.12299… to .122).
    package static func format(_ date: Date) -> String {
        let milliseconds = milliseconds(date)
        let days = milliseconds.floorDivided(by: millisecondsPerDay)
        let (year, month, day) = civil(days: days)
        var rest = milliseconds - days * millisecondsPerDay
        guard (0...9999).contains(year) else { return formatWide(milliseconds) }
        let millisecond = rest % 1000
        rest /= 1000
        let second = rest % 60
        rest /= 60
        let minute = rest % 60
        let hour = rest / 60
        return String(unsafeUninitializedCapacity: 24) { buffer in
            var index = 0
            /// Writes `value` in `width` digits, then `separator`.
            func put(_ value: Int64, _ width: Int, _ separator: UInt8) {
                var value = value
                for position in stride(from: index + width - 1, through: index, by: -1) {
                    buffer[position] = UInt8(truncatingIfNeeded: 48 + value % 10)
                    value /= 10
                }
                buffer[index + width] = separator
                index += width + 1
            }
            put(year, 4, UInt8(ascii: "-"))
            put(month, 2, UInt8(ascii: "-"))
            put(day, 2, UInt8(ascii: "T"))
            put(hour, 2, UInt8(ascii: ":"))
            put(minute, 2, UInt8(ascii: ":"))
            put(second, 2, UInt8(ascii: "."))
            put(millisecond, 3, UInt8(ascii: "Z"))
            return index
        }
    }

    /// Years outside 0…9999, which no real record carries but a test or a bad clock may.
    private static func formatWide(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds.floorDivided(by: 1000))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int64, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let date = "\(pad(Int64(parts.tm_year) + 1900, 4))-\(pad(Int64(parts.tm_mon) + 1, 2))-\(pad(Int64(parts.tm_mday), 2))"
        let time = "\(pad(Int64(parts.tm_hour), 2)):\(pad(Int64(parts.tm_min), 2)):\(pad(Int64(parts.tm_sec), 2))"
        return "\(date)T\(time).\(pad(milliseconds - milliseconds.floorDivided(by: 1000) * 1000, 3))Z"
    }

    /// The UTC day of a time, `YYYY-MM-DD` (the date part of its text): occurrences that happen once a day are named by it.
    package static func day(_ date: Date) -> String { String(format(date).prefix(10)) }

    /// Whether two times are the same instant as stored and sent (to the millisecond): a time read back from its text
    /// and the time it was written from compare equal here, where `==` on their `Date`s may not.
    package static func same(_ one: Date?, _ other: Date?) -> Bool {
        one.map(milliseconds) == other.map(milliseconds)
    }

    /// Milliseconds since 1970, rounded as `format` rounds them: two times with the same text have the same count. A
    /// time beyond ±275,760 years (ECMAScript's range), or not a number, which a computation from data could make, is
    /// held at the nearest end (0 for not a number) rather than trapping in the arithmetic that follows.
    private static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        guard !value.isNaN else { return 0 }
        return Int64(min(max(value, -Double(millisecondsLimit)), Double(millisecondsLimit)))
    }

    private static let millisecondsLimit: Int64 = 8_640_000_000_000_000

    /// A time as it reads back from its text (to the millisecond): comparisons with stored times that must agree with
    /// the texts' order use it.
    package static func rounded(_ date: Date) -> Date { parse(format(date)) ?? date }


    /// `YYYY-MM-DDTHH:MM:SS`, an optional fraction of any number of digits, then `Z` or an offset `±HH:MM` (or
    /// `±HHMM`); `t` and `z` may be lowercase (RFC 3339, 5.6). Real dates only (no February 30); the hour 00–23, the
    /// minute 00–59, the second 00–60 (a leap second reads as the next minute's first). nil for anything else.
    package static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse(bytes: $0) }
    }

    private static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        guard bytes.count >= 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] | 0x20 == UInt8(ascii: "t"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ from: Int, _ width: Int) -> Int64? {
            guard from + width <= bytes.count else { return nil }
            var value: Int64 = 0
            for index in from..<(from + width) {
                let digit = bytes[index] &- 48
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
            let minute = number(14, 2), let second = number(17, 2), (1...12).contains(month), day >= 1,
            day <= daysIn(month: month, year: year), hour < 24, minute < 60, second <= 60
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            var value: Int64 = 0
            var scale: Int64 = 1
            while index < bytes.count, bytes[index] &- 48 < 10 {
                // Nanoseconds are all a Date keeps: further digits are read, not counted.
                if index - start < 9 {
                    value = value * 10 + Int64(bytes[index] &- 48)
                    scale *= 10
                }
                index += 1
            }
            guard index > start else { return nil }
            fraction = Double(value) / Double(scale)
        }
        guard index < bytes.count else { return nil }
        var offset: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard let hours = number(index + 1, 2), hours < 24 else { return nil }
            index += 3
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") { index += 1 }
            guard let minutes = number(index, 2), minutes < 60 else { return nil }
            index += 2
            offset = sign * (hours * 3600 + minutes * 60)
        default:
            return nil
        }
        guard index == bytes.count else { return nil }
        let seconds = days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian; H. Hinnant's civil_from_days).
    static func civil(days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days since 1970-01-01 of a civil date (days_from_civil).
    static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension Int64 {
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

extension DefaultStringInterpolation {
    /// A time as the wire writes it, inside a name made of several parts (an occurrence, a timer's ref, a log value):
    /// `"schedule \(wire: occurrence)"`. A `Date` interpolated plainly reads as Foundation's description instead.
    package mutating func appendInterpolation(wire date: Date) {
        appendLiteral(WireTime.format(date))
    }
}
