import Foundation

/// A project's named places (`places` in the project file, docs/segments.md, "Location"): points that segment
/// conditions measure from (`location within 5km of "paris-store"`), written once and named where they are used.
package struct Place: Sendable, Equatable {
    package var latitude: Double
    package var longitude: Double

    package init(latitude: Double, longitude: Double) {
        (self.latitude, self.longitude) = (latitude, longitude)
    }
}

extension ConfigReader {
    /// `places: {<id>: {latitude, longitude}}`: each id an identifier, each coordinate a number in range.
    mutating func places(_ node: ConfigNode) -> [String: Place] {
        guard case .object(let members) = node.value else {
            fail(node, "places: expected a mapping from a place's id to {latitude, longitude}, found \(node.typeName)")
            return [:]
        }
        var places: [String: Place] = [:]
        for (id, item) in members {
            guard Self.isIdentifier(id) else {
                fail(item, "places: \"\(id)\" is not an identifier (letters, digits, _, - and ., at most 128)")
                continue
            }
            rejectUnknown(item, allowed: ["latitude", "longitude", "name"], "places.\(id)")
            if let degrees = numbers(item, "places.\(id)", Self.coordinates) { places[id] = Place(latitude: degrees[0], longitude: degrees[1]) }
        }
        return places
    }

    /// A point's fields: a latitude and a longitude in degrees.
    static let coordinates: [(name: String, range: ClosedRange<Double>, expected: String)] = [
        ("latitude", -90...90, "a number of degrees from -90 to 90"), ("longitude", -180...180, "a number of degrees from -180 to 180"),
    ]

    /// The numbers `fields` of the mapping `item` (each required, within its range), in order; nil when one is missing
    /// or out of range, each such named under `path`.
    mutating func numbers(
        _ item: ConfigNode, _ path: String, _ fields: [(name: String, range: ClosedRange<Double>, expected: String)]
    ) -> [Double]? {
        var numbers: [Double] = []
        for (name, range, expected) in fields {
            guard let value = item[name] else {
                fail(item, "\(path): missing `\(name)`")
                continue
            }
            guard case .number(let number) = value.value, range.contains(number) else {
                fail(value, "\(path).\(name): expected \(expected), found \(value.scalarText ?? value.typeName)")
                continue
            }
            numbers.append(number)
        }
        return numbers.count == fields.count ? numbers : nil
    }
}

extension HeraldConfiguration {
    /// Each segment's named places given their centres from its project's `places`; a place the project does not
    /// name is an issue (and its circle matches nobody).
    mutating func resolvePlaces() -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        for (key, segment) in segments.sorted(by: { $0.key < $1.key }) {
            let places = (projects[segment.project]?.places ?? [:]).mapValues { (latitude: $0.latitude, longitude: $0.longitude) }
            let (resolved, unknown) = segment.condition.resolvingPlaces(places)
            segments[key]?.condition = resolved
            for place in unknown {
                issues.append(
                    ConfigIssue(
                        file: segment.origin.file, line: segment.origin.line,
                        message: "segment \(segment.id): condition: no place \"\(place)\" in project \(segment.project) (its `places`)"))
            }
        }
        return issues
    }
}
