import ArgumentParser
import Foundation
import Liquid
import Shared

/// `herald template render`: a Liquid template rendered against a JSON context, byte for byte on standard output:
/// a marketer's preview, and the door a conformance suite drives the engine through (docs/templates.md).
struct TemplateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "template", abstract: "Render templates.", subcommands: [Render.self])

    struct Render: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Render a Liquid template file against a JSON context.",
            discussion: """
                The JSON object's members are the template's top-level variables. The output goes to standard output \
                exactly, nothing added; exit 0. An error goes to standard error as FILE:LINE:COLUMN: message; exit 1. \
                By default a variable without a value renders as nothing, as in Ruby Liquid; --strict fails on it \
                unless a `default` filter follows, as a Herald message does.
                """)

        @Option(help: "The template file.")
        var template: String

        @Option(help: "A JSON file holding an object: the template's variables (default: none).")
        var context: String?

        @Option(help: "The IANA time zone `date` writes in (default: UTC).")
        var timeZone: String = "UTC"

        @Option(help: "The instant `date` takes for \"now\", as 2026-11-27T05:00:00Z (default: the clock).")
        var now: String?

        @Flag(help: "Fail on a variable without a value unless a `default` filter follows (a Herald message's rule).")
        var strict = false

        @Flag(help: "HTML-escape every output unless its last filter is raw, escape or escape_once (an email's html).")
        var escapeHTML = false

        func validate() throws {
            guard TimeZone(identifier: timeZone) != nil else { throw ValidationError("--time-zone: \"\(timeZone)\" is not an IANA time zone name") }
            if let now, WireTime.parse(now) == nil { throw ValidationError("--now: expected an instant like 2026-11-27T05:00:00Z, found \"\(now)\"") }
        }

        func run() throws {
            let source: String
            do {
                source = try String(contentsOfFile: template, encoding: .utf8)
            } catch {
                throw ValidationError("--template: cannot read \(template) as UTF-8 text")
            }
            var variables = LiquidObject()
            if let context {
                guard let data = FileManager.default.contents(atPath: context) else { throw ValidationError("--context: cannot read \(context)") }
                let json: JSONValue
                do {
                    json = try JSONParser.parse(Array(data))
                } catch {
                    throw ValidationError("--context: \(context) is not JSON: \(error)")
                }
                guard case .object(let members) = json else { throw ValidationError("--context: \(context) holds \(json.typeName), expected an object") }
                variables = LiquidObject(members.map { ($0.key, LiquidValue(json: $0.value)) })
            }
            var options = LiquidRenderOptions()
            options.timeZone = TimeZone(identifier: timeZone)!
            options.now = now.flatMap(WireTime.parse) ?? Date()
            options.strictVariables = strict
            if escapeHTML { options.escape = { LiquidFilters.escapeHTML($0) } }
            do {
                let output = try LiquidTemplate(parsing: source).render(variables, options: options)
                FileHandle.standardOutput.write(Data(output.utf8))
            } catch {
                let place = error.line > 0 ? "\(template):\(error.line):\(error.column)" : template
                FileHandle.standardError.write(Data("\(place): \(error.message)\n".utf8))
                throw ExitCode(1)
            }
        }
    }
}
