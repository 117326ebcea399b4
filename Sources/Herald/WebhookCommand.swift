import ArgumentParser
import Foundation
import Shared

/// `herald webhook list|replay`: the webhook endpoints' states on `herald.webhooks` (docs/webhooks.md, "Disabled
/// endpoints").
struct WebhookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook", abstract: "See and enable webhook endpoints.", subcommands: [List.self, Replay.self])

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print the endpoints a notifier disabled or an operator enabled, as JSON lines (herald.webhooks).",
            discussion: "An endpoint that was never disabled is not listed: it is enabled.")

        @OptionGroup var cluster: ClusterOptions

        func run() async throws {
            for state in try await WebhookCommand.states(try cluster.client()).values.sorted(by: { $0.key < $1.key }) {
                print(String(decoding: try Wire.encode(state), as: UTF8.self))
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable a disabled endpoint: its parked messages are sent, oldest first.",
            discussion: """
                Writes the endpoint's state `enabled` to herald.webhooks. Every notifier makes the endpoint's parked \
                messages (those that came while it was disabled, and the one its 410 answered) pending again, in the \
                order they came, each with its own webhook-id as before. A message whose endpoint answers 410 again \
                is parked again. Follow the calls with: herald tail herald.deliveries --follow.
                """)

        @OptionGroup var cluster: ClusterOptions

        @Argument(help: "The endpoint, as PROJECT/ENDPOINT (e.g. demo/crm).")
        var endpoint: String

        func validate() throws {
            let parts = endpoint.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count == 2, parts.allSatisfy({ !$0.isEmpty }) else {
                throw ValidationError("expected PROJECT/ENDPOINT, such as demo/crm, found \"\(endpoint)\"")
            }
        }

        func run() async throws {
            let client = try cluster.client()
            let parts = endpoint.split(separator: "/").map(String.init)
            let before = try await WebhookCommand.states(client)[endpoint]
            let state = WebhookEndpointState(project: parts[0], endpoint: parts[1], disabled: false, reason: "replay", by: "herald", at: Date())
            try await CompactedTopicReader.produce(.webhooks, key: state.key, value: try Wire.encode(state), client: client)
            if before?.disabled == true {
                print("enabled \(endpoint) (disabled since \(WireTime.format(before!.at)) by \(before!.by)): its parked messages are sent, oldest first")
            } else {
                print("enabled \(endpoint) (it was not disabled): any message parked for it is sent")
            }
        }
    }

    /// Each endpoint's latest state, read from the beginning of `herald.webhooks`.
    static func states(_ client: KafkaClientSettings) async throws -> [String: WebhookEndpointState] {
        try await CompactedTopicReader.latest(.webhooks, client: client).compactMapValues { try? Wire.decode(WebhookEndpointState.self, from: $0) }
    }
}
