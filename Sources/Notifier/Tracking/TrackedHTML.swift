import Foundation

/// An email's HTML with its links tracked: each `<a href>` to an `http` or `https` URL points at the notifier's
/// redirect instead (`TrackingLinks`), numbered in document order, and an open pixel goes before `</body>`. Other
/// links (`mailto:`, `tel:`, anchors, the notifier's own) and the text part stay as they are. The `href` is read as a
/// browser reads it: quoted or not, with its character references decoded (`&amp;`).
enum TrackedHTML {
    /// A URL a click may be redirected to: absolute `http` or `https`, no blanks or control characters.
    static func isTrackable(_ url: String) -> Bool {
        let lower = url.lowercased()
        return (lower.hasPrefix("http://") || lower.hasPrefix("https://")) && url.utf8.count > 8
            && !url.unicodeScalars.contains { $0.value <= 0x20 || $0.value == 0x7F }
    }

    /// The HTML with each trackable link's URL replaced by `link(index, url)` (nil: left as it is) and `pixel` (a URL)
    /// before the last `</body>`, or at the end.
    static func rewrite(_ html: String, pixel: String?, link: (Int, String) -> String?) -> String {
        let bytes = Array(html.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 512)
        var index = 0
        var links = 0
        while index < bytes.count {
            // `<a` and a blank: an anchor's start tag; its attributes are read up to its `>`.
            guard bytes[index] == UInt8(ascii: "<"), index + 2 < bytes.count, bytes[index + 1] | 0x20 == UInt8(ascii: "a"),
                isBlank(bytes[index + 2])
            else {
                output.append(bytes[index])
                index += 1
                continue
            }
            output += bytes[index..<index + 2]
            index += 2
            while index < bytes.count, bytes[index] != UInt8(ascii: ">") {
                if isBlank(bytes[index]) || bytes[index] == UInt8(ascii: "/") {
                    output.append(bytes[index])
                    index += 1
                    continue
                }
                let nameStart = index
                while index < bytes.count, !isBlank(bytes[index]), ![UInt8(ascii: "="), UInt8(ascii: ">"), UInt8(ascii: "/")].contains(bytes[index]) {
                    index += 1
                }
                let name = bytes[nameStart..<index]
                var cursor = index
                while cursor < bytes.count, isBlank(bytes[cursor]) { cursor += 1 }
                guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "=") else {
                    output += name
                    continue
                }
                cursor += 1
                while cursor < bytes.count, isBlank(bytes[cursor]) { cursor += 1 }
                // The value: quoted, or up to a blank or `>`.
                var valueStart = cursor
                var valueEnd: Int
                var after: Int
                if cursor < bytes.count, bytes[cursor] == UInt8(ascii: "\"") || bytes[cursor] == UInt8(ascii: "'") {
                    let quote = bytes[cursor]
                    valueStart = cursor + 1
                    valueEnd = bytes[valueStart...].firstIndex(of: quote) ?? bytes.count
                    after = min(valueEnd + 1, bytes.count)
                } else {
                    valueEnd = bytes[cursor...].firstIndex { isBlank($0) || $0 == UInt8(ascii: ">") } ?? bytes.count
                    after = valueEnd
                }
                if String(decoding: name, as: UTF8.self).lowercased() == "href" {
                    let url = decodeReferences(String(decoding: bytes[valueStart..<valueEnd], as: UTF8.self))
                    if isTrackable(url), let tracked = link(links, url) {
                        links += 1
                        output += name
                        output += Array("=\"\(tracked)\"".utf8)
                        index = after
                        continue
                    }
                }
                output += bytes[nameStart..<after]
                index = after
            }
        }
        guard let pixel else { return String(decoding: output, as: UTF8.self) }
        let image = Array(#"<img src="\#(pixel)" width="1" height="1" alt="" style="display:block;width:1px;height:1px;border:0">"#.utf8)
        let closing = Array("</body".utf8)
        let body = output.indices.reversed().first { start in
            start + closing.count <= output.count && zip(output[start..<start + closing.count], closing).allSatisfy { $0 | 0x20 == $1 }
        }
        if let body { output.insert(contentsOf: image, at: body) } else { output += image }
        return String(decoding: output, as: UTF8.self)
    }

    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0C || byte == 0x0D
    }

    /// `&amp;`, `&quot;`, `&apos;`, `&lt;`, `&gt;` and numeric references decoded; anything else left as written.
    static func decodeReferences(_ text: String) -> String {
        guard text.contains("&") else { return text }
        var result = ""
        var rest = Substring(text)
        while let ampersand = rest.firstIndex(of: "&") {
            result += rest[..<ampersand]
            rest = rest[ampersand...]
            guard let semicolon = rest.prefix(12).firstIndex(of: ";") else {
                result += "&"
                rest = rest.dropFirst()
                continue
            }
            let name = rest[rest.index(after: rest.startIndex)..<semicolon]
            var decoded: String?
            switch name.lowercased() {
            case "amp": decoded = "&"
            case "quot": decoded = "\""
            case "apos": decoded = "'"
            case "lt": decoded = "<"
            case "gt": decoded = ">"
            default:
                if name.hasPrefix("#x") || name.hasPrefix("#X") {
                    decoded = UInt32(name.dropFirst(2), radix: 16).flatMap(Unicode.Scalar.init).map { String($0) }
                } else if name.hasPrefix("#") {
                    decoded = UInt32(name.dropFirst()).flatMap(Unicode.Scalar.init).map { String($0) }
                }
            }
            if let decoded {
                result += decoded
                rest = rest[rest.index(after: semicolon)...]
            } else {
                result += "&"
                rest = rest.dropFirst()
            }
        }
        return result + rest
    }
}
