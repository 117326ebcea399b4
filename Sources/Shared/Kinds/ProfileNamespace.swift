/// A namespace of the segment language's paths (docs/segments.md).
package enum ProfileNamespace: String, Sendable, CaseIterable {
    /// `b.`: natives (`b.language`, `b.last_visit_date`…).
    case native = "b"
    /// `c.`: custom attributes.
    case custom = "c"
    /// `e.`: event aggregates (`e.PURCHASED.count`).
    case event = "e"
    /// `t.`: the events' tags.
    case tags = "t"
    case email, sms, push
    /// `location.`: the last known location of the profile (its most recent installation's): `location.latitude`,
    /// `location.longitude`, `location.accuracy`, `location.at`; and `location within R of …` (docs/segments.md).
    case location

    /// Whether a segment depends on single fields of it (`c.plan`) rather than on the whole namespace.
    package var hasFields: Bool { self == .native || self == .custom || self == .event }
}
