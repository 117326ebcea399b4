import Foundation
import Testing

@testable import Liquid

/// No value a template reads can stop the process that renders it: every standard filter and tag, rendered with the
/// extreme values a profile attribute, an event property or a computation can hold (Int.min, Int.max, -1, 0, ±1e308,
/// infinities, huge ranges, digit strings, non-numbers), either renders or fails with a `LiquidError`. Swift traps on
/// an overflow, an out-of-range conversion or index, so each form runs in a child process: a trap ends the child with a
/// signal, and the last line the child wrote to its progress file names the case it was rendering.
@Suite("Liquid: hostile values", .timeLimit(.minutes(5)))
struct LiquidHostileValuesTests {
    /// The values every operand takes, by name (the name is what a failure prints).
    static let values: [(name: String, value: LiquidValue)] = [
        ("Int.min", .int(Int.min)), ("Int.max", .int(Int.max)), ("-1", -1), ("0", 0), ("1", 1), ("2", 2),
        ("1e308", .double(1e308)), ("-1e308", .double(-1e308)), ("inf", .double(.infinity)), ("-inf", .double(-.infinity)),
        ("nan", .double(.nan)), ("5e-324", .double(5e-324)), ("9.3e18", .double(9.3e18)), ("-0.5", .double(-0.5)),
        ("'Int.min'", .string(String(Int.min))), ("'Int.max'", .string(String(Int.max))),
        ("'99999999999999999999'", "99999999999999999999"), ("'-99999999999999999999.5'", "-99999999999999999999.5"),
        ("'1e400'", "1e400"), ("'abc'", "abc"), ("''", ""), ("nil", .nil), ("true", true),
        ("[1,'a',nil]", [1, "a", .nil]), ("{a:1}", ["a": 1]), ("(Int.min..Int.max)", .range(Int.min, Int.max)),
        ("(1..Int.max)", .range(1, Int.max)), ("(Int.min..0)", .range(Int.min, 0)), ("(5..1)", .range(5, 1)),
    ]

    /// One template per filter and arity, and the tags that take numbers: `x`, `y` and `z` are bound to every value.
    static let forms: [String] = {
        var forms: [String] = []
        for (name, arity) in LiquidFilters.arities.sorted(by: { $0.key < $1.key }) {
            for count in arity {
                let arguments = ["y", "z"].prefix(count).joined(separator: ", ")
                forms.append(count == 0 ? "{{ x | \(name) }}" : "{{ x | \(name): \(arguments) }}")
            }
        }
        forms += [
            "{{ x | default: y, allow_false: z }}", "{{ x | date: '%s %Y %C %y %m %B %b %d %e %j %H %I %l %p %M %S %L %N %z %Z %A %a %u %w %c %-10Y' }}",
            "{{ x | date: y }}", "{{ 'now' | date: x }}", "{{ x | round: y }}", "{{ x | times: y | round: z }}",
            "{% for i in (x..y) %}{{ i }}{% endfor %}", "{% for i in (x..y) reversed limit: z %}{{ forloop.rindex }}{% endfor %}",
            "{% for i in (1..5) offset: x limit: y %}{{ i }}{% endfor %}", "{% for i in (x..y) offset: z %}{{ i }}{% endfor %}",
            "{% for i in (x..5) limit: y %}{{ i }}{% endfor %}", "{% for i in (1..x) limit: y offset: z %}{{ i }}{% endfor %}",
            "{% for i in list offset: x limit: y %}{{ i }}{% endfor %}{% for i in list offset: continue limit: z %}{{ i }}{% endfor %}",
            "{% for i in x offset: y limit: z %}{{ i }}{% else %}none{% endfor %}",
            "{% tablerow i in list cols: x limit: y offset: z %}{{ tablerowloop.col }}{% endtablerow %}",
            "{% tablerow i in (x..y) cols: z %}{{ i }}{% endtablerow %}",
            "{% increment x %}{% increment x %}{{ x }}", "{% decrement x %}{% decrement x %}{{ x }}",
            "{% increment n %}{% decrement n %}", "{% cycle x, y, z %}{% cycle x, y, z %}{% cycle 'g': x, y %}",
            "{% if x < y %}a{% elsif x >= z %}b{% endif %}{% if x == y or y contains z %}c{% endif %}",
            "{% case x %}{% when y %}a{% when z, 1 %}b{% else %}c{% endcase %}", "{% unless x > y %}d{% endunless %}",
            "{{ list[x] }}{{ list[y] }}{{ x[y] }}{{ x.size }}{{ x.first }}{{ x.last }}",
            "{% assign r = (x..y) %}{{ r.size }}{{ r.first }}{{ r.last }}{{ r[z] }}{{ r[-1] }}{% if r contains z %}in{% endif %}",
            "{{ (x..y) }}{{ (x..y) | json }}{{ (x..y) | join: ',' }}{{ (x..y) | first }}{{ (x..y) | last }}{{ (x..y) | size }}",
            "{% assign a = x | plus: y %}{% assign b = a | minus: z %}{% capture c %}{{ a }}{{ b }}{% endcapture %}{{ c }}",
            "{{ x | plus: y | times: z | divided_by: y | modulo: z | abs | ceil | floor }}",
            "{{ x | at_least: y | at_most: z }}{{ x | slice: y, z }}{{ list | slice: y, z }}{{ 'abc' | slice: y, z }}",
            "{{ 'abc' | truncate: x, y }}{{ 'a b c' | truncatewords: x, y }}{{ 'abc' | truncate: y }}",
            "{{ list | map: x }}{{ list | where: x, y }}{{ list | find_index: x }}{{ list | sum: x }}{{ list | sort: x }}",
            "{{ x | split: y | join: z }}{{ x | json }}{{ x | base64_encode | base64_decode }}",
        ]
        return forms
    }()

