import Foundation
import Shared
import Testing

/// Location in the segment language (issue 60, item 2): `location within R of …`, its distances, and the project's
/// named places.
@Suite("Segment language: location")
struct LocationConditionTests {
    static let paris = (48.8566, 2.3522)

    @Test(
        "location conditions parse: a distance in km or m, a place or a point",
        arguments: [
            (#"location within 5km of "paris-store""#, SegmentExpression.within(GeoCircle(latitude: .nan, longitude: .nan, meters: 5000, place: "paris-store"))),
            ("location within 500m of (48.8566, 2.3522)", .within(GeoCircle(latitude: 48.8566, longitude: 2.3522, meters: 500))),
            ("LOCATION WITHIN 1.5km OF (-33.8688, -151.2093)", .within(GeoCircle(latitude: -33.8688, longitude: -151.2093, meters: 1500))),
            ("location.at > now - 7d", .compare(SegmentPath("location", ["at"]), .greater, .relativeTime(seconds: -604_800))),
            ("location.accuracy <= 100", .compare(SegmentPath("location", ["accuracy"]), .lessOrEqual, .number(100))),
        ])
    func parses(text: String, expected: SegmentExpression) throws {
        let parsed = try SegmentParser.parse(text)
        // NaN is not equal to itself: compare a place's circle by its other parts.
        if case .within(let circle) = parsed, case .within(let wanted) = expected, wanted.place != nil {
            #expect(circle.place == wanted.place && circle.meters == wanted.meters && circle.latitude.isNaN)
        } else {
            #expect(parsed == expected)
        }
    }

    @Test(
        "invalid location conditions say what was expected, where",
        arguments: [
            ("location near (1, 2)", 1, 10, "expected `within` after `location` (location within 5km of \"place\"), or a path such as location.at"),
            ("location within 5 of (1, 2)", 1, 17, "expected a distance such as 500m or 5km after `within`, found the number 5"),
            ("location within 5h of (1, 2)", 1, 17, "expected a distance such as 500m or 5km after `within`, found a duration"),
            ("location within 0km of (1, 2)", 1, 17, "a distance is more than 0 and at most 20015km (half the Earth's circumference)"),
            ("location within 30000km of (1, 2)", 1, 17, "a distance is more than 0 and at most 20015km (half the Earth's circumference)"),
            ("location within 5km (1, 2)", 1, 21, "expected `of` and a place (\"paris-store\") or a point ((48.8566, 2.3522)), found `(`"),
            ("location within 5km of (91, 2)", 1, 25, "a latitude is from -90 to 90 degrees"),
            ("location within 5km of (1, -181)", 1, 29, "a longitude is from -180 to 180 degrees"),
            ("location within 5km of (1 2)", 1, 27, "expected `,` and a longitude, found the number 2"),
            ("location within 5km of paris", 1, 24, "expected a place (\"paris-store\") or a point ((48.8566, 2.3522)), found `paris`"),
        ])
    func invalid(text: String, line: Int, column: Int, message: String) {
        expectParseError(text, line: line, column: column, message: message)
    }

    @Test(
        "great-circle distances (haversine on the mean radius), across the antimeridian and the poles",
        arguments: [
            (48.8566, 2.3522, 51.5074, -0.1278, 343_556.0),  // Paris – London
            (0.0, 179.9, 0.0, -179.9, 22_239.0),  // across the antimeridian: 0.2° of the equator
            (90.0, 0.0, -90.0, 0.0, 20_015_115.0),  // pole to pole
            (48.8566, 2.3522, 48.8566, 2.3522, 0.0),
        ])
    func distances(lat1: Double, lon1: Double, lat2: Double, lon2: Double, meters: Double) {
        let distance = GeoCircle.distance(lat1, lon1, lat2, lon2)
        #expect(abs(distance - meters) < max(1, meters * 0.0005), "\(distance)")
    }

    @Test("within: a profile's last location inside or outside the circle; none, or a place not resolved, matches nobody")
    func evaluation() throws {
        let condition = try SegmentParser.parse("location within 5km of (48.8566, 2.3522)")
        func at(_ latitude: Double?, _ longitude: Double?) -> (SegmentPath) -> SegmentValue? {
            { path in
                switch path.names.first {
                case "latitude": latitude.map(SegmentValue.number)
                case "longitude": longitude.map(SegmentValue.number)
                default: nil
                }
            }
        }
        let now = Date()
        #expect(condition.matches(at: now, read: at(48.8738, 2.2950)))  // the Arc de Triomphe, 4.6 km
        #expect(!condition.matches(at: now, read: at(48.8049, 2.1204)))  // Versailles, 17 km
        #expect(!condition.matches(at: now, read: at(nil, nil)))
        #expect(try SegmentParser.parse("not location within 5km of (48.8566, 2.3522)").matches(at: now, read: at(nil, nil)))
        #expect(!(try SegmentParser.parse(#"location within 5km of "nowhere""#)).matches(at: now, read: at(48.8566, 2.3522)))
        #expect(condition.paths == [SegmentPath("location", ["latitude"]), SegmentPath("location", ["longitude"])])
    }

    func read(_ objects: [String]) throws -> (HeraldConfiguration, [String]) { try readConfiguration(objects) }

    @Test("a project's places: each checked; a segment's place resolved to its centre, or named when the project has none")
    func places() throws {
        let project = #"{"kind":"project","id":"demo","places":{"paris-store":{"latitude":48.8566,"longitude":2.3522,"name":"Paris, rue de Rivoli"}}}"#
        let segment = #"{"kind":"segment","id":"near","project":"demo","condition":"location within 5km of \"paris-store\" and location.at > now - 7d"}"#
        let (config, issues) = try read([project, segment])
        #expect(issues.isEmpty, "\(issues)")
        guard case .and(.within(let circle), _)? = config.segments["demo/near"]?.condition else {
            Issue.record("\(String(describing: config.segments["demo/near"]?.condition))")
            return
        }
        #expect(circle.latitude == 48.8566 && circle.longitude == 2.3522 && circle.place == "paris-store")

        let (_, unknown) = try read([project, #"{"kind":"segment","id":"far","project":"demo","condition":"location within 5km of \"lyon\""}"#])
        #expect(unknown == [#"segment far: condition: no place "lyon" in project demo (its `places`)"#])

        let cases = [
            (#"{"a b":{"latitude":1,"longitude":2}}"#, #"places: "a b" is not an identifier (letters, digits, _, - and ., at most 128)"#),
            (#"{"p":{"latitude":91,"longitude":2}}"#, "places.p.latitude: expected a number of degrees from -90 to 90, found 91"),
            (#"{"p":{"latitude":1,"longitude":"east"}}"#, #"places.p.longitude: expected a number of degrees from -180 to 180, found east"#),
            (#"{"p":{"latitude":1}}"#, "places.p: missing `longitude`"),
            (#"{"p":{"latitude":1,"longitude":2,"radius":3}}"#, "places.p: unknown field `radius`"),
            (#"[1]"#, "places: expected a mapping from a place's id to {latitude, longitude}, found a list"),
        ]
        for (places, expected) in cases {
            let (_, problems) = try read([#"{"kind":"project","id":"demo","places":\#(places)}"#])
            #expect(problems.contains(expected), "\(places): \(problems)")
        }
    }
}
