/// `If-None-Match` (RFC 9110 §13.1.2): whether a request's list of entity tags names the current one. The comparison
/// is weak (`W/"x"` names `"x"`), as the RFC asks for this header; `*` names any current answer.
package enum EntityTags {
    /// Whether `header` (the field's value, nil when absent) names `tag`, a quoted tag: the answer is then 304.
    package static func names(_ tag: String, in header: String?) -> Bool {
        guard let header else { return false }
        // Read as bytes: an app's sync carries one tag, and this runs at every sync.
        let tag = tag.utf8
        return header.utf8.split(separator: UInt8(ascii: ",")).contains { item in
            var candidate = item.drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
            while let last = candidate.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { candidate = candidate.dropLast() }
            if candidate.elementsEqual("*".utf8) { return true }
            if candidate.starts(with: "W/".utf8) { candidate = candidate.dropFirst(2) }
            return candidate.elementsEqual(tag)
        }
    }
}