    /// What Herald answers where Ruby's integers would grow past 64 bits, or Ruby raises (docs/templates.md, "Numbers
    /// past 64 bits"): the float nearest Ruby's bignum, Ruby's own answer where it has one that fits, else a render
    /// error (nil here).
    @Test(arguments: [
        // Ruby: 9223372036854775808 (a bignum); Herald: the float nearest it.
        ("{{ min | divided_by: -1 }}", "9.223372036854776e+18"),
        ("{{ min | modulo: -1 }}", "0"),
        ("{{ max | plus: 1 }}", "9.223372036854776e+18"),
        ("{{ min | abs }}", "9.223372036854776e+18"),
        ("{{ max | times: max }}", "8.507059173023462e+37"),
        ("{{ max | round: -1 }}", "9.223372036854776e+18"),
        // Ruby: BigDecimal to_f.
        ("{{ big | times: 10 }}", "Infinity"),
        ("{{ big | plus: 1 }}", "1.0e+308"),
        ("{{ big | divided_by: tiny }}", "Infinity"),
        ("{{ big | ceil }}", "1.0e+308"),
        ("{{ big | round: 2 }}", "1.0e+308"),
        // Ruby: FloatDomainError.
        ("{{ big | times: 10 | ceil }}", nil),
        ("{{ big | times: 10 | round }}", nil),
        // Ruby's Time reads it (year 292277026596); Herald reads the years 1 to 9999 and writes anything else unchanged.
        ("{{ max | date: '%s' }}", "9223372036854775807"),
        ("{{ 253402300799 | date: '%Y' }}", "9999"),
        ("{{ -62135596801 | date: '%Y' }}", "-62135596801"),
        // Offsets and limits past every item.
        ("{{ 'abc' | truncate: min }}", "..."),
        ("{{ 'abcdef' | slice: 2, max }}", "cdef"),
        ("{% for i in (1..5) offset: max %}{{ i }}{% endfor %}", ""),
        ("{% for i in (1..5) limit: max %}{{ i }}{% endfor %}", "12345"),
        ("{% for i in (3..max) limit: 2 %}{{ i }}{% endfor %}", "34"),
        ("{% for i in (min..max) limit: 2 %}{{ i }}{% endfor %}", "-9223372036854775808-9223372036854775807"),
        ("{% assign r = (min..max) %}{{ r.size }} {{ r.first }} {{ r.last }} {{ r[-1] }} {{ r[max] }}",
            "1.8446744073709552e+19 -9223372036854775808 9223372036854775807 9223372036854775807 -1"),
        ("{% assign r = (1..max) %}{{ r[min] }}|{{ r | size }}", "|9223372036854775807"),
        // Past the work bound rather than past memory.
        ("{{ (1..max) | join: ',' }}", nil),
        ("{% for i in (min..max) %}{{ i }}{% endfor %}", nil),
        // A counter past Int (Ruby: a bignum) fails rather than wraps.
        ("{% increment max %}", nil),
        ("{% decrement min %}", nil),
    ] as [(String, String?)])
    func answers(source: String, expected: String?) throws {
        let variables: LiquidObject = ["min": .int(Int.min), "max": .int(Int.max), "big": .double(1e308), "tiny": .double(1e-300)]
        let template = try LiquidTemplate(parsing: source)
        if let expected {
            #expect(try template.render(variables) == expected)
        } else {
            #expect(throws: LiquidError.self) { try template.render(variables) }
        }
    }

