import Foundation
import Logging

/// A missing or invalid environment variable. Its description is the one line a service prints before exiting.
package struct ConfigError: Error, CustomStringConvertible, Equatable {
    package var variable: String
    package var problem: String

    package init(_ variable: String, _ problem: String) {
        self.variable = variable
        self.problem = problem
    }

    package var description: String { "configuration error: \(variable): \(problem)" }
}

/// Typed reads of environment variables. Every read records the variable as known, so that unknown `HERALD_`
/// variables (typos) can be reported.
package struct EnvironmentReader {
    package let values: [String: String]
    private(set) var known: Set<String> = []

    package init(_ values: [String: String]) { self.values = values }

    /// A set variable; an empty value counts as unset.
    private mutating func raw(_ name: String) -> String? {
        known.insert(name)
        guard let value = values[name]?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        return value
    }

    package mutating func required(_ name: String, hint: String) throws(ConfigError) -> String {
        guard let value = raw(name) else { throw ConfigError(name, "is required (\(hint))") }
        return value
    }

    package mutating func string(_ name: String, default fallback: String) -> String {
        raw(name) ?? fallback
    }

    package mutating func int(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws(ConfigError) -> Int {
        guard let text = raw(name) else { return fallback }
        guard let value = Int(text), range.contains(value) else {
            throw ConfigError(name, "expected an integer from \(range.lowerBound) to \(range.upperBound), got \"\(text)\"")
        }
        return value
    }

    /// `HERALD_TRUSTED_PROXIES`: the proxies (addresses or CIDR ranges, separated by commas) whose `X-Forwarded-For`
    /// names the client.
    package mutating func trustedProxies() throws(ConfigError) -> [AddressRange] {
        var proxies: [AddressRange] = []
        for entry in string("HERALD_TRUSTED_PROXIES", default: "").split(separator: ",") {
            let text = entry.trimmingCharacters(in: .whitespaces)
            guard let range = AddressRange(text) else {
                throw ConfigError("HERALD_TRUSTED_PROXIES", "expected addresses or CIDR ranges separated by commas, got \"\(text)\"")
            }
            proxies.append(range)
        }
        return proxies
    }

    package mutating func bool(_ name: String, default fallback: Bool) throws(ConfigError) -> Bool {
        guard let text = raw(name) else { return fallback }
        switch text.lowercased() {
        case "true", "1", "yes", "on": return true
        case "false", "0", "no", "off": return false
        default: throw ConfigError(name, "expected true or false, got \"\(text)\"")
        }
    }

    package mutating func oneOf<T: RawRepresentable & CaseIterable>(_ name: String, default fallback: T) throws(ConfigError)
        -> T where T.RawValue == String
    {
        guard let text = raw(name) else { return fallback }
        guard let value = T(rawValue: text.lowercased()) else {
            let allowed = T.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigError(name, "expected one of \(allowed), got \"\(text)\"")
        }
        return value
    }

    /// `HERALD_` variables that no read asked for: most likely typos.
    package var unknownHeraldVariables: [String] {
        values.keys.filter { $0.hasPrefix("HERALD_") && !known.contains($0) }.sorted()
    }
}
