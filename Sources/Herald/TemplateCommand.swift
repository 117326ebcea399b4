import ArgumentParser
import Foundation
import Liquid
import OrchestratorDomain
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

        @Option(help: "The template file (or --id with --config).")
        var template: String?

        @Option(help: "A configuration directory: its content blocks are included, and --id names one of its templates.")
        var config: String?

        @Option(help: "A template of --config to render, as project/id (with --language and --field).")
        var id: String?

        @Option(help: "The variant of --id: a language, or default (default: default).")
        var language: String = "default"

        @Option(help: "The field of --id to render (default: body, else text).")
        var field: String?

        @Option(help: "A JSON file holding an object: the template's variables (default: none).")
        var context: String?

        @Option(help: "The IANA time zone `date` writes in (default: the --profile's, else UTC).")
        var timeZone: String?

        @Option(help: "The instant `date` takes for \"now\", as 2026-11-27T05:00:00Z (default: the clock).")
        var now: String?

        @Option(help: "A live profile as project/custom_id: its attributes and natives are the variables (--context adds to them).")
        var profile: String?

        @Option(help: "The orchestrator's data directory --profile reads (default: $HERALD_DATA_DIR, else data/orchestrator).")
        var dataDir: String?

        @Flag(help: "Fail on a variable without a value unless a `default` filter follows (a Herald message's rule).")
        var strict = false

        @Flag(help: "HTML-escape every output unless its last filter is raw, escape or escape_once (an email's html).")
        var escapeHTML = false

        func validate() throws {
            guard (template == nil) != (id == nil) else { throw ValidationError("name either --template FILE or --id PROJECT/ID") }
            if id != nil, config == nil { throw ValidationError("--id reads a template of --config DIR") }
            if let timeZone, TimeZone(identifier: timeZone) == nil { throw ValidationError("--time-zone: \"\(timeZone)\" is not an IANA time zone name") }
            if let profile, profile.split(separator: "/", maxSplits: 1).count != 2 { throw ValidationError("--profile: expected project/custom_id, found \"\(profile)\"") }
            if let now, WireTime.parse(now) == nil { throw ValidationError("--now: expected an instant like 2026-11-27T05:00:00Z, found \"\(now)\"") }
        }

        func run() throws {
            let loaded = try config.map(ConfigDirectory.load)
            let project = id.map { String($0.split(separator: "/").first ?? "") } ?? loaded?.configuration.projects.keys.sorted().first
            let (name, source) = try self.source(loaded?.configuration)
            var variables = LiquidObject()
            var zone = TimeZone(identifier: "UTC")!
            if let profile {
                let parts = profile.split(separator: "/", maxSplits: 1).map(String.init)
                let directory = DataDirectory.path(dataDir)
                let fallback = loaded?.configuration.defaultTimeZone(project: parts[0]) ?? "UTC"
                guard let (found, profileZone) = try MessagePreview.variables(
                    directory: directory, key: ProfileKey.profile(parts[0], parts[1]), defaultTimeZone: fallback)
                else {
                    FileHandle.standardError.write(Data("herald: no profile \(profile) in \(directory)\n".utf8))
                    throw ExitCode(1)
                }
                variables = found
                zone = profileZone
            }
            if let context {
                guard let data = FileManager.default.contents(atPath: context) else { throw ValidationError("--context: cannot read \(context)") }
                let json: JSONValue
                do {
                    json = try JSONParser.parse(Array(data))
                } catch {
                    throw ValidationError("--context: \(context) is not JSON: \(error)")
                }
                guard case .object(let members) = json else { throw ValidationError("--context: \(context) holds \(json.typeName), expected an object") }
                for member in members { variables[member.key] = LiquidValue(json: member.value) }
            }
            var options = LiquidRenderOptions()
            options.timeZone = timeZone.flatMap(TimeZone.init(identifier:)) ?? zone
            options.now = now.flatMap(WireTime.parse) ?? Date()
            // A configured template renders as its message would: strict, and an email's html escaped.
            options.strictVariables = strict || id != nil
            if let id, loaded?.configuration.templates[id]?.channel == .email, (field ?? "") == "html" { options.escape = { LiquidFilters.escapeHTML($0) } }
            if escapeHTML { options.escape = { LiquidFilters.escapeHTML($0) } }
            if let loaded, let project { options.contentBlocks = loaded.configuration.contentBlocks(project: project) }
            do {
                let output = try LiquidTemplate(parsing: source).render(variables, options: options)
                FileHandle.standardOutput.write(Data(output.utf8))
            } catch {
                let place = error.line > 0 ? "\(name):\(error.line):\(error.column)" : name
                FileHandle.standardError.write(Data("\(place): \(error.message)\n".utf8))
                throw ExitCode(1)
            }
        }

        /// The text to render and the name its errors carry: the file, or `project/id.language.field` of --config.
        private func source(_ configuration: HeraldConfiguration?) throws -> (String, String) {
            if let template {
                do {
                    return (template, try String(contentsOfFile: template, encoding: .utf8))
                } catch {
                    throw ValidationError("--template: cannot read \(template) as UTF-8 text")
                }
            }
            guard let id, let configuration, let definition = configuration.templates[id] else {
                throw ValidationError("--id: no template \(id ?? "") in \(config ?? "")")
            }
            guard let fields = definition.variants[language] else {
                throw ValidationError("--language: template \(id) has no variant \(language) (\(definition.variants.keys.sorted().joined(separator: ", ")))")
            }
            let name = field ?? (fields["body"] != nil ? "body" : "text")
            guard let text = fields[name] else {
                throw ValidationError("--field: template \(id) \(language) has no field \(name) (\(fields.keys.sorted().joined(separator: ", ")))")
            }
            return ("\(id).\(language).\(name)", text.source)
        }
    }
}
