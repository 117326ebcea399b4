import Foundation
import Shared
import Testing

/// Local time and quiet hours, with the days clocks change in Paris and New York (2026).
@Suite("Wall clock and quiet hours")
struct WallClockTests {
    static func utc(_ text: String) -> Date { WireTime.parse(text)! }
    static func day(_ text: String) -> LocalDay { LocalDay(text)! }
    static func time(_ text: String) -> LocalTime { LocalTime(text)! }
    static let paris = TimeZones.named("Europe/Paris")
    static let newYork = TimeZones.named("America/New_York")
    static let tokyo = TimeZones.named("Asia/Tokyo")

    @Test("times of day and dates: both sides of each limit")
    func parsing() {
        #expect(LocalTime("00:00")?.minutes == 0 && LocalTime("23:59")?.minutes == 1439)
        for bad in ["24:00", "23:60", "9:00", "09:0", "09:00:00", "0a:00", "", " 9:00", "-1:00"] {
            #expect(LocalTime(bad) == nil, "\(bad)")
        }
        #expect(LocalTime("08:05")?.description == "08:05")
        #expect(LocalDay("2028-02-29")?.description == "2028-02-29")
        for bad in ["2026-02-29", "2026-13-01", "2026-00-10", "2026-1-01", "26-01-01", "2026-04-31"] {
            #expect(LocalDay(bad) == nil, "\(bad)")
        }
        // Round trips across the epoch and far dates (Hinnant's algorithms against Foundation's calendar, which is
        // Julian before 1582: from 1614 on).
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZones.utc
        for days in stride(from: -130_000, through: 800_000, by: 997) {
            let date = Date(timeIntervalSince1970: Double(days) * 86_400)
            let parts = calendar.dateComponents([.year, .month, .day], from: date)
            let local = LocalDay(daysSinceEpoch: days).civil
            #expect(local.year == parts.year && local.month == parts.month && local.day == parts.day, "\(days)")
            #expect(LocalDay(year: local.year, month: local.month, day: local.day)?.daysSinceEpoch == days)
        }
    }

    @Test(
        "a wall-clock time is the first instant the zone's clock shows it or a later one",
        arguments: [
            // An ordinary day: one answer.
            ("Europe/Paris", "2026-06-01", "09:00", nil, "2026-06-01T07:00:00Z"),
            ("America/New_York", "2026-01-15", "09:00", nil, "2026-01-15T14:00:00Z"),
            // Spring forward: 02:00 → 03:00. 02:30 does not exist: the instant of the jump.
            ("Europe/Paris", "2026-03-29", "02:30", nil, "2026-03-29T01:00:00Z"),
            ("Europe/Paris", "2026-03-29", "03:00", nil, "2026-03-29T01:00:00Z"),
            ("Europe/Paris", "2026-03-29", "01:59", nil, "2026-03-29T00:59:00Z"),
            ("America/New_York", "2026-03-08", "02:30", nil, "2026-03-08T07:00:00Z"),
            // Fall back: 02:30 in Paris (01:30 in New York) is shown twice: the first, or the second after the first.
            ("Europe/Paris", "2026-10-25", "02:30", nil, "2026-10-25T00:30:00Z"),
            ("Europe/Paris", "2026-10-25", "02:30", "2026-10-25T00:45:00Z", "2026-10-25T01:30:00Z"),
            ("America/New_York", "2026-11-01", "01:30", nil, "2026-11-01T05:30:00Z"),
            ("America/New_York", "2026-11-01", "01:30", "2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z"),
        ] as [(String, String, String, String?, String)])
    func instants(zone: String, day: String, time: String, after: String?, expected: String) {
        let found = WallClock.instant(Self.day(day), Self.time(time), in: TimeZones.named(zone), after: after.map(Self.utc))
        #expect(found == Self.utc(expected), "\(zone) \(day) \(time): \(found.map(WireTime.format) ?? "nil")")
    }

