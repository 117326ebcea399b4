import Foundation

/// A time of day on a wall clock, `HH:MM` (00:00 to 23:59), as minutes since midnight.
package struct LocalTime: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var minutes: Int

    package init(minutes: Int) { self.minutes = minutes }

    /// Exactly `HH:MM`, two digits each: `9:00`, `24:00` and `09:00:00` are refused.
    package init?(_ text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":") else { return nil }
        func digit(_ byte: UInt8) -> Int? { (48...57).contains(byte) ? Int(byte - 48) : nil }
        guard let h1 = digit(bytes[0]), let h2 = digit(bytes[1]), let m1 = digit(bytes[3]), let m2 = digit(bytes[4]) else {
            return nil
        }
        let hour = h1 * 10 + h2
        let minute = m1 * 10 + m2
        guard hour < 24, minute < 60 else { return nil }
        minutes = hour * 60 + minute
    }

    package var description: String {
        let hour = minutes / 60, minute = minutes % 60
        return "\(hour < 10 ? "0" : "")\(hour):\(minute < 10 ? "0" : "")\(minute)"
    }

    package static func < (a: LocalTime, b: LocalTime) -> Bool { a.minutes < b.minutes }
}

/// A calendar date on a wall clock (proleptic Gregorian), counted as days since 1970-01-01.
package struct LocalDay: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var daysSinceEpoch: Int

    package init(daysSinceEpoch: Int) { self.daysSinceEpoch = daysSinceEpoch }

    /// From year, month (1–12) and day (1–31); nil when the date does not exist (2026-02-30).
    package init?(year: Int, month: Int, day: Int) {
        guard (1...12).contains(month), (1...31).contains(day) else { return nil }
        let days = Self.days(year: year, month: month, day: day)
        let back = Self.civil(days)
        guard back.year == year, back.month == month, back.day == day else { return nil }
        daysSinceEpoch = days
    }

    /// Exactly `YYYY-MM-DD`.
    package init?(_ text: String) {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0].count == 4, parts[1].count == 2, parts[2].count == 2,
            parts.allSatisfy({ $0.allSatisfy { $0.isASCII && $0.isNumber } }),
            let year = Int(parts[0]), let month = Int(parts[1]), let day = Int(parts[2])
        else { return nil }
        self.init(year: year, month: month, day: day)
    }

    package var civil: (year: Int, month: Int, day: Int) { Self.civil(daysSinceEpoch) }

    package func adding(days: Int) -> LocalDay { LocalDay(daysSinceEpoch: daysSinceEpoch + days) }

    package var description: String {
        let (year, month, day) = civil
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)-\(two(month))-\(two(day))"
    }

    package static func < (a: LocalDay, b: LocalDay) -> Bool { a.daysSinceEpoch < b.daysSinceEpoch }

    // The calendar arithmetic WireTime uses (H. Hinnant's days_from_civil and civil_from_days).
    static func days(year: Int, month: Int, day: Int) -> Int {
        Int(WireTime.days(year: Int64(year), month: Int64(month), day: Int64(day)))
    }

    static func civil(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let (year, month, day) = WireTime.civil(days: Int64(days))
        return (Int(year), Int(month), Int(day))
    }
}

/// Wall-clock arithmetic in a time zone, with one rule for the days its clocks change (docs/campaigns.md,
/// "Local time"): a wall-clock moment is **the first instant at which the zone's clock shows that time or a later
/// one**. So a time the clocks skip (02:30 when Paris springs forward from 02:00 to 03:00) is the instant of the jump
/// (03:00 local), and a time the clocks show twice (02:30 when they fall back) is the first of the two, or the second
/// when `after` is between them.
package enum WallClock {
    /// The local day and time of day (to the minute, rounded down) of `instant` in `zone`.
    package static func local(_ instant: Date, in zone: TimeZone) -> (day: LocalDay, time: LocalTime) {
        let offset = zone.secondsFromGMT(for: instant)
        let seconds = Int((instant.timeIntervalSince1970).rounded(.down)) + offset
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        return (LocalDay(daysSinceEpoch: days), LocalTime(minutes: (seconds - days * 86_400) / 60))
    }

    /// The first instant later than `after` (or at all, when nil) at which `zone`'s clock shows `time` on `day`, or
    /// the instant its clock jumps past it when it skips it. Nil only when `after` is past both occurrences.
    package static func instant(_ day: LocalDay, _ time: LocalTime, in zone: TimeZone, after: Date? = nil) -> Date? {
        let wall = Double(day.daysSinceEpoch * 86_400 + time.minutes * 60)
        // The offsets on either side: no zone changes its clocks twice within two days.
        let before = zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall - 86_400))
        let later = zone.secondsFromGMT(for: Date(timeIntervalSince1970: wall + 86_400))
        var candidates: [Date] = []
        for offset in Set([before, later]) {
            let instant = Date(timeIntervalSince1970: wall - Double(offset))
            if zone.secondsFromGMT(for: instant) == offset { candidates.append(instant) }
        }
        candidates.sort()
        if candidates.isEmpty {
            // Skipped: the first instant whose local time is at or past `wall` (the clocks' jump), to the second.
            var low = wall - Double(max(before, later)), high = wall - Double(min(before, later))
            while high - low > 1 {
                let middle = ((low + high) / 2).rounded(.down)
                let local = middle + Double(zone.secondsFromGMT(for: Date(timeIntervalSince1970: middle)))
                if local >= wall { high = middle } else { low = middle }
            }
            candidates = [Date(timeIntervalSince1970: high)]
        }
        guard let after else { return candidates.first }
        return candidates.first { $0 > after }
    }
}
