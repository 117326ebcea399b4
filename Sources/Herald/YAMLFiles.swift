import Foundation
import Shared
import Yams

/// YAML (and JSON, which YAML reads too) into configuration nodes with their lines.
enum YAMLFiles {
    static func documents(_ text: String) throws -> [ConfigNode] {
        do {
            // Document by document: compose_all's sequence would stop quietly at a syntax error.
            let parser = try Parser(yaml: text, resolver: CoreSchema.resolver)
            var nodes: [ConfigNode] = []
            while let root = try parser.nextRoot() { nodes.append(try node(root)) }
            return nodes
        } catch let error as ConfigIssue {
            throw error
        } catch let error as YamlError {
            throw ConfigIssue(file: "", line: Self.line(of: error), message: "not valid YAML: \(Self.message(error))")
        } catch {
            throw ConfigIssue(file: "", line: 0, message: "not valid YAML: \(error)")
        }
    }

    static func node(_ node: Node) throws -> ConfigNode {
        let line = node.mark?.line ?? 0
        switch node {
        case .scalar(let scalar):
            let text = scalar.string
            switch Tag.Name(rawValue: node.tag.rawValue) {
            case .null: return ConfigNode(.null, line: line)
            case .bool: return ConfigNode(.bool(text.first == "t" || text.first == "T"), line: line)
            case .int, .float:
                guard let number = CoreSchema.number(text) else {
                    throw ConfigIssue(file: "", line: line, message: "\(text): not a number JSON can hold (infinite, not a number, or too large)")
                }
                return ConfigNode(.number(number), line: line)
            default: return ConfigNode(.string(text), line: line)
            }
        case .sequence(let sequence):
            return ConfigNode(.array(try sequence.map(Self.node)), line: line)
        case .mapping(let mapping):
            var members: [(key: String, node: ConfigNode)] = []
            for (key, value) in mapping {
                guard case .scalar(let name) = key else {
                    throw ConfigIssue(file: "", line: key.mark?.line ?? line, message: "a key must be a plain name")
                }
                members.append((name.string, try Self.node(value)))
            }
            return ConfigNode(.object(members), line: line)
        case .alias:
            throw ConfigIssue(file: "", line: line, message: "aliases are not supported")
        }
    }

    static func line(of error: YamlError) -> Int {
        switch error {
        case .scanner(_, _, let mark, _), .parser(_, _, let mark, _), .composer(_, _, let mark, _): return mark.line
        default: return 0
        }
    }

    static func message(_ error: YamlError) -> String {
        switch error {
        case .scanner(_, let problem, _, _), .parser(_, let problem, _, _), .composer(_, let problem, _, _): return problem
        default: return "\(error)"
        }
    }

    /// YAML 1.2's core schema (yaml.org/spec/1.2.2, 10.3.2), for the plain scalars the parser would otherwise read as
    /// YAML 1.1 did: `NO` (Norway), `no` (Norwegian), `on`, `off`, `y` and `n` are text; so are `21:00` (not the base-60
    /// number 1260), `1_000` and `2026-11-26`; `0755` is 755 (not octal), `0o17` is 15. Quoted scalars are text in both.
    enum CoreSchema {
        // swiftlint:disable force_try
        static let resolver = Resolver.basic
            .appending(try! Resolver.Rule(.null, "^(?:~|null|Null|NULL|)$"))
            .appending(try! Resolver.Rule(.bool, "^(?:true|True|TRUE|false|False|FALSE)$"))
            .appending(try! Resolver.Rule(.int, "^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"))
            .appending(
                try! Resolver.Rule(
                    .float, "^(?:[-+]?(?:\\.[0-9]+|[0-9]+(?:\\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN))$"))
        // swiftlint:enable force_try

        /// The value of an int or float of the core schema; nil for the infinities and not-a-number.
        static func number(_ text: String) -> Double? {
            if text.hasPrefix("0o") { return Int(text.dropFirst(2), radix: 8).map(Double.init) }
            if text.hasPrefix("0x") { return Int(text.dropFirst(2), radix: 16).map(Double.init) }
            guard let number = Double(text), number.isFinite else { return nil }
            return number
        }
    }
}
