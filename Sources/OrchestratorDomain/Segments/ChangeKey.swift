import Shared

/// A namespace of the segment language's paths (docs/segments.md).
enum ProfileNamespace: String, Sendable, CaseIterable {
    /// `b.`: natives (`b.language`, `b.last_visit_date`…).
    case native = "b"
    /// `c.`: custom attributes.
    case custom = "c"
    /// `e.`: event aggregates (`e.PURCHASED.count`).
    case event = "e"
    /// `t.`: the events' tags.
    case tags = "t"
    case email, sms, push

    /// Whether a segment depends on single fields of it (`c.plan`) rather than on the whole namespace.
    var hasFields: Bool { self == .native || self == .custom || self == .event }
}

/// What a write changed in a profile, as segments depend on it: one field of a namespace with fields (`c.plan`,
/// `e.PURCHASED`, `b.language`), a whole namespace (`b`, `t`, `email`, `sms`, `push`), or everything (an identity move
/// or a deletion). A change to a namespace affects every segment reading a field of it (`EngagementRules.segments`).
enum ChangeKey: Hashable, Sendable, CustomStringConvertible {
    case field(ProfileNamespace, String)
    case namespace(ProfileNamespace)
    case everything

    static func native(_ name: String) -> ChangeKey { .field(.native, name) }
    static func custom(_ name: String) -> ChangeKey { .field(.custom, name) }
    static func event(_ name: String) -> ChangeKey { .field(.event, name) }

    /// The change key a segment path depends on (nil: a namespace this build does not read).
    init?(dependencyOf path: SegmentPath) {
        guard let namespace = ProfileNamespace(rawValue: path.namespace) else { return nil }
        if namespace.hasFields, let name = path.names.first {
            self = .field(namespace, name)
        } else {
            self = .namespace(namespace)
        }
    }

    /// The namespace a field change also counts as.
    var namespace: ChangeKey? {
        if case .field(let namespace, _) = self { return .namespace(namespace) }
        return nil
    }

    /// `c.plan`, `b`, `*` (logs, tests).
    var description: String {
        switch self {
        case .field(let namespace, let name): "\(namespace.rawValue).\(name)"
        case .namespace(let namespace): namespace.rawValue
        case .everything: "*"
        }
    }
}
