import Foundation

/// The `json` filter: a value as JSON text, hash members in their order.
enum LiquidJSON {
    static func serialize(_ value: LiquidValue) -> String {
        switch value {
        case .nil: return "null"
        case .bool(let value): return value ? "true" : "false"
        case .int(let value): return String(value)
        case .double(let value): return value.isFinite ? LiquidValue.rubyFloat(value) : "null"
        case .string(let text): return quote(text)
        case .array, .range: return "[" + value.items.map(serialize).joined(separator: ",") + "]"
        case .object(let object): return "{" + object.members.map { quote($0.key) + ":" + serialize($0.value) }.joined(separator: ",") + "}"
        }
    }

    static func quote(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "<", ">", "&": out += String(format: "\\u%04x", scalar.value)
            default:
                if scalar.value < 0x20 { out += String(format: "\\u%04x", scalar.value) } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "\""
    }
}
