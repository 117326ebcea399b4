/// A template's source cut into text, outputs (`{{ … }}`) and tags (`{% … %}`), with whitespace control applied: a
/// `-` inside a delimiter (`{{-`, `-%}`) removes the whitespace, line breaks included, on that side.
struct LiquidToken: Sendable {
    enum Kind: Sendable, Equatable {
        case text
        case output
        case tag
    }

    var kind: Kind
    /// The text, or the markup inside the delimiters without the trim marks.
    var content: String
    var position: SourcePosition
}

enum LiquidLexer {
    static func tokens(_ source: String) throws(LiquidError) -> [LiquidToken] {
        var tokens: [LiquidToken] = []
        let utf8 = Array(source.utf8)
        var index = 0
        var line = 1
        var lineStart = 0
        var trimNextText = false
        var textStart = 0

        func position(_ offset: Int) -> SourcePosition {
            // Columns count characters, not bytes, so that an editor finds them.
            let column = String(decoding: utf8[lineStart..<offset], as: UTF8.self).count + 1
            return SourcePosition(line: line, column: column)
        }
        func advanceLines(_ from: Int, _ to: Int) {
            for offset in from..<to where utf8[offset] == UInt8(ascii: "\n") {
                line += 1
                lineStart = offset + 1
            }
        }
        func appendText(_ end: Int, trimRight: Bool, at start: SourcePosition) {
            var text = String(decoding: utf8[textStart..<end], as: UTF8.self)
            if trimNextText { text = String(text.drop { $0.isWhitespace }) }
            if trimRight {
                while let last = text.last, last.isWhitespace { text.removeLast() }
            }
            if !text.isEmpty { tokens.append(LiquidToken(kind: .text, content: text, position: start)) }
        }

        var textPosition = position(0)
        while index < utf8.count {
            guard utf8[index] == UInt8(ascii: "{"), index + 1 < utf8.count,
                utf8[index + 1] == UInt8(ascii: "{") || utf8[index + 1] == UInt8(ascii: "%")
            else {
                index += 1
                continue
            }
            let isTag = utf8[index + 1] == UInt8(ascii: "%")
            let open = index
            advanceLines(textStart, open)
            let start = position(open)
            var inner = open + 2
            let trimLeft = inner < utf8.count && utf8[inner] == UInt8(ascii: "-")
            if trimLeft { inner += 1 }
            // The closing delimiter: the first `}}` / `%}`, quotes or not (Ruby's tokenizer is a non-greedy match).
            let closer = isTag ? UInt8(ascii: "%") : UInt8(ascii: "}")
            var scan = inner
            var close: Int?
            while scan + 1 < utf8.count {
                if utf8[scan] == closer, utf8[scan + 1] == UInt8(ascii: "}") {
                    // Braze's `{{${first_name}}}`: a brace its markup opened (`${`) is closed first, so the output ends
                    // one brace later. Otherwise, as Ruby's tokenizer, at the first `}}`: `{{ x | json }}}` is the
                    // output, then a `}` of text.
                    if !isTag {
                        var open = 0
                        for byte in utf8[inner..<scan] {
                            if byte == UInt8(ascii: "{") { open += 1 } else if byte == UInt8(ascii: "}"), open > 0 { open -= 1 }
                        }
                        while open > 0, scan + 2 < utf8.count, utf8[scan + 2] == UInt8(ascii: "}") {
                            scan += 1
                            open -= 1
                        }
                    }
                    close = scan
                    break
                }
                scan += 1
            }
            guard var end = close else {
                throw LiquidError(.syntax, isTag ? "Tag '{%' was not properly terminated with '%}'" : "Variable '{{' was not properly terminated with '}}'", at: start)
            }
            let trimRight = end > inner && utf8[end - 1] == UInt8(ascii: "-")
            let markupEnd = trimRight ? end - 1 : end
            appendText(open, trimRight: trimLeft, at: textPosition)
            let markup = String(decoding: utf8[inner..<max(inner, markupEnd)], as: UTF8.self)
            tokens.append(LiquidToken(kind: isTag ? .tag : .output, content: markup, position: start))
            end += 2
            advanceLines(open, end)
            trimNextText = trimRight
            index = end
            textStart = end
            textPosition = position(end)

            // `raw` keeps everything up to its `endraw` as text; `doc` drops everything up to its `enddoc`.
            let word = markup.split(whereSeparator: \.isWhitespace).first
            if isTag, word == "raw" || word == "doc" {
                let name = String(word!)
                if markup.split(whereSeparator: \.isWhitespace).count > 1 {
                    throw LiquidError(.syntax, "'\(name)' takes no arguments", at: start)
                }
                guard let (bodyEnd, after, trimBefore, trimAfter) = findEnd("end" + name, utf8, from: end) else {
                    throw LiquidError(.syntax, "'\(name)' tag was never closed", at: start)
                }
                var body = String(decoding: utf8[end..<bodyEnd], as: UTF8.self)
                if trimRight { body = String(body.drop { $0.isWhitespace }) }
                if trimBefore { while let last = body.last, last.isWhitespace { body.removeLast() } }
                tokens.removeLast()
                if name == "doc" { body = "" }
                if !body.isEmpty { tokens.append(LiquidToken(kind: .text, content: body, position: textPosition)) }
                advanceLines(end, after)
                trimNextText = trimAfter
                index = after
                textStart = after
                textPosition = position(after)
            }
        }
        advanceLines(textStart, utf8.count)
        appendText(utf8.count, trimRight: false, at: textPosition)
        return tokens
    }

    /// The `{% endraw %}` (or `enddoc`) after `from`: where its delimiter starts, where it ends, and its trim marks.
    private static func findEnd(_ name: String, _ utf8: [UInt8], from: Int) -> (Int, Int, Bool, Bool)? {
        var index = from
        while index + 1 < utf8.count {
            if utf8[index] == UInt8(ascii: "{"), utf8[index + 1] == UInt8(ascii: "%") {
                var scan = index + 2
                let trimBefore = scan < utf8.count && utf8[scan] == UInt8(ascii: "-")
                if trimBefore { scan += 1 }
                while scan < utf8.count, utf8[scan] == UInt8(ascii: " ") || utf8[scan] == UInt8(ascii: "\t") || utf8[scan] == UInt8(ascii: "\n") { scan += 1 }
                let word = Array(name.utf8)
                if scan + word.count <= utf8.count, Array(utf8[scan..<scan + word.count]) == word {
                    scan += word.count
                    while scan < utf8.count, utf8[scan] == UInt8(ascii: " ") || utf8[scan] == UInt8(ascii: "\t") || utf8[scan] == UInt8(ascii: "\n") { scan += 1 }
                    let trimAfter = scan < utf8.count && utf8[scan] == UInt8(ascii: "-")
                    if trimAfter { scan += 1 }
                    if scan + 1 < utf8.count, utf8[scan] == UInt8(ascii: "%"), utf8[scan + 1] == UInt8(ascii: "}") {
                        return (index, scan + 2, trimBefore, trimAfter)
                    }
                }
            }
            index += 1
        }
        return nil
    }
}
