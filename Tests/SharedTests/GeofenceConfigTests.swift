import Foundation
import Shared
import Testing

/// Geofence sets (issue 60, item 3; braze-rules §4.1): what `herald config validate` refuses, and which geofences an
/// installation is given.
@Suite("Configuration: geofences")
struct GeofenceConfigTests {
    static let project = #"{"kind":"project","id":"demo"}"#
    static let ios = #"{"kind":"app","id":"demo-ios","project":"demo","platform":"ios","geofences":{"max":5,"reserved":2}}"#
    static let android = #"{"kind":"app","id":"demo-android","project":"demo","platform":"android"}"#

    static func set(_ geofences: String, id: String = "stores", apps: String = #"["demo-ios"]"#) -> String {
        #"{"kind":"geofence_set","id":"\#(id)","project":"demo","apps":\#(apps),"geofences":\#(geofences)}"#
    }

    @Test(
        "every problem of a set is named",
        arguments: [
            (set(#"[{"id":"a","latitude":48.8,"longitude":2.3,"radius":99}]"#), "geofences[0].radius: expected metres from 100 to 100000, found 99"),
            (set(#"[{"id":"a","latitude":91,"longitude":2.3,"radius":150}]"#), "geofences[0].latitude: expected a number of degrees from -90 to 90, found 91"),
            (set(#"[{"id":"a","latitude":48.8,"radius":150}]"#), "geofences[0]: missing `longitude`"),
            (set(#"[{"id":"a","latitude":1,"longitude":2,"radius":150},{"id":"a","latitude":1,"longitude":2,"radius":150}]"#),
             "geofences[1].id: a is also geofences[0]"),
            (set(#"[{"id":"a b","latitude":1,"longitude":2,"radius":150}]"#), #"geofences[0].id: "a b" is not an identifier (letters, digits, _, - and ., at most 128)"#),
            (set(#"[]"#), "geofences: expected a list of 1 to 10000 geofences {id, latitude, longitude, radius}"),
            (set(#"[{"id":"a","latitude":1,"longitude":2,"radius":150}]"#, apps: "[]"), "apps: expected a list of the apps that monitor the set, such as [demo-ios, demo-android]"),
            (set(#"[{"id":"a","latitude":1,"longitude":2,"radius":150}]"#, apps: #"["tv"]"#), "geofence_set stores: apps: no app tv in project demo"),
            (set(#"[{"id":"a","latitude":1,"longitude":2,"radius":150,"shape":"square"}]"#), "geofences[0]: unknown field `shape`"),
            (#"{"kind":"app","id":"x","project":"demo","platform":"ios","geofences":{"max":0}}"#, "geofences.max: expected a whole number from 1 to 100"),
            (#"{"kind":"app","id":"x","project":"demo","platform":"ios","geofences":{"max":20,"reserved":20}}"#, "geofences: reserved (20) leaves none of max (20) for Herald's"),
        ])
    func problems(object: String, expected: String) throws {
        let (_, issues) = try readConfiguration([Self.project, Self.ios, object])
        #expect(issues.contains(expected), "\(issues)")
    }

    @Test("over 10,000 geofences in a set is refused")
    func tooMany() throws {
        let one = #"{"id":"g%d","latitude":1,"longitude":2,"radius":150}"#
        let items = (0...10_000).map { String(format: one, $0) }.joined(separator: ",")
        let (_, issues) = try readConfiguration([Self.project, Self.ios, Self.set("[\(items)]")])
        #expect(issues.contains("geofences: expected a list of 1 to 10000 geofences {id, latitude, longitude, radius}"))
    }

    @Test("an installation gets its app's sets' nearest geofences within 2,000 km, max less reserved, nearest first")
    func nearest() throws {
        // Around Paris: the Louvre (1.2 km from the point), Montmartre (3.9 km), La Défense (7.9 km), Lyon (390 km),
        // Versailles (16 km); New York (5,800 km, too far); and a set for Android only.
        let stores = Self.set(#"""
            [{"id":"louvre","latitude":48.8606,"longitude":2.3376,"radius":150},
             {"id":"montmartre","latitude":48.8867,"longitude":2.3431,"radius":200},
             {"id":"defense","latitude":48.8918,"longitude":2.2361,"radius":300},
             {"id":"lyon","latitude":45.7640,"longitude":4.8357,"radius":300},
             {"id":"new-york","latitude":40.7128,"longitude":-74.0060,"radius":300}]
            """#)
        let parks = Self.set(#"[{"id":"versailles","latitude":48.8049,"longitude":2.1204,"radius":500}]"#, id: "parks")
        let android = Self.set(#"[{"id":"opera","latitude":48.8720,"longitude":2.3316,"radius":100}]"#, id: "droid", apps: #"["demo-android"]"#)
        let (config, issues) = try readConfiguration([Self.project, Self.ios, Self.android, stores, parks, android])
        #expect(issues.isEmpty, "\(issues)")
        let near = config.nearestGeofences(project: "demo", app: "demo-ios", latitude: 48.8566, longitude: 2.3522)
        // max 5, reserved 2: three.
        #expect(near.map { "\($0.set)/\($0.geofence.id)" } == ["stores/louvre", "stores/montmartre", "stores/defense"])
        #expect(near.map(\.meters) == near.map(\.meters).sorted())
        let far = config.nearestGeofences(project: "demo", app: "demo-ios", latitude: 45.76, longitude: 4.83)
        #expect(far.first?.geofence.id == "lyon" && !far.contains { $0.geofence.id == "new-york" })
        // Android: its own set and the default 20.
        let droid = config.nearestGeofences(project: "demo", app: "demo-android", latitude: 48.8566, longitude: 2.3522)
        #expect(droid.map(\.geofence.id) == ["opera"])
        #expect(config.nearestGeofences(project: "demo", app: "demo-ios", latitude: -33.87, longitude: 151.21).isEmpty)
    }
}