    /// The third operand's values: the extremes only (it multiplies the cases of the forms that have one).
    static let thirds: [(name: String, value: LiquidValue)] = values.filter {
        ["Int.min", "Int.max", "-1", "0", "1e308", "inf", "nan", "'abc'", "nil", "(Int.min..Int.max)"].contains($0.name)
    }

    /// The forms in groups, one child process each: a process per form spent more starting than rendering.
    static let groups: [Int] = Array(stride(from: 0, to: forms.count, by: 12))

    /// Every form renders in a child process, with every combination of operands; any trap fails its group, naming the
    /// form and the operands it was rendering.
    @Test("every filter and tag survives extreme operands", arguments: groups)
    func survives(group: Int) async {
        let progress = FileManager.default.temporaryDirectory.appendingPathComponent("liquid-hostile-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: progress) }
        let result = await #expect(processExitsWith: .success) { [group = group as Int, progress = progress as String] in
            Self.renderEveryCombination(Array(Self.forms[group..<min(group + 12, Self.forms.count)]), progress: progress)
        }
        if result == nil {
            let written = (try? String(contentsOfFile: progress, encoding: .utf8)) ?? ""
            Issue.record("stopped the process at: \(written.split(separator: "\n").last.map(String.init) ?? "(nothing written)")")
        }
    }

    /// Renders each of `forms` with x and y bound to every value and z to the extremes (when the form has a z), writing
    /// each case to `progress` first.
    static func renderEveryCombination(_ forms: [String], progress: String) {
        FileManager.default.createFile(atPath: progress, contents: nil)
        guard let file = FileHandle(forWritingAtPath: progress) else { exit(2) }
        for form in forms {
            guard let template = try? LiquidTemplate(parsing: form) else {
                file.write(Data("\(form): the form does not parse\n".utf8))
                exit(2)
            }
            let usesZ = form.contains(/\bz\b/)
            for x in values {
                for y in values {
                    for z in usesZ ? thirds : [values[3]] {
                        file.write(Data("\(form) with x=\(x.name) y=\(y.name) z=\(z.name)\n".utf8))
                        let variables: LiquidObject = ["x": x.value, "y": y.value, "z": z.value, "list": [1, 2, 3, "a", .nil]]
                        for strict in [false, true] {
                            var options = LiquidRenderOptions()
                            options.strictVariables = strict
                            options.maxSteps = 100_000
                            do {
                                _ = try template.render(variables, options: options)
                            } catch {
                                // A LiquidError is an answer: the message is not sent.
                            }
                        }
                    }
                }
            }
        }
    }
}
