import ArgumentParser
import Foundation
import PartitionStore
import OrchestratorDomain
import Shared

/// The operator's command line. Subcommands grow with the product (`config`, `status`, `topics`, `tail`, `lag`,
/// `profile`, `send-test`, `campaign`, `template`, `webhook`, `suppression`).
@main
struct Herald: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "herald",
        abstract: "Operate a Herald installation.",
        subcommands: [
            ConfigCommand.self, StatusCommand.self, TopicsCommand.self, TailCommand.self, LagCommand.self, ProfileCommand.self,
            SendTestCommand.self, CampaignCommand.self, TemplateCommand.self, WebhookCommand.self,
            SuppressionCommand.self, JourneyCommand.self,
        ])

    /// ArgumentParser's entry point, with errors as one line: `herald: <message> (herald <command> --help)` instead
    /// of the message, the usage and a pointer to the help. Help, `--version` and exit codes pass through unchanged.
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            let code = exitCode(for: error)
            let message = self.message(for: error).split(separator: "\n").first.map(String.init) ?? ""
            guard code != .success, !(error is ExitCode), !message.isEmpty else { exit(withError: error) }
            // Every command and subcommand name, read from the commands themselves (a new group needs no entry here).
            let names = Set(
                Herald.configuration.subcommands.flatMap { command in
                    [command._commandName] + command.configuration.subcommands.map { $0._commandName }
                })
            let words = arguments.prefix { !$0.hasPrefix("-") }.prefix(2).filter(names.contains)
            let help = (["herald"] + words + ["--help"]).joined(separator: " ")
            FileHandle.standardError.write(Data("herald: \(message) (\(help))\n".utf8))
            Foundation.exit(code.rawValue)
        }
    }
}

struct ProfileCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "profile", abstract: "Read, export and erase profiles.", subcommands: [Show.self, ExportCommand.self, EraseCommand.self])

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a profile as JSON from the orchestrator's data directory.",
            discussion: """
                Reads the partition databases (read-only) of the orchestrator's data directory: run it on the \
                orchestrator's host or volume, or on a copy. Exit status 1 when no partition holds the profile. \
                The same view is served by the orchestrator at GET /v1/profiles/{project}/{custom_id}.
                """)

        @Argument(help: "The project id.")
        var project: String

        @Argument(help: "The custom user ID. Omit it with --installation to show an anonymous installation's profile.")
        var customID: String?

        @Option(help: "Show the anonymous profile of this installation ID instead.")
        var installation: String?

        @Option(help: "The orchestrator's data directory (default: $HERALD_DATA_DIR, else data/orchestrator).")
        var dataDir: String?

        func validate() throws {
            guard (customID == nil) != (installation == nil) else {
                throw ValidationError("name either a custom ID or --installation")
            }
        }

        func run() throws {
            let directory = DataDirectory.path(dataDir)
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue
            else {
                throw CleanExit.message("herald: no data directory at \(directory) (set --data-dir or HERALD_DATA_DIR)")
            }
            let key = installation.map { ProfileKey.home(project, $0) } ?? ProfileKey.profile(project, customID ?? "")
            guard let json = try ProfileView.find(directory: directory, key: key) else {
                FileHandle.standardError.write(Data("herald: no profile \(key) in \(directory)\n".utf8))
                throw ExitCode(1)
            }
            print(String(decoding: json.serialized, as: UTF8.self))
        }
    }
}
