import Foundation

/// A scheduled campaign at a wall-clock time: each member of the audience at `time` in their own time zone (`zone`
/// nil), or everyone at `time` in one named zone; on `firstDay`, then every `everyDays` days (docs/campaigns.md,
/// "Local-time schedules").
package struct LocalSchedule: Sendable, Equatable {
    /// What happens to a member whose time on the day had passed when the day was prepared (the campaign started late).
    package enum Missed: String, Sendable, Equatable {
        /// A one-off: at the same time the next day. A recurring schedule: at its next run.
        case next
        /// Not sent this time.
        case skip
    }

    package var time: LocalTime
    /// An IANA zone for everyone, or nil: each member's own time zone.
    package var zone: String?
    package var firstDay: LocalDay
    package var everyDays: Int?
    package var missed: Missed

    package init(time: LocalTime, zone: String?, firstDay: LocalDay, everyDays: Int?, missed: Missed) {
        self.time = time
        self.zone = zone
        self.firstDay = firstDay
        self.everyDays = everyDays
        self.missed = missed
    }

    /// The time zones' offsets from UTC span UTC−12 to UTC+14.
    static let westmost: TimeInterval = -12 * 3600
    static let eastmost: TimeInterval = 14 * 3600

    /// When `time` on `day` comes first anywhere the schedule reaches (UTC+14 for `local`).
    package func earliest(_ day: LocalDay) -> Date {
        if let zone { return instant(day, in: TimeZones.named(zone)) }
        return Date(timeIntervalSince1970: wall(day) - Self.eastmost)
    }

    /// When `time` on `day` comes last (UTC−12 for `local`).
    package func latest(_ day: LocalDay) -> Date {
        if let zone { return instant(day, in: TimeZones.named(zone)) }
        return Date(timeIntervalSince1970: wall(day) - Self.westmost)
    }

    /// `time` on `day` in `zone` (WallClock's rule for the days clocks change).
    package func instant(_ day: LocalDay, in zone: TimeZone) -> Date {
        WallClock.instant(day, time, in: zone) ?? Date(timeIntervalSince1970: wall(day))
    }

    /// The occurrence (part of the send id) of the run on `day`: the same day gives the same sends.
    package func occurrence(_ day: LocalDay) -> String { "schedule \(day) \(time) \(zone ?? "local")" }

    private func wall(_ day: LocalDay) -> TimeInterval { Double(day.daysSinceEpoch * 86_400 + time.minutes * 60) }
}
