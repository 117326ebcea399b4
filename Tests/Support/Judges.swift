import Foundation
import Shared
import Testing

/// The Python of the project's virtual environment (scripts/setup.sh), which runs the independent judges: a strict
/// email parser, a YAML 1.2 parser. Records an issue when it is missing.
package func judgePython() -> String {
    let python = repositoryFile(".venv/bin/python")
    #expect(FileManager.default.isExecutableFile(atPath: python), "run scripts/setup.sh: \(python) is missing")
    return python
}

/// A new empty directory under the temporary one, named `<prefix>-<uuid>`; the caller removes it.
package func scratchDirectory(_ prefix: String) throws -> String {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    return directory
}

/// Runs a judge, a Python script given the path of a JSON file holding `cases` as its first argument, with the
/// project's Python; returns its exit status and what it printed (its verdict).
package func runJudge(_ script: String, cases: JSONValue) async throws -> (status: Int32, verdict: String) {
    let directory = try scratchDirectory("herald-judge")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let file = "\(directory)/cases.json"
    try Data(cases.serialized).write(to: URL(fileURLWithPath: file))
    return try await runCommand(judgePython(), ["-c", script, file])
}

/// What `promtool check metrics` (Prometheus' own linter, which scripts/setup.sh takes from Debian's package into .venv)
/// finds wrong in a `/metrics` exposition: one problem a line, none when it is clean. Records an issue when promtool is
/// missing.
package func promtoolProblems(_ exposition: String) async throws -> [String] {
    let promtool = repositoryFile(".venv/bin/promtool")
    #expect(FileManager.default.isExecutableFile(atPath: promtool), "run scripts/setup.sh: \(promtool) is missing")
    let directory = try scratchDirectory("herald-promtool")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let file = "\(directory)/metrics.txt"
    try Data(exposition.utf8).write(to: URL(fileURLWithPath: file))
    let (status, output) = try await runCommand("/bin/sh", ["-c", "\"$0\" check metrics < \"$1\"", promtool, file])
    let problems = output.split(separator: "\n").map(String.init)
    #expect(status == 0 || !problems.isEmpty, "promtool exited \(status) without a word")
    return problems
}

/// docker-compose, the judge of the compose files (its `config` parses and resolves them without an engine), which
/// scripts/setup.sh installs from Debian.
package func dockerCompose() throws -> String {
    let compose = ["/usr/bin/docker-compose", "/usr/local/bin/docker-compose"].first { FileManager.default.isExecutableFile(atPath: $0) }
    return try #require(compose, "docker-compose is not installed (scripts/setup.sh installs it)")
}

/// The DOM headless Chromium (which scripts/setup.sh installs from Debian) holds once it has loaded the HTML file and
/// run its scripts: the judge of the pages Herald writes. Fails when Chromium is missing.
package func chromiumDOM(_ file: String) async throws -> String {
    let chromium = try #require(
        ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) },
        "Chromium is not installed (scripts/setup.sh installs it)")
    let profile = try scratchDirectory("herald-chromium")
    defer { try? FileManager.default.removeItem(atPath: profile) }
    // No sandbox: tests may run as root, where Chromium refuses it; the page is our own, from a local file.
    let (status, dom) = try await runCommand(
        chromium, ["--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile)", "--dump-dom", "file://\(file)"])
    #expect(status == 0, "chromium exited \(status)")
    return dom
}
