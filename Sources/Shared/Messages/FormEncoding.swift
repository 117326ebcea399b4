import Foundation

/// `application/x-www-form-urlencoded` encoding (SMS APIs, OAuth token requests).
package enum FormEncoding {
    private static let unreserved = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")

    package static func encode(_ fields: [(String, String)]) -> [UInt8] {
        Array(fields.map { "\(escape($0.0))=\(escape($0.1))" }.joined(separator: "&").utf8)
    }

    package static func escape(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }

    /// The fields in order (a name may repeat).
    package static func decode(_ body: [UInt8]) -> [(String, String)] {
        String(decoding: body, as: UTF8.self).split(separator: "&").map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            func unescape(_ part: Substring) -> String {
                String(part).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String(part)
            }
            return (unescape(parts[0]), parts.count > 1 ? unescape(parts[1]) : "")
        }
    }

    /// The fields by name; the first of a repeated name wins.
    package static func fields(_ body: [UInt8]) -> [String: String] {
        Dictionary(decode(body), uniquingKeysWith: { first, _ in first })
    }
}
