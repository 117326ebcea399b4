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
            var degrees: [Double] = []
            for (name, limit) in [("latitude", 90.0), ("longitude", 180.0)] {
                guard let value = item[name] else {
                    fail(item, "places.\(id): missing `\(name)`")
                    continue
                }
                guard case .number(let number) = value.value, number.isFinite, abs(number) <= limit else {
                    fail(value, "places.\(id).\(name): expected a number of degrees from -\(Int(limit)) to \(Int(limit)), found \(value.scalarText ?? value.typeName)")
                    continue
                }
                degrees.append(number)
            }
            if degrees.count == 2 { places[id] = Place(latitude: degrees[0], longitude: degrees[1]) }
        }
        return places
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
