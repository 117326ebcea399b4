import Foundation
import HeraldTestSupport
import Testing

/// `herald config` reads YAML 1.2 (its core schema), judged by ruamel.yaml, a YAML 1.2 parser (in .venv): a value that
/// YAML 1.1 reads as a boolean or a base-60 number (`id: NO`, Norway, was the boolean false) is text.
@Suite("herald config reads YAML 1.2", .timeLimit(.minutes(5)))
struct YAMLConfigTests {
    static var herald: String { binDirectory.appendingPathComponent("herald").path }

    /// Loads each file with ruamel.yaml (YAML 1.2) and compares every document with the object `herald config show`
    /// printed for it (argv: the directory, herald's output); prints each difference, exits 1 if any.
    static let judge = #"""
        import json, os, sys
        from ruamel.yaml import YAML
        directory, shown = sys.argv[1], {}
        for line in open(sys.argv[2]):
            record = json.loads(line)
            shown[(record["file"], record["object"]["id"])] = record["object"]
        problems, compared = [], 0
        for name in sorted(os.listdir(directory)):
            for document in YAML(typ="safe", pure=True).load_all(open(os.path.join(directory, name))):
                ours = shown.get((name, document["id"]))
                compared += 1
                if ours != document:
                    problems.append(f"{name} {document['id']}: herald {json.dumps(ours)} != ruamel {document!r}")
        print("\n".join(problems) or f"{compared} objects alike")
        sys.exit(1 if problems or compared == 0 else 0)
        """#

    @Test("what herald config show prints is what a YAML 1.2 parser reads: NO, no, on, off, y, n, 21:00 are text")
    func yamlCoreSchema() async throws {
        let python = judgePython()
        let directory = try scratchDirectory("herald-yaml")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func write(_ name: String, _ text: String) throws {
            try text.write(toFile: (directory as NSString).appendingPathComponent(name), atomically: true, encoding: .utf8)
        }
        try write("project.yaml", "kind: project\nid: NO\ndefault_language: no\ntimezone: Europe/Oslo\n")
        try write(
            "template.yaml",
            """
            kind: template
            id: on
            project: NO
            channel: push
            variants:
              default: {title: yes, body: off}
              no: {title: y, body: n}
            payload:
              yes_words: [yes, Yes, YES, no, No, NO, on, On, ON, off, Off, OFF, y, Y, n, N]
              booleans: [true, True, TRUE, false, False, FALSE]
              times: [21:00, '08:30', 12:30:45, 190:20:30]
              decimals: [0755, 12, +12, -7, 0]
              other_bases: [0o17, 0x1F]
              floats: [1e3, .5, 1., -0.25, +2.5E-3, 1.0]
              quoted: ['yes', "on", '0755', "true"]
              nested: {on: off, 'no': yes}
            """)
        let (shown, output) = try await runCommand(Self.herald, ["config", "show", directory])
        #expect(shown == 0, "\(output)")
        let printed = directory + ".shown"
        defer { try? FileManager.default.removeItem(atPath: printed) }
        try output.write(toFile: printed, atomically: true, encoding: .utf8)
        let (judged, verdict) = try await runCommand(python, ["-c", Self.judge, directory, printed])
        #expect(judged == 0, "\(verdict)")
        #expect(verdict.contains("2 objects alike"), "\(verdict)")
        #expect(output.contains(#""id":"NO""#) && output.contains(#""default_language":"no""#), "\(output)")
    }

    /// Where ruamel.yaml goes beyond the core schema (YAML 1.1's `1_000`, `0b101` and dates), Herald keeps to it: text.
    @Test("1_000, 0b101 and 2026-11-26 are text, as the core schema says; .inf is refused with its line")
    func beyondTheCoreSchema() async throws {
        let directory = try scratchDirectory("herald-yaml")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let template = """
            kind: template
            id: t
            project: demo
            channel: push
            variants: {default: {title: T, body: B}}
            payload: {a: 1_000, b: 0b101, c: 2026-11-26%@}
            """
        try "kind: project\nid: demo\n".write(toFile: directory + "/project.yaml", atomically: true, encoding: .utf8)
        try String(format: template, "").write(toFile: directory + "/t.yaml", atomically: true, encoding: .utf8)
        let (shown, output) = try await runCommand(Self.herald, ["config", "show", directory])
        #expect(shown == 0, "\(output)")
        #expect(output.contains(#""payload":{"a":"1_000","b":"0b101","c":"2026-11-26"}"#), "\(output)")
        try String(format: template, ", d: .inf").write(toFile: directory + "/t.yaml", atomically: true, encoding: .utf8)
        let (refused, problems) = try await runCommand(Self.herald, ["config", "show", directory])
        #expect(refused == 1)
        #expect(problems.contains("t.yaml:6: .inf: not a number JSON can hold"), "\(problems)")
    }
}
