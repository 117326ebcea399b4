import Shared

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
