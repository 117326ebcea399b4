import Foundation

/// A window of the recipient's local time in which marketing sends are held or dropped (a project's default, or a
/// campaign's own). `from == to` is refused by the configuration; `from > to` spans midnight (21:00–08:00).
package struct QuietHours: Sendable, Equatable {
    package enum Action: String, Sendable, Equatable {
        /// Held on a durable timer until the window ends, then decided again (eligibility, expiry).
        case hold
        /// Not sent; counted as `quiet_hours`.
        case drop
    }

    package var from: LocalTime
    package var to: LocalTime
    package var action: Action

    package init(from: LocalTime, to: LocalTime, action: Action) {
        self.from = from
        self.to = to
        self.action = action
    }

    /// Whether a local time of day falls in the window (`from` included, `to` not).
    package func contains(_ time: LocalTime) -> Bool {
        from < to ? (from <= time && time < to) : (time >= from || time < to)
    }

    /// When the window that holds `instant` ends in `zone` (nil: `instant` is outside the window): the first instant
    /// after it at which the local clock shows `to` or a later time (WallClock's rule for the days clocks change).
    package func end(holding instant: Date, in zone: TimeZone) -> Date? {
        let (day, time) = WallClock.local(instant, in: zone)
        guard contains(time) else { return nil }
        // Before midnight in a window that spans it, the end is tomorrow's `to`.
        let endDay = from > to && time >= from ? day.adding(days: 1) : day
        return WallClock.instant(endDay, to, in: zone, after: instant)
            ?? WallClock.instant(endDay.adding(days: 1), to, in: zone, after: instant)
    }
}

/// What quiet hours a campaign follows: its project's, none, or its own.
package enum QuietHoursSetting: Sendable, Equatable {
    case project
    case off
    case own(QuietHours)
}
