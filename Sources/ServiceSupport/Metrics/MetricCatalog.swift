import Prometheus
import Shared

/// Every metric family a Herald service exposes on `/metrics`: its Prometheus type, its `HELP` text, the services that
/// expose it, and the series that exist from the start at zero. The code that counts keeps naming its metrics through
/// swift-metrics (`Counter(label:dimensions:)`); `CatalogMetricsFactory` gives each family its help text from here,
/// `ServiceMain` registers the zero series at start, and `MetricsExposition` announces (`# HELP`, `# TYPE`) the families
/// whose labels are not known before the first observation. The README's metrics table lists the same families
/// (`MetricsConformanceTests` holds the catalog to both).
package enum MetricCatalog {
    package enum Kind: Sendable, Equatable {
        case counter
        case gauge
        /// A swift-metrics `Recorder` that aggregates, with these buckets.
        case histogram(buckets: [Double])
        /// A swift-metrics `Timer`, with these buckets (exposed in seconds).
        case durations(buckets: [Duration])

        /// The `# TYPE` word.
        package var prometheusType: String {
            switch self {
            case .counter: "counter"
            case .gauge: "gauge"
            case .histogram, .durations: "histogram"
            }
        }
    }

    package enum Service: String, Sendable, CaseIterable {
        case ingest, orchestrator, notifier
    }

    package struct Family: Sendable {
        package var name: String
        package var kind: Kind
        package var help: String
        package var services: Set<Service>
        /// The label sets present from the start with the value 0 (`[[]]`: the family has no labels). Empty when the
        /// labels name what only exists at run time (a partition assigned, a campaign, a route, a provider's reason):
        /// the family is then announced by its `# HELP` and `# TYPE` lines until its first series.
        package var zeroSeries: [[(String, String)]]
    }

    /// The swift-metrics labels of the libraries Herald serves, and their Prometheus names (Hummingbird's
    /// `MetricsMiddleware`): counters end in `_total` and durations in `_seconds`, as Prometheus' conventions ask.
    package static let renamed: [String: String] = [
        "hb.requests": "http_server_requests_total",
        "hb.request.errors": "http_server_request_errors_total",
        "http.server.request.duration": "http_server_request_duration_seconds",
        "http.server.active_requests": "http_server_active_requests",
    ]

    package static func family(named name: String) -> Family? { byName[name] }

    package static func families(of service: Service) -> [Family] { all.filter { $0.services.contains(service) } }

    private static let byName = Dictionary(uniqueKeysWithValues: all.map { ($0.name, $0) })

    private static let everyService = Set(Service.allCases)
    private static let consumers: Set<Service> = [.orchestrator, .notifier]

    /// Zero series for every combination of the labels' values, in the order the code names the labels.
    private static func combinations(_ labels: [(String, [String])]) -> [[(String, String)]] {
        labels.reduce([[]]) { sets, label in sets.flatMap { set in label.1.map { set + [(label.0, $0)] } } }
    }

    private static let clientOps = IngestOp.allCases.filter { !IngestOp.internalOps.contains($0) }.map(\.rawValue)
    private static let channels = MessageChannel.allCases.map(\.rawValue)

    /// swift-prometheus' default buckets: durations from 5 ms to 10 s (Prometheus' client libraries' defaults), values
    /// from 5 to 10,000.
    static let defaults = PrometheusMetricsFactory(registry: PrometheusCollectorRegistry())

    package static let all: [Family] = [
        // HTTP, every service (Hummingbird's middleware, renamed).
        Family(
            name: "http_server_requests_total", kind: .counter,
            help: "HTTP requests answered, by route template (never an id), method and status code.",
            services: everyService, zeroSeries: []),
        Family(
            name: "http_server_request_errors_total", kind: .counter,
            help: "HTTP requests whose handler ended in an error, by route template, method and the status code answered.",
            services: everyService, zeroSeries: []),
        Family(
            name: "http_server_request_duration_seconds", kind: .durations(buckets: defaults.defaultDurationHistogramBuckets),
            help: "Time from a request's arrival to the end of its response, by route template, method and status code.",
            services: everyService, zeroSeries: []),
        Family(
            name: "http_server_active_requests", kind: .gauge,
            help: "HTTP requests being answered now, by method.",
            services: everyService, zeroSeries: []),

        // Every service.
        Family(
            name: "herald_ready", kind: .gauge,
            help: "1 when the instance is ready (every check of /health/ready passes), else 0; read at each scrape.",
            // Not 0 from the start: each scrape sets it before the exposition is written.
            services: everyService, zeroSeries: []),

        // Ingest.
        Family(
            name: "herald_ingest_writes_total", kind: .counter,
            help: "Writes by operation: accepted (the broker has them) or unavailable (answered 503, the client retries).",
            services: [.ingest], zeroSeries: combinations([("op", clientOps), ("outcome", ["accepted", "unavailable"])])),
        Family(
            name: "herald_ingest_overloaded_total", kind: .counter,
            help: "Requests answered 503 overloaded: HERALD_MAX_IN_FLIGHT_REQUESTS requests (or HERALD_MAX_IN_FLIGHT_BYTES of bodies) were in flight.",
            services: [.ingest], zeroSeries: [[]]),
        Family(
            name: "herald_ingest_rate_limited_total", kind: .counter,
            help: "Requests answered 429 rate_limited, by scope (address, key or installation).",
            services: [.ingest], zeroSeries: combinations([("scope", ["address", "key", "installation"])])),
        Family(
            name: "herald_orchestrator_overloaded_total", kind: .counter,
            help: "Apps' reads (in-app messages, content cards) answered 503 overloaded: HERALD_MAX_IN_FLIGHT_REQUESTS were in flight.",
            services: [.orchestrator], zeroSeries: [[]]),
        Family(
            name: "herald_orchestrator_rate_limited_total", kind: .counter,
            help: "Apps' reads answered 429 rate_limited, by scope (address or installation).",
            services: [.orchestrator], zeroSeries: combinations([("scope", ["address", "installation"])])),
        Family(
            name: "herald_ingest_adjustments_total", kind: .counter,
            help: "Values the Braze and Segment endpoints kept changed (cut to a limit, renamed), by code.",
            services: [.ingest], zeroSeries: []),
        Family(
            name: "herald_ingest_rejections_total", kind: .counter,
            help: "Values or operations refused by the rules, by code (the field is in the response).",
            services: [.ingest], zeroSeries: []),

        // The consumers (orchestrator and notifier).
        Family(
            name: "herald_records_consumed_total", kind: .counter,
            help: "Records read, by topic.",
            services: consumers, zeroSeries: []),
        Family(
            name: "herald_consumer_lag", kind: .gauge,
            help: "Records behind the end of the partition after the last applied batch (herald.config: the configuration's reader).",
            services: everyService, zeroSeries: []),
        Family(
            name: "herald_partitions_paused", kind: .gauge,
            help: "Partitions paused because their database fails; their records wait and each is tried again.",
            services: consumers, zeroSeries: [[]]),
        Family(
            name: "herald_partition_transitions_refused_total", kind: .counter,
            help: "Partition state changes the owner refused as not in its state machine (PartitionState.canMove): a defect, logged with the transition; always 0.",
            services: consumers, zeroSeries: [[]]),
        Family(
            name: "herald_consumer_batch_records", kind: .histogram(buckets: defaults.defaultValueHistogramBuckets),
            help: "Records per consumed batch; large batches mean the service ran behind and catches up.",
            services: consumers, zeroSeries: [[]]),
        Family(
            name: "herald_records_produced_total", kind: .counter,
            help: "Records the outboxes delivered, by topic (herald.dlq: dead letters).",
            services: consumers, zeroSeries: combinations([("topic", [HeraldTopic.dlq.name])])),
        Family(
            name: "herald_outbox_oldest_seconds", kind: .gauge,
            help: "How long the partition's oldest unproduced output has waited since a produce left it behind (0: none waits).",
            services: consumers, zeroSeries: []),
        Family(
            name: "herald_outputs_unproducible_total", kind: .counter,
            help: "Outputs the broker could never take (too large, invalid), each dead-lettered without its value, by topic.",
            services: consumers, zeroSeries: []),
        Family(
            name: "herald_restore_records_total", kind: .counter,
            help: "Changelog records applied while restoring the partition.",
            services: consumers, zeroSeries: []),
        Family(
            name: "herald_restore_lag", kind: .gauge,
            help: "Changelog records still to read while the partition restores.",
            services: consumers, zeroSeries: []),
        Family(
            name: "herald_restore_seconds", kind: .gauge,
            help: "How long the partition's last restore from its changelog took.",
            services: consumers, zeroSeries: []),

        // Orchestrator.
        Family(
            name: "herald_unsigned_writes_refused_total", kind: .counter,
            help: "App or website writes without the user's proof that would have reached a user through a linked installation, dead-lettered, by operation.",
            services: [.orchestrator], zeroSeries: combinations([("op", clientOps)])),
        Family(
            name: "herald_profile_limit_refusals_total", kind: .counter,
            help: "Additions to a profile refused by the project's profile_limits, by limit.",
            services: [.orchestrator], zeroSeries: combinations([("limit", ProfileLimits.Kind.allCases.map(\.rawValue))])),
        Family(
            name: "herald_update_only_dropped_total", kind: .counter,
            help: "Braze writes in update-only mode whose profile did not exist, dropped.",
            services: [.orchestrator], zeroSeries: [[]]),
        Family(
            name: "herald_segment_evaluations_total", kind: .counter,
            help: "Segment re-evaluations of a profile.",
            services: [.orchestrator], zeroSeries: [[]]),
        Family(
            name: "herald_segment_transitions_total", kind: .counter,
            help: "Segment entries and exits, by direction.",
            services: [.orchestrator], zeroSeries: combinations([("direction", ["entry", "exit"])])),
        Family(
            name: "herald_campaign_decisions_total", kind: .counter,
            help: "Campaign decisions, by project/campaign and outcome (\(DecisionOutcome.allCases.map(\.rawValue).joined(separator: ", "))).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_journey_entries_total", kind: .counter,
            help: "Journey entries, by project/journey and outcome (entered, not_in_audience, reentry_refused).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_journey_nodes_total", kind: .counter,
            help: "Arrivals of journey instances at a node, by project/journey and node.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_journey_timeouts_total", kind: .counter,
            help: "Journey waits that ended by their timeout, by project/journey and node.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_journey_ends_total", kind: .counter,
            help: "Journey instances ended, by project/journey and reason (completed, exit_rule, removed, lost, migrated_out).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_journey_migrations_total", kind: .counter,
            help: "Journey instances a migration map moved onto a new version (moved), or could not (refused: their node neither mapped nor in it), by project/journey.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_journey_waiting", kind: .gauge,
            help: "Journey instances waiting now at each delay, wait or update node, in the instance's partitions (counted every 10 s), by project/journey and node.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_journey_events_refused_total", kind: .counter,
            help: "Events journeys name that were over a profile's limit of events per second: applied to the profile, matched against no journey, by project.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_experiment_assignments_total", kind: .counter,
            help: "Profiles assigned a variant of a campaign's experiment, by project/campaign, experiment version and variant (control, a variant's id, or message): once per profile and version, the control group included.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_campaign_conversions_total", kind: .counter,
            help: "Profiles that reached a campaign's conversion within its window after their assignment, by project/campaign, experiment version (none without an experiment), variant and conversion (its index): once per profile.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_campaign_revenue_usd_total", kind: .counter,
            help: "Revenue in USD of the qualifying conversion events (purchases) within their window, by project/campaign, experiment version and variant.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_uninstall_probes_total", kind: .counter,
            help: "Uninstall-tracking silent pushes decided, by project/app (one a day per installation with a push token of an app with uninstall_tracking).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_uninstalls_total", kind: .counter,
            help: "UNINSTALL events recorded (a dead token of an app with uninstall_tracking), by project/app and detected_by (probe, campaign, other).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_campaign_uninstalls_total", kind: .counter,
            help: "Uninstalls a campaign's push found (its provider answered the token is dead), by project/campaign.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_campaign_engagements_total", kind: .counter,
            help: "Recipients' engagement with a campaign's messages, by project/campaign, channel and action (opened, clicked; for email also opened_machine, clicked_machine): push opens checked against the pushes delivered to the installation, email opens and clicks from the tracked pixel and links, once per send target.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_push_story_page_clicks_total", kind: .counter,
            help: "Taps on a Push Story's pages, by project/campaign and page id (only the ids of the campaign's stories), once per push and installation (the push's first click).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_geofence_transitions_total", kind: .counter,
            help: "Apps' geofence reports counted (each became a GEOFENCE_ENTER or GEOFENCE_EXIT event), by project/set and kind (enter, exit).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_geofence_syncs_total", kind: .counter,
            help: "Silent pushes telling an installation's app to sync its geofences (a location changed the nearest geofences it is given), by project/app.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_geofence_reports_ignored_total", kind: .counter,
            help: "Apps' geofence reports that count nowhere, by reason (unknown_geofence: no such geofence in the project's sets; not_for_app: a set the app does not monitor; cooldown: an entry sooner than the set's cooldown after the profile's last).",
            services: [.orchestrator], zeroSeries: combinations([("reason", IgnoredGeofenceReport.allCases.map(\.rawValue))])),
        Family(
            name: "herald_push_opens_ignored_total", kind: .counter,
            help: "Apps' reports of a notification opened that count nowhere, by reason (unknown_send: no push of that send was delivered to the installation; repeated: its open or button press counted already).",
            services: [.orchestrator], zeroSeries: combinations([("reason", IgnoredPushOpen.allCases.map(\.rawValue))])),
        Family(
            name: "herald_in_app_messages_total", kind: .counter,
            help: "In-app messages as the apps report them, by project/message and action (impression, click, button_click, dismiss).",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_installation_moves_refused_total", kind: .counter,
            help: "Identifications refused because the installation belongs to another user, who has not logged it out.",
            services: [.orchestrator], zeroSeries: [[]]),
        Family(
            name: "herald_in_app_reports_ignored_total", kind: .counter,
            help: "Apps' in-app reports that count nowhere, by reason (unknown_message, unknown_button, repeated, no_impression).",
            services: [.orchestrator], zeroSeries: combinations([("reason", IgnoredInAppReport.allCases.map(\.rawValue))])),
        Family(
            name: "herald_in_app_revalidations_total", kind: .counter,
            help: "In-app syncs that named the app's last tag (If-None-Match), by how they were answered: kept_tag (from the tag the partition kept, without reading) or read.",
            services: [.orchestrator], zeroSeries: combinations([("answered", ["kept_tag", "read"])])),
        Family(
            name: "herald_in_app_render_failed_total", kind: .counter,
            help: "In-app messages left out of a sync because their texts could not be rendered whole for the profile, by project/message.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_content_cards_total", kind: .counter,
            help: "Content cards by project/card and event: delivered into a feed, viewed, clicked and dismissed (each once per profile and card, whichever device reports it), capped (the profile's feed was full), expired (a card whose expires_at has passed), too_large (over 2 KB rendered) and render_failed.",
            services: [.orchestrator], zeroSeries: []),
        Family(
            name: "herald_content_card_reports_ignored_total", kind: .counter,
            help: "Apps' content card reports that count nowhere, by reason (unknown_card: no such card in the profile's feed; repeated: counted already; no_url: a click on a card without a URL; not_dismissible).",
            services: [.orchestrator], zeroSeries: combinations([("reason", IgnoredCardReport.allCases.map(\.rawValue))])),
        Family(
            name: "herald_quiet_window_held", kind: .gauge,
            help: "Sends held now in the instance's partitions until their recipients' quiet hours end (counted every 10 s).",
            services: [.orchestrator], zeroSeries: [[]]),
        Family(
            name: "herald_quiet_window_next_release_timestamp_seconds", kind: .gauge,
            help: "When the first held send goes, in Unix seconds (0: none is held).",
            services: [.orchestrator], zeroSeries: [[]]),
        Family(
            name: "herald_frequency_capped_total", kind: .counter,
            help: "Marketing messages not sent because the profile reached a frequency cap, by channel.",
            services: [.orchestrator], zeroSeries: combinations([("channel", channels)])),

        // Notifier.
        Family(
            name: "herald_notifier_overloaded_total", kind: .counter,
            help: "Requests to the notifier's endpoints answered 503 overloaded: HERALD_MAX_IN_FLIGHT_REQUESTS were in flight.",
            services: [.notifier], zeroSeries: [[]]),
        Family(
            name: "herald_deliveries_total", kind: .counter,
            help: "Provider outcomes by channel, outcome (sent, failed, suppressed) and reason.",
            services: [.notifier], zeroSeries: combinations([("channel", channels), ("outcome", ["sent"]), ("reason", [""])])),
        Family(
            name: "herald_delivery_retries_total", kind: .counter,
            help: "Delivery attempts retried, by channel and reason.",
            services: [.notifier], zeroSeries: []),
        Family(
            name: "herald_delivery_latency_seconds",
            // From tens of milliseconds to minutes (retries, an outage).
            kind: .durations(buckets: [
                .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60), .seconds(300), .seconds(1800),
            ]),
            help: "From the triggering write's arrival (or the end of a campaign's delay) to the provider's answer, by channel and project/campaign.",
            services: [.notifier], zeroSeries: []),
        Family(
            name: "herald_sms_segments_total", kind: .counter,
            help: "SMS segments sent, by encoding (what the provider bills).",
            services: [.notifier], zeroSeries: combinations([("encoding", SMSSegments.Encoding.allCases.map(\.rawValue))])),
        Family(
            name: "herald_webhook_attempts_total", kind: .counter,
            help: "Webhook calls, by project/endpoint (of the apps file) and status (2xx, 3xx, 4xx, 410, 5xx, none: no answer).",
            services: [.notifier], zeroSeries: []),
        Family(
            name: "herald_webhook_attempt_seconds",
            kind: .durations(buckets: [
                .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1),
                .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30), .seconds(60),
            ]),
            help: "How long a webhook call took, answered or not, by project/endpoint.",
            services: [.notifier], zeroSeries: []),
        Family(
            name: "herald_webhook_endpoint_disabled", kind: .gauge,
            help: "1 while a webhook endpoint is disabled (it answered 410 Gone; its messages are parked until `herald webhook replay`), by project/endpoint of the apps file.",
            services: [.notifier], zeroSeries: []),
        Family(
            name: "herald_erasures_total", kind: .counter,
            help: "Profiles erased: deletes applied (herald profile erase, the REST and Braze deletes), each with its receipt on herald.erasures.",
            services: [.orchestrator], zeroSeries: [[]]),
        Family(
            name: "herald_suppressed_addresses", kind: .gauge,
            help: "Addresses and numbers on the suppression lists (all projects), by channel: never sent to.",
            services: [.notifier], zeroSeries: combinations([("channel", SuppressionEntry.channels.map(\.rawValue))])),
        Family(
            name: "herald_sends_duplicate_total", kind: .counter,
            help: "Send requests seen again (a replay, a retried produce) and dropped by the ledger.",
            services: [.notifier], zeroSeries: [[]]),
        Family(
            name: "herald_inbox_entries_stored_total", kind: .counter,
            help: "Push inbox entries written.",
            services: [.notifier], zeroSeries: [[]]),
        Family(
            name: "herald_inbox_entries_purged_total", kind: .counter,
            help: "Push inbox entries purged by the retention.",
            services: [.notifier], zeroSeries: [[]]),
        Family(
            name: "herald_tracking_requests_total", kind: .counter,
            help: "Email open pixels and tracked links followed, by project/campaign, kind (open, click) and machine (no, or why a machine made it: apple_privacy_proxy, machine_user_agent, head_request, no_user_agent, too_soon); every request, not the first per target that the reports count.",
            services: [.notifier], zeroSeries: []),
        Family(
            name: "herald_tracking_refused_total", kind: .counter,
            help: "Open pixels and tracked links refused (404: a token this notifier did not make, or altered; by kind open or click), or followed past the dedupe window after their send (kind expired: answered, not reported).",
            services: [.notifier], zeroSeries: combinations([("kind", ["open", "click", "expired"])])),
        Family(
            name: "herald_tracking_reports_lost_total", kind: .counter,
            help: "Tracked opens and clicks whose report the broker did not take (the recipient got the page all the same).",
            services: [.notifier], zeroSeries: [[]]),
    ]
}
