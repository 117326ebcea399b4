/// What a campaign decided for a profile it considered: the `outcome` label of `herald_campaign_decisions_total`, which
/// the orchestrator counts and `herald status` reads back (sent, then the others by count).
package enum DecisionOutcome: String, Sendable, CaseIterable {
    /// A message rendered and handed to its channel's topic.
    case sent
    /// Waiting out the campaign's delay (a timer).
    case delayed
    /// A delayed trigger while the profile already waits for the same campaign.
    case alreadyWaiting = "already_waiting"
    /// Delayed sends withdrawn by one of the campaign's cancel events.
    case cancelled
    /// The campaign ended (`end_at`) before the decision.
    case expired
    /// The profile is not in the campaign's segment.
    case notInAudience = "not_in_audience"
    /// Re-eligibility says no (once per profile, or N per period).
    case notEligible = "not_eligible"
    /// The trigger names a profile that does not exist (any more).
    case noProfile = "no_profile"
    /// Held back by a global holdout group.
    case holdout
    /// The experiment's control group: nothing sent, counted as a decision.
    case control
    /// Dropped in the recipient's quiet hours (`action: drop`).
    case quietHours = "quiet_hours"
    /// Held until the recipient's quiet hours end (`action: hold`).
    case heldQuietHours = "held_quiet_hours"
    /// Over a frequency cap on every channel of the campaign.
    case frequencyCapped = "frequency_capped"
    /// A local-time schedule's zone whose moment passed while nothing ran.
    case missedLocalTime = "missed_local_time"
    /// The template decided not to send (`abort_message`).
    case aborted
    /// The template failed to render: a dead letter, never a half-rendered message.
    case renderFailed = "render_failed"
    /// A content card put into the profile's feed.
    case cardDelivered = "card_delivered"
    /// A card over its per-profile cap.
    case cardCapped = "card_capped"
    /// A card past its expiry.
    case cardExpired = "card_expired"
}
