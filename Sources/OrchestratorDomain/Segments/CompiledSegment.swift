import Shared

/// A segment with the change keys it depends on.
struct CompiledSegment: Sendable {
    let definition: SegmentDefinition
    let dependencies: Set<ChangeKey>

    init(_ definition: SegmentDefinition) {
        self.definition = definition
        dependencies = Set(definition.condition.paths.compactMap(ChangeKey.init(dependencyOf:)))
    }

    var key: String { definition.key }

    /// Whether the condition reads custom attributes (a backfill reads them for a whole chunk of profiles).
    var readsCustomAttributes: Bool {
        dependencies.contains { if case .field(.custom, _) = $0 { true } else { false } }
    }

    /// Which change keys affect which of `segments` (positions): each dependency, and the namespace of each field
    /// dependency (a change to the whole namespace affects it). Built once per configuration, so that a write looks
    /// up its change keys instead of testing every segment's dependencies.
    static func dependents(_ segments: [CompiledSegment]) -> [ChangeKey: [Int]] {
        var index: [ChangeKey: [Int]] = [:]
        for (position, segment) in segments.enumerated() {
            var keys: Set<ChangeKey> = []
            for dependency in segment.dependencies {
                keys.insert(dependency)
                if let namespace = dependency.namespace { keys.insert(namespace) }
            }
            for key in keys { index[key, default: []].append(position) }
        }
        return index
    }
}
