import ArgumentParser
import Foundation
import Shared

/// `herald suppression list|add|remove`: the projects' suppression lists on `herald.suppressions` (docs/data-rights.md,
/// "The suppression list").
struct SuppressionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "suppression", abstract: "See and change the addresses and numbers never sent to.",
        subcommands: [List.self, Add.self, Remove.self])

    /// `PROJECT/CHANNEL` and an address, checked as the ingest checks them.
    struct Target: ParsableArguments {
        @Argument(help: "The project and the channel, as PROJECT/email or PROJECT/sms (e.g. demo/email).")
        var list: String

        @Argument(help: "The email address or the phone number (E.164, +33612345678).")
        var address: String

        func validate() throws { _ = try parsed() }

        func parsed() throws -> (project: String, channel: MessageChannel, address: String) {
            let parts = list.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let channel = MessageChannel(rawValue: parts[1]),
                SuppressionEntry.channels.contains(channel)
            else { throw ValidationError("expected PROJECT/email or PROJECT/sms, such as demo/email, found \"\(list)\"") }
            do {
                let address = channel == .email ? try Rules.email(address) : try Rules.phone(address)
                return (parts[0], channel, address)
            } catch {
                throw ValidationError("\(address): \(error.message)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the suppressed addresses as JSON lines (masked: the list keeps only a digest of each).")

        @OptionGroup var cluster: ClusterOptions

        @Option(help: "Only this project's.")
        var project: String?

        func run() async throws {
            let entries = try await CompactedTopicReader.latest(.suppressions, client: try cluster.client())
                .compactMapValues { try? Wire.decode(SuppressionEntry.self, from: $0) }
            for (_, entry) in entries.sorted(by: { $0.key < $1.key }) where project == nil || entry.project == project {
                print(String(decoding: try Wire.encode(entry), as: UTF8.self))
            }
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Never send to an address or number again (until `herald suppression remove`).",
            discussion: """
                Writes the address's digest to herald.suppressions. Every notifier suppresses it at the next attempt \
                (`suppressed_address`), for every profile that holds it, transactional messages included, whatever \
                the profile's subscription says: no key, public or not, lifts it.
                """)

        @OptionGroup var cluster: ClusterOptions
        @OptionGroup var target: Target

        @Option(help: "Why (kept with the entry).")
        var reason = "operator"

        func run() async throws {
            let (project, channel, address) = try target.parsed()
            let entry = SuppressionEntry(project: project, channel: channel, address: address, reason: reason, by: "herald", at: Date())
            try await CompactedTopicReader.produce(.suppressions, key: entry.key, value: try Wire.encode(entry), client: try cluster.client())
            print("suppressed \(entry.hint) on \(project)/\(channel.rawValue)")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Send to an address or number again.")

        @OptionGroup var cluster: ClusterOptions
        @OptionGroup var target: Target

        func run() async throws {
            let (project, channel, address) = try target.parsed()
            let client = try cluster.client()
            let key = SuppressionEntry.key(project: project, channel: channel, digest: SuppressionEntry.digest(channel: channel, address: address))
            let held = try await CompactedTopicReader.latest(.suppressions, client: client)[key] != nil
            try await CompactedTopicReader.produce(.suppressions, key: key, value: nil, client: client)
            let hint = SuppressionEntry.hint(channel: channel, address: address)
            print(held ? "removed \(hint) from \(project)/\(channel.rawValue)" : "\(hint) was not on \(project)/\(channel.rawValue)'s list")
        }
    }
}
