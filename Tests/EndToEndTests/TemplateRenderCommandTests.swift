import Foundation
import HeraldTestSupport
import Shared
import Testing

/// `herald template render --template FILE --context FILE.json`: the output byte for byte on standard output, exit 0;
/// an error on standard error with its line and column, exit 1.
@Suite struct TemplateRenderCommandTests {
    /// Runs the command, awaited (not blocking the tests' pool, as wide as the cores).
    private func run(_ template: String, context: String?, _ more: [String] = []) async throws -> (status: Int32, out: Data, err: String) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("template-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let templateFile = directory.appendingPathComponent("t.liquid")
        try Data(template.utf8).write(to: templateFile)
        var arguments = ["template", "render", "--template", templateFile.path]
        if let context {
            let contextFile = directory.appendingPathComponent("c.json")
            try Data(context.utf8).write(to: contextFile)
            arguments += ["--context", contextFile.path]
        }
        let (status, output, error) = try await runCommandSeparately(binDirectory.appendingPathComponent("herald").path, arguments + more)
        return (status, Data(output), error.replacingOccurrences(of: directory.path + "/", with: ""))
    }

    @Test func outputIsExactlyTheRendering() async throws {
        // No newline added, none removed; members in their order; Unicode as is.
        let template = "{% for p in products %}{{ p.name | upcase }}: {{ p.price | times: 1.1 | round: 2 }}\n{% endfor %}— {{ who }}"
        let context = #"{"products":[{"name":"thé","price":2},{"name":"café","price":3.5}],"who":"Zoë"}"#
        let result = try await run(template, context: context)
        #expect(result.status == 0, "\(result.err)")
        #expect(result.out == Data("THÉ: 2.2\nCAFÉ: 3.85\n— Zoë".utf8))
        #expect(result.err.isEmpty)
        let plain = try await run("no context, no newline", context: nil)
        #expect(plain.out == Data("no context, no newline".utf8))
    }

    @Test func errorsNameLineAndColumn() async throws {
        let syntax = try await run("ok\n  {% if x %}never closed", context: "{}")
        #expect(syntax.status == 1)
        #expect(syntax.out.isEmpty)
        #expect(syntax.err == "t.liquid:2:3: 'if' tag was never closed\n")
        let strict = try await run("Hi {{ name }}", context: "{}", ["--strict"])
        #expect(strict.status == 1)
        #expect(strict.err == "t.liquid:1:4: no value for name and no default\n")
        // Ruby Liquid's default renders a missing value as nothing.
        #expect(try await run("Hi {{ name }}", context: "{}").out == Data("Hi ".utf8))
        let aborted = try await run("{% abort_message('out of stock') %}", context: "{}")
        #expect(aborted.status == 1 && aborted.err == "t.liquid:1:1: message aborted: out of stock\n")
    }

    @Test func contextMustBeAnObject() async throws {
        let result = try await run("x", context: "[1]")
        #expect(result.status == 64)
        #expect(result.err.contains("--context") && result.err.contains("expected an object"), "\(result.err)")
    }

    @Test func zoneAndNowForDates() async throws {
        let result = try await run("{{ 'now' | date: '%Y-%m-%d %H:%M %Z' }}", context: nil, ["--now", "2026-11-27T23:30:00Z", "--time-zone", "Asia/Tokyo"])
        #expect(result.out == Data("2026-11-28 08:30 JST".utf8), "\(result.err)")
    }
}
