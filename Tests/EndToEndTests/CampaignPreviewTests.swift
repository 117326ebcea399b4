import Foundation
import HeraldTestSupport
import Testing

/// `herald campaign schedule` on the days clocks change, judged by Python's zoneinfo (the IANA database of this
/// machine) applying Herald's documented rule: a wall-clock time is the first instant at which the zone's clock shows
/// it or a later one (docs/campaigns.md, "Local time").
@Suite("herald campaign schedule against zoneinfo", .timeLimit(.minutes(5)))
struct CampaignPreviewTests {
    static let judge = #"""
        import sys
        from datetime import date, datetime, time, timedelta, timezone
        from zoneinfo import ZoneInfo, available_timezones

        def local(instant, zone):
            return instant.astimezone(zone).replace(tzinfo=None)

        def first(naive, zone, after=None):
            """The first instant (after `after`) at which the clock of `zone` shows `naive` or a later time."""
            shown = []
            for fold in (0, 1):
                instant = naive.replace(tzinfo=zone, fold=fold).astimezone(timezone.utc)
                if local(instant, zone) == naive and (after is None or instant > after):
                    shown.append(instant)
            if shown:
                return min(shown)
            # Skipped (or already past): the first instant whose wall clock reaches it, by bisection over a day.
            low = naive.replace(tzinfo=timezone.utc) - timedelta(days=1)
            high = naive.replace(tzinfo=timezone.utc) + timedelta(days=1)
            if after is not None: low = max(low, after)
            while high - low > timedelta(seconds=1):
                middle = low + (high - low) / 2
                if local(middle, zone) >= naive: high = middle
                else: low = middle
            return high.replace(microsecond=0)

        def stamp(instant):
            return instant.strftime("%Y-%m-%dT%H:%M:%S.000Z")

        day = date.fromisoformat(sys.argv[1])
        send, start, end = (time.fromisoformat(t) for t in sys.argv[2:5])
        problems, compared, known = [], 0, available_timezones()
        for line in sys.stdin.read().splitlines()[1:]:
            name, _, herald_send, _, herald_from, herald_to = line.split(" ")
            if name not in known: continue
            zone = ZoneInfo(name)
            quiet_from = first(datetime.combine(day, start), zone)
            end_day = day + timedelta(days=1) if start > end else day
            quiet = (stamp(quiet_from), stamp(first(datetime.combine(end_day, end), zone, after=quiet_from)))
            if first(datetime.combine(end_day, end), zone) <= quiet_from:
                quiet = ("-", "-")  # the clocks skip the whole window that day
            expected = (stamp(first(datetime.combine(day, send), zone)),) + quiet
            compared += 1
            if (herald_send, herald_from, herald_to) != expected:
                problems.append(f"{name}: herald {herald_send} {herald_from} {herald_to}, zoneinfo {' '.join(expected)}")
        print("\n".join(problems[:20]) or f"{compared} zones alike")
        sys.exit(1 if problems or compared < 300 else 0)
        """#

    /// The days clocks change in America, Europe and Australia in 2026, and an ordinary one.
    @Test("a local-time schedule and quiet hours on the days clocks change, in every zone, as zoneinfo places them", arguments: [
        "2026-03-08", "2026-03-29", "2026-04-05", "2026-10-04", "2026-10-25", "2026-11-01", "2026-06-15",
    ])
    func againstZoneinfo(day: String) async throws {
        let python = judgePython()
        let directory = try scratchDirectory("herald-preview")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // 02:30 is skipped when clocks spring forward and shown twice when they fall back, in most zones that change.
        try """
            kind: project
            id: demo
            quiet_hours: {from: "01:30", to: "02:45", action: hold}
            ---
            kind: segment
            id: everyone
            project: demo
            condition: c.x exists or not c.x exists
            ---
            kind: template
            id: t
            project: demo
            channel: sms
            variants: {default: {text: Hi}}
            ---
            kind: campaign
            id: night
            project: demo
            trigger: {schedule: {at: "02:30", timezone: local, on: "\(day)"}}
            audience: everyone
            messages: [{channel: sms, template: t}]
            """.write(toFile: directory + "/demo.yaml", atomically: true, encoding: .utf8)
        let herald = binDirectory.appendingPathComponent("herald").path
        let (status, preview) = try await runCommand(herald, ["campaign", "schedule", "demo", "night", "--day", day, "--config", directory])
        #expect(status == 0, "\(preview.prefix(500))")
        let file = directory + "/preview.txt"
        try preview.write(toFile: file, atomically: true, encoding: .utf8)
        let (judged, verdict) = try await runCommand(
            "/bin/sh", ["-c", "\"$0\" -c \"$1\" \"$2\" 02:30 01:30 02:45 < \"$3\"", python, Self.judge, day, file])
        #expect(judged == 0, "\(verdict)")
    }
}
