import ArgumentParser
import Foundation
import Shared

/// `herald campaign schedule`: what a campaign's time-dependent decisions come to on a day, from the configuration
/// directory alone (docs/campaigns.md, "Previewing a day").
struct CampaignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "campaign", abstract: "Preview a campaign's timing; report on its experiment.",
        subcommands: [Schedule.self, CampaignReportCommand.self])

    struct Schedule: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print, per time zone, when a campaign's local-time schedule sends and when its quiet hours hold, on a day.",
            discussion: """
                Reads DIR as `herald config validate` does. For each time zone (--zone, repeatable; by default the \
                IANA zones this machine knows), one line: the zone, the instant of the schedule's time that day (a \
                time the clocks skip is the instant they jump; a time they show twice, the first), and the quiet \
                hours that start that day (from, to). Instants are UTC, as the orchestrator decides them; a \
                time-zone library can check them (CLITests compares them with Python's zoneinfo).
                """)

        @Argument(help: "The project id.")
        var project: String

        @Argument(help: "The campaign id.")
        var campaign: String

        @Option(help: "The day, YYYY-MM-DD.")
        var day: String

        @Option(help: "The configuration directory.")
        var config: String

        @Option(name: .customLong("zone"), help: "An IANA time zone (repeatable; default: every zone known here).")
        var zones: [String] = []

        func validate() throws {
            guard LocalDay(day) != nil else { throw ValidationError("--day: expected YYYY-MM-DD, found \"\(day)\"") }
            for zone in zones where TimeZone(identifier: zone) == nil {
                throw ValidationError("--zone: \"\(zone)\" is not an IANA time zone name")
            }
        }

        func run() throws {
            let loaded = try ConfigDirectory.load(config)
            guard let definition = loaded.configuration.campaigns["\(project)/\(campaign)"] else {
                throw ValidationError("no campaign \(campaign) in project \(project) in \(config)")
            }
            let localDay = LocalDay(day)!
            var schedule: LocalSchedule?
            if case .localSchedule(let local) = definition.trigger { schedule = local }
            let quiet = loaded.configuration.quietHours(of: definition)
            guard schedule != nil || quiet != nil else {
                throw ValidationError("campaign \(campaign) has no local-time schedule and no quiet hours: nothing depends on the time zone")
            }
            print(Self.header(definition, schedule: schedule, quiet: quiet, day: localDay))
            let names = schedule?.zone.map { [$0] } ?? (zones.isEmpty ? TimeZone.knownTimeZoneIdentifiers.sorted() : zones)
            for name in names {
                print(Self.line(zone: name, schedule: schedule, quiet: quiet, day: localDay))
            }
        }

        static func header(_ campaign: CampaignDefinition, schedule: LocalSchedule?, quiet: QuietHours?, day: LocalDay) -> String {
            var parts = ["campaign \(campaign.key) on \(day)"]
            if let schedule { parts.append("schedule \(schedule.time) \(schedule.zone ?? "local")") }
            if let quiet { parts.append("quiet hours \(quiet.from)-\(quiet.to) (\(quiet.action.rawValue))") }
            return parts.joined(separator: " · ")
        }

        /// `<zone> send <UTC instant> quiet <UTC from> <UTC to>`: the schedule's instant that day, and the quiet window
        /// that opens that day (closing the next day when it spans midnight).
        static func line(zone name: String, schedule: LocalSchedule?, quiet: QuietHours?, day: LocalDay) -> String {
            let zone = TimeZones.named(name)
            var line = name
            if let schedule { line += " send \(wire: schedule.instant(day, in: zone))" }
            if let quiet {
                // `- -`: the clocks skip the whole window that day (Antarctica/Troll on 2026-03-29 for 01:30-02:45).
                var window = "- -"
                // The end is the one the orchestrator releases a send held at the window's start at.
                if let from = WallClock.instant(day, quiet.from, in: zone), let to = quiet.end(holding: from, in: zone) {
                    window = "\(wire: from) \(wire: to)"
                }
                line += " quiet \(window)"
            }
            return line
        }
    }
}