    @Test("an instant's local day and time")
    func local() {
        let (day, time) = WallClock.local(Self.utc("2026-03-29T00:59:59Z"), in: Self.paris)
        #expect(day.description == "2026-03-29" && time.description == "01:59")
        let (after, jumped) = WallClock.local(Self.utc("2026-03-29T01:00:00Z"), in: Self.paris)
        #expect(after.description == "2026-03-29" && jumped.description == "03:00")
        let (westDay, westTime) = WallClock.local(Self.utc("2026-01-01T03:00:00Z"), in: Self.newYork)
        #expect(westDay.description == "2025-12-31" && westTime.description == "22:00")
    }

    @Test(
        "quiet hours spanning midnight end at the next 08:00 local, in three time zones",
        arguments: [
            // Paris (UTC+1 in November): 21:00–08:00 local is 20:00–07:00 UTC.
            ("Europe/Paris", "2026-11-24T19:59:00Z", nil),
            ("Europe/Paris", "2026-11-24T20:00:00Z", "2026-11-25T07:00:00Z"),
            ("Europe/Paris", "2026-11-24T23:30:00Z", "2026-11-25T07:00:00Z"),  // after local midnight
            ("Europe/Paris", "2026-11-25T06:59:59Z", "2026-11-25T07:00:00Z"),
            ("Europe/Paris", "2026-11-25T07:00:00Z", nil),
            // New York (UTC−5): 21:00 local is 02:00 UTC the next day.
            ("America/New_York", "2026-11-25T01:59:00Z", nil),
            ("America/New_York", "2026-11-25T02:00:00Z", "2026-11-25T13:00:00Z"),
            ("America/New_York", "2026-11-25T12:59:00Z", "2026-11-25T13:00:00Z"),
            // Tokyo (UTC+9): 21:00 local is 12:00 UTC.
            ("Asia/Tokyo", "2026-11-24T12:00:00Z", "2026-11-24T23:00:00Z"),
            ("Asia/Tokyo", "2026-11-24T23:00:00Z", nil),
        ] as [(String, String, String?)])
    func spanningMidnight(zone: String, at: String, end: String?) {
        let window = QuietHours(from: Self.time("21:00"), to: Self.time("08:00"), action: .hold)
        let found = window.end(holding: Self.utc(at), in: TimeZones.named(zone))
        #expect(found == end.map(Self.utc), "\(zone) \(at): \(found.map(WireTime.format) ?? "outside")")
    }

    @Test(
        "a window ending at 02:30 on the days clocks change",
        arguments: [
            // Spring forward: 02:30 never shows; the window ends when the clocks jump to 03:00.
            ("Europe/Paris", "2026-03-28T23:00:00Z", "2026-03-29T01:00:00Z"),
            ("America/New_York", "2026-03-08T05:00:00Z", "2026-03-08T07:00:00Z"),
            // Fall back: the first 02:30 ends it, unless the send came after it (in the hour shown twice).
            ("Europe/Paris", "2026-10-24T23:00:00Z", "2026-10-25T00:30:00Z"),
            ("Europe/Paris", "2026-10-25T01:10:00Z", "2026-10-25T01:30:00Z"),
        ] as [(String, String, String)])
    func daylightSaving(zone: String, at: String, end: String) {
        let window = QuietHours(from: Self.time("22:00"), to: Self.time("02:30"), action: .hold)
        let found = window.end(holding: Self.utc(at), in: TimeZones.named(zone))
        #expect(found == Self.utc(end), "\(zone) \(at): \(found.map(WireTime.format) ?? "outside")")
        // At the end, the window is over.
        #expect(window.end(holding: Self.utc(end), in: TimeZones.named(zone)) == nil)
    }

    @Test("a window within one day (13:00–14:00)")
    func sameDay() {
        let window = QuietHours(from: Self.time("13:00"), to: Self.time("14:00"), action: .drop)
        #expect(window.end(holding: Self.utc("2026-11-24T11:59:00Z"), in: Self.paris) == nil)
        #expect(window.end(holding: Self.utc("2026-11-24T12:00:00Z"), in: Self.paris) == Self.utc("2026-11-24T13:00:00Z"))
        #expect(window.end(holding: Self.utc("2026-11-24T13:00:00Z"), in: Self.paris) == nil)
    }
}
