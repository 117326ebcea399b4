import Foundation
import Liquid
import Testing

/// What golden-liquid does not cover: Herald's strict variables, escaping, bounds, Braze's forms, `abort_message`,
/// content blocks, Herald's first template syntax, and where errors point.
@Suite struct LiquidEngineTests {
    private func render(_ source: String, _ variables: LiquidObject = LiquidObject(), _ configure: (inout LiquidRenderOptions) -> Void = { _ in }) throws -> String {
        var options = LiquidRenderOptions()
        configure(&options)
        return try LiquidTemplate(parsing: source).render(variables, options: options)
    }

    private func strict(_ options: inout LiquidRenderOptions) { options.strictVariables = true }

    private let profile: LiquidObject = [
        "c": ["first_name": "Ada", "count": 3, "tags": ["a", "b"]],
        "event": ["product": "Tea"],
        "${first_name}": "Ada",
        "custom_attribute": ["fav": "blue"],
    ]

    @Test(arguments: [
        // A value, or a default, renders; a missing one fails the message unless `default` follows.
        ("Hi {{ c.first_name }}", "Hi Ada"),
        ("Hi {{ c.nickname | default: 'there' }}", "Hi there"),
        (#"Hi {{ c.nickname | "there" }}"#, "Hi there"),  // Herald's first syntax: a string after | is the default
        ("{% if c.nickname %}x{% else %}y{% endif %}", "y"),  // a condition reads a missing value as nil
        ("{% for t in c.tags %}{{ t }}{% endfor %}", "ab"),
        ("{{ c.count | plus: 1 }}", "4"),
        // Braze's forms.
        ("{{${first_name}}}", "Ada"),
        ("{{custom_attribute.${fav}}}", "blue"),
        ("{{ ${first_name} | upcase }}", "ADA"),
        // An output ends at its first `}}` unless its markup opened a brace (`${`): as Ruby's tokenizer, a brace after
        // it is text. A JSON body ends so (`{"count": {{ c.count }}}`).
        ("{{ c.first_name }}}", "Ada}"),
        (#"{"count": {{ c.count }}}"#, #"{"count": 3}"#),
        ("{{${first_name}}}}", "Ada}"),
    ])
    func strictRendering(source: String, expected: String) throws {
        #expect(try render(source, profile, strict) == expected)
    }

    @Test(arguments: [
        ("{{ c.nickname }}", "no value for c.nickname and no default", 1, 1),
        ("line one\n  {{ c.first_name | upcase }} {{ event.missing | upcase }}", "no value for event.missing and no default", 2, 31),
        ("{% for x in c.nothing %}{% endfor %}", "no value for c.nothing and no default", 1, 1),
        ("{{ c.first_name | append: c.last_name }}", "no value for c.last_name and no default", 1, 1),
    ])
    func strictMissingValueFailsWhole(source: String, message: String, line: Int, column: Int) throws {
        let error = try #require(throws: LiquidError.self) { try render(source, profile, strict) }
        #expect(error.kind == .undefined)
        #expect(error.message == message)
        #expect(error.line == line && error.column == column)
        // Ruby Liquid's default (lax) renders it empty.
        #expect(throws: Never.self) { try render(source, profile) }
    }

    @Test(arguments: [
        ("{% if x %}", "'if' tag was never closed", 1, 1),
        ("a\n{{ x | nope }}", "Unknown filter 'nope'", 2, 1),
        ("a\nb {% frobnicate %}", "Unknown tag 'frobnicate'", 2, 3),
        ("{{ x | append }}", "wrong number of arguments for 'append' (given 0, expected 1)", 1, 1),
        ("{{ x ", "Variable '{{' was not properly terminated with '}}'", 1, 1),
        ("é {% endif %}", "Unexpected tag 'endif'", 1, 3),
        ("{% include 'x' %}", "'include' is not supported: reuse text with content_blocks", 1, 1),
    ])
    func syntaxErrorsSayWhere(source: String, message: String, line: Int, column: Int) throws {
        let error = try #require(throws: LiquidError.self) { try LiquidTemplate(parsing: source) }
        #expect(error.kind == .syntax)
        #expect(error.message == message)
        #expect(error.line == line && error.column == column, "\(error)")
    }

    @Test func htmlEscapingByDefaultWithRawToOptOut() throws {
        let variables: LiquidObject = ["name": "<b>Ann & Bo</b>", "bio": "<i>hi</i>"]
        let escape: (inout LiquidRenderOptions) -> Void = { $0.escape = { LiquidFilters.escapeHTML($0) } }
        #expect(try render("{{ name }}", variables, escape) == "&lt;b&gt;Ann &amp; Bo&lt;/b&gt;")
        #expect(try render("{{ bio | raw }}", variables, escape) == "<i>hi</i>")
        #expect(try render("{{ name | escape }}", variables, escape) == "&lt;b&gt;Ann &amp; Bo&lt;/b&gt;")  // not twice
        // Captured text was escaped as it was written: written out again, it is not escaped twice.
        #expect(try render("{% capture g %}Hi {{ name }}{% endcapture %}{{ g }}", variables, escape) == "Hi &lt;b&gt;Ann &amp; Bo&lt;/b&gt;")
        #expect(try render("<p>{{ name }}</p>", variables) == "<p><b>Ann & Bo</b></p>")  // no escaping unless asked
    }

    @Test func workAndOutputAreBounded() throws {
        let loop = try #require(throws: LiquidError.self) {
            try render("{% for i in (1..1000000000) %}x{% endfor %}", LiquidObject()) { $0.maxSteps = 10_000 }
        }
        #expect(loop.kind == .limit)
        let doubling = try #require(throws: LiquidError.self) {
            try render("{% assign s = 'xx' %}{% for i in (1..40) %}{% assign s = s | append: s %}{% endfor %}", LiquidObject()) {
                $0.maxOutputBytes = 1 << 16
            }
        }
        #expect(doubling.kind == .limit)
        let output = try #require(throws: LiquidError.self) {
            try render("{% for i in (1..100) %}0123456789{% endfor %}", LiquidObject()) { $0.maxOutputBytes = 500 }
        }
        #expect(output.kind == .limit)
        #expect(try render("{% for i in (1..10) %}0123456789{% endfor %}", LiquidObject()) { $0.maxOutputBytes = 500 }.count == 100)
    }

    @Test(arguments: [
        (#"{% abort_message("no stock") %}"#, "no stock"),
        ("{% abort_message('no stock') %}", "no stock"),
        ("{% abort_message %}", ""),
        ("{% if c.count > 2 %}{% abort_message('too many') %}{% endif %}never", "too many"),
    ])
    func abortMessage(source: String, reason: String) throws {
        let error = try #require(throws: LiquidError.self) { try render(source, profile) }
        #expect(error.kind == .aborted(reason: reason))
    }

    @Test func contentBlocksRenderWithTheSameVariables() throws {
        var options = LiquidRenderOptions()
        options.contentBlocks = [
            "footer": try LiquidTemplate(parsing: "— {{ c.first_name }}'s team"),
            "outer": try LiquidTemplate(parsing: "[{{content_blocks.${footer}}}]"),
        ]
        let template = try LiquidTemplate(parsing: "Hi{{content_blocks.${outer}}}")
        #expect(template.contentBlocks == ["outer"])
        #expect(try template.render(profile, options: options) == "Hi[— Ada's team]")
        let missing = try #require(throws: LiquidError.self) { try LiquidTemplate(parsing: "{{content_blocks.${nope}}}").render(profile, options: options) }
        #expect(missing.message == "no content block 'nope'")
    }

    @Test func dateWritesInTheRecipientsZone() throws {
        let variables: LiquidObject = ["at": "2026-03-29T00:30:00Z"]
        #expect(try render("{{ at | date: '%Y-%m-%d %H:%M %Z' }}", variables) == "2026-03-29 00:30 UTC")
        #expect(try render("{{ at | date: '%-d %B %H:%M %z' }}", variables) { $0.timeZone = TimeZone(identifier: "Europe/Paris")! } == "29 March 01:30 +0100")
        #expect(try render("{{ 'now' | date: '%s' }}", variables) { $0.now = Date(timeIntervalSince1970: 1_800_000_000) } == "1800000000")
        // A date without a zone is read in the recipient's.
        #expect(try render("{{ '2026-07-01 09:00' | date: '%H:%M %z' }}", variables) { $0.timeZone = TimeZone(identifier: "America/New_York")! } == "09:00 -0400")
    }

    @Test func rubyNumbers() throws {
        #expect(try render("{{ 0.1 | plus: 0.2 }} {{ 7 | divided_by: 2 }} {{ -7 | divided_by: 2 }} {{ -7 | modulo: 3 }}") == "0.3 3 -4 2")
        #expect(try render("{{ 10000000000000000.0 | times: 10 }} {{ 3 | times: 1.0 }} {{ 2.5 | round }} {{ -2.5 | round }}") == "1.0e+17 3.0 3 -3")
        // Floats computed as the decimals they print as (BigDecimal), not as binary floats.
        #expect(try render("{{ 0.1 | times: 3 }} {{ 1.005 | round: 2 }} {{ 2.675 | round: 2 }} {{ 0.3 | minus: 0.1 }} {{ '1.10' | plus: 2 }}") == "0.3 1.01 2.68 0.2 3.1")
        #expect(try render("{{ 123456789.123456789 | times: 1000000000000 }} {{ 0.00001 | plus: 0 }}") == "1.234567891234568e+20 1.0e-05")
        let zero = try #require(throws: LiquidError.self) { try render("{{ 1 | divided_by: 0 }}") }
        #expect(zero.message == "divided by 0")
    }
}
