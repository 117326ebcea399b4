import Foundation

/// `kind: geofence_set` and an app's `geofences` (docs/geofences.md): every field checked, with its file and line.
extension ConfigReader {
    static let geofenceSetFields = ["project", "name", "apps", "cooldown", "geofences"]

    /// `kind: geofence_set`: its apps (at least one), its geofences (1 to 10,000, each `{id, latitude, longitude,
    /// radius}`, ids unique), its cooldown (default 6h).
    mutating func geofenceSet(_ node: ConfigNode, id: String, project: String, origin: ConfigOrigin) -> GeofenceSetDefinition? {
        var apps: [String] = []
        if case .array(let items)? = node["apps"]?.value, !items.isEmpty {
            for item in items {
                guard case .string(let app) = item.value, Self.isIdentifier(app) else {
                    fail(item, "apps: expected app ids, found \(item.scalarText ?? item.typeName)")
                    continue
                }
                if !apps.contains(app) { apps.append(app) }
            }
        } else {
            fail(node["apps"] ?? node, "apps: expected a list of the apps that monitor the set, such as [demo-ios, demo-android]")
        }
        var cooldown = GeofenceSetDefinition.defaultCooldown
        if node["cooldown"] != nil, let value = duration(node, "cooldown") { cooldown = value }
        guard case .array(let items)? = node["geofences"]?.value, (1...GeofenceSetDefinition.maxGeofences).contains(items.count) else {
            fail(node["geofences"] ?? node, "geofences: expected a list of 1 to \(GeofenceSetDefinition.maxGeofences) geofences {id, latitude, longitude, radius}")
            return nil
        }
        var geofences: [GeofenceSetDefinition.Geofence] = []
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            let path = "geofences[\(index)]"
            rejectUnknown(item, allowed: ["id", "latitude", "longitude", "radius", "name"], path)
            guard let geofenceID = string(item, "id") else { continue }
            guard Self.isIdentifier(geofenceID) else {
                fail(item["id"], "\(path).id: \"\(geofenceID)\" is not an identifier (letters, digits, _, - and ., at most 128)")
                continue
            }
            if let first = seen[geofenceID] { fail(item["id"], "\(path).id: \(geofenceID) is also geofences[\(first)]") }
            seen[geofenceID] = seen[geofenceID] ?? index
            let radius = ("radius", GeofenceSetDefinition.minRadius...GeofenceSetDefinition.maxRadius, "metres from 100 to 100000")
            if let numbers = numbers(item, path, Self.coordinates + [radius]) {
                geofences.append(.init(id: geofenceID, latitude: numbers[0], longitude: numbers[1], radius: numbers[2]))
            }
        }
        return GeofenceSetDefinition(id: id, project: project, apps: apps, geofences: geofences, cooldown: cooldown, origin: origin)
    }

    /// An app's `geofences: {max, reserved}`.
    mutating func geofenceLimit(_ node: ConfigNode) -> GeofenceLimit {
        rejectUnknown(node, allowed: ["max", "reserved"], "geofences")
        var limit = GeofenceLimit()
        for (name, range) in [("max", 1...GeofenceLimit.largest), ("reserved", 0...GeofenceLimit.largest)] {
            guard let value = node[name] else { continue }
            guard case .number(let number) = value.value, number == number.rounded(), range.contains(Int(exactly: number) ?? -1) else {
                fail(value, "geofences.\(name): expected a whole number from \(range.lowerBound) to \(range.upperBound)")
                continue
            }
            if name == "max" { limit.max = Int(number) } else { limit.reserved = Int(number) }
        }
        if limit.reserved >= limit.max { fail(node, "geofences: reserved (\(limit.reserved)) leaves none of max (\(limit.max)) for Herald's") }
        return limit
    }
}
