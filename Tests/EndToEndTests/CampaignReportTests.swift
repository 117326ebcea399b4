import Crypto
import Foundation
import HeraldTestSupport
import Shared
import Testing

/// `herald campaign report` over two orchestrator processes (issue 36, item 4): the figures of every partition summed,
/// the same from either instance, and equal to what the assignment's hash and the feed say.
@Suite("Campaign report", .timeLimit(.minutes(5)))
struct CampaignReportTests {
    static let users = (0..<24).map { "r\($0)" }

    static func configDirectory() throws -> String {
        let directory = try scratchDirectory("herald-report-config")
        let text = StateMoveTests.projectAndApp + """
            ---
            kind: template
            id: hello
            project: demo
            channel: push
            variants: {default: {body: Hello A}}
            ---
            kind: template
            id: hello-b
            project: demo
            channel: push
            variants: {default: {body: Hello B}}
            ---
            kind: campaign
            id: welcome
            project: demo
            trigger: {event: SIGNUP}
            reeligibility: once
            experiment: {control: 30, variants: {a: 1, b: 1}}
            conversions: [{event: BOUGHT, window: 1d, sources: any}]  # the apps' own events convert
            messages: [{channel: push, template: hello, variants: {b: hello-b}}]
            """
        try text.write(toFile: directory + "/demo.yaml", atomically: true, encoding: .utf8)
        return directory
    }

    @Test("two orchestrators: every arm's assigned and converted, from either instance, as the hash and the feed say")
    func twoInstances() async throws {
        let config = try Self.configDirectory()
        defer { try? FileManager.default.removeItem(atPath: config) }
        let (cluster, ingest, ingestPort) = try await startIngest(config: config)
        let (orchestrators, directories) = try await OrchestratorEndToEndTests.startTwo(cluster, prefix: "herald-report")
        defer { for directory in directories { try? FileManager.default.removeItem(atPath: directory) } }
        // Every user signs up; the even ones also buy (a conversion, in the same request, after the trigger).
        for (index, user) in Self.users.enumerated() {
            let bought = index % 2 == 0 ? #",{"name":"bought","id":"b-\#(user)"}"# : ""
            let (status, body) = try await httpPost(
                "http://127.0.0.1:\(ingestPort)/v1/app/events", headers: signedAppHeaders(user),
                body: #"{"installation_id":"I-\#(user)","custom_id":"\#(user)","events":[{"name":"signup","id":"s-\#(user)"}\#(bought)]}"#)
            #expect(status == 200, "\(body)")
        }
        var expected: [String: (assigned: Int, converted: Int)] = [:]
        for (index, user) in Self.users.enumerated() {
            let variant = Self.variant(of: "demo/\(user)")
            expected[variant, default: (0, 0)].assigned += 1
            if index % 2 == 0 { expected[variant, default: (0, 0)].converted += 1 }
        }
        let herald = binDirectory.appendingPathComponent("herald").path
        @Sendable func report(_ port: Int) async throws -> JSONValue? {
            let (status, output) = try await runCommand(
                herald, ["campaign", "report", "demo", "welcome", "--orchestrator", "http://127.0.0.1:\(port)", "--json"])
            return status == 0 ? try? JSONParser.parse(Array(output.utf8)) : nil
        }
        @Sendable func arms(_ answer: JSONValue?) -> [String: (assigned: Int, converted: Int)] {
            guard case .array(let items)? = answer?["arms"] else { return [:] }
            var result: [String: (Int, Int)] = [:]
            for item in items {
                guard let variant = item["variant"]?.stringValue, case .number(let assigned)? = item["assigned"],
                    case .number(let converted)? = item["converted"]
                else { continue }
                result[variant] = (Int(assigned) ?? -1, Int(converted) ?? -1)
            }
            return result
        }
        let want = expected
        let ports = orchestrators.map(\.1)
        try await waitUntil("both instances' reports to hold every user", timeout: .seconds(60)) {
            for port in ports {
                let got = arms(try await report(port))
                guard got.keys.sorted() == want.keys.sorted(),
                    got.allSatisfy({ want[$0.key]?.assigned == $0.value.assigned && want[$0.key]?.converted == $0.value.converted })
                else { return false }
            }
            return true
        }
        let answer = try await report(ports[0])
        #expect(answer?["sample_ratio"]?["degrees"] == .number("2"), "\(String(describing: answer))")
        #expect(answer?["arms"]?[1]?["uplift"] != nil, "a variant is compared with the control: \(String(describing: answer))")
        // The text form names each arm.
        let (status, text) = try await runCommand(herald, ["campaign", "report", "demo", "welcome", "--orchestrator", "http://127.0.0.1:\(ports[1])"])
        #expect(status == 0 && text.contains("control") && text.contains("sample ratio"), "\(text)")
        #expect(text.contains("converted: BOUGHT within 1d of the assignment, from any source, apps and web pages included"), "\(text)")
        #expect(answer?["conversion"]?["sources"] == .string("any"), "\(String(describing: answer))")
        // The page, as Chromium lays it out: every arm named beside a visible bar in each chart, and in the table.
        let (pageStatus, page) = try await runCommand(
            herald, ["campaign", "report", "demo", "welcome", "--orchestrator", "http://127.0.0.1:\(ports[0])", "--html"])
        #expect(pageStatus == 0 && page.hasPrefix("<!doctype html>"), "\(page.prefix(300))")
        #expect(!page.contains("<script") && !page.contains("src=") && !page.contains("href="), "self-contained, nothing fetched or run")
        let rendered = try await Self.rendered(page, arms: ["control", "a", "b"])
        #expect(rendered?["charts"] == .number("2"), "the conversion rate and the uplift (nothing was delivered, so no open or click rate): \(String(describing: rendered))")
        #expect(rendered?["missing"] == .array([]), "\(String(describing: rendered))")
        #expect(rendered?["table"] == .array(["control", "a", "b"].map { .string($0) }), "\(String(describing: rendered))")

        for (process, _) in orchestrators { process.signal(SIGTERM) }
        for (process, _) in orchestrators { _ = try await process.waitForExit() }
        ingest.signal(SIGTERM)
        _ = try await ingest.waitForExit()
        await cluster.shutdown()
    }

    /// What Chromium shows of the report page: how many charts, which arm is not named beside a visible bar in a chart
    /// that should have it (the uplift chart has the variants only), and the table's arms. A script added to a copy of
    /// the page measures the laid-out elements and writes its verdict into the DOM Chromium dumps.
    static func rendered(_ page: String, arms: [String]) async throws -> JSONValue? {
        let directory = try scratchDirectory("herald-report-page")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let check = #"""
            <script>
            const arms = JSON.parse(document.currentScript.dataset.arms);
            const visible = e => { const r = e.getBoundingClientRect(), s = getComputedStyle(e);
              return r.width > 0 && r.height > 0 && s.visibility !== "hidden" && s.display !== "none"; };
            const charts = [...document.querySelectorAll("svg.chart")];
            const missing = [];
            for (const chart of charts) {
              const label = chart.getAttribute("aria-label");
              for (const arm of arms.filter(arm => !(label.startsWith("Uplift") && arm === "control"))) {
                const named = [...chart.querySelectorAll("text")].some(t => t.textContent === arm && visible(t));
                const bar = [...chart.querySelectorAll("rect.bar")].find(r => r.dataset.arm === arm);
                if (!named || !bar || !visible(bar)) missing.push(label + ": " + arm);
              }
            }
            const table = [...document.querySelectorAll("table tr td:first-child")].filter(visible).map(td => td.textContent);
            const out = document.createElement("pre");
            out.id = "verdict";
            out.textContent = JSON.stringify({charts: charts.length, missing, table});
            document.body.appendChild(out);
            </script>
            """#
        let arguments = String(decoding: JSONValue.array(arms.map { .string($0) }).serialized, as: UTF8.self)
        let checked = page.replacingOccurrences(
            of: "</body>", with: check.replacingOccurrences(of: "<script>", with: "<script data-arms='\(arguments)'>") + "</body>")
        try checked.write(toFile: "\(directory)/report.html", atomically: true, encoding: .utf8)
        let dom = try await chromiumDOM("\(directory)/report.html")
        guard let start = dom.range(of: "<pre id=\"verdict\">"), let end = dom.range(of: "</pre>", range: start.upperBound..<dom.endIndex)
        else { return nil }
        let text = String(dom[start.upperBound..<end.lowerBound]).replacingOccurrences(of: "&quot;", with: "\"")
            .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
        return try JSONParser.parse(Array(text.utf8))
    }

    /// The documented assignment (docs/measurement.md) of `control: 30, variants: {a: 1, b: 1}`, from its rules.
    static func variant(of profileKey: String) -> String {
        func sha256(_ text: String) -> [UInt8] { Array(SHA256.hash(data: Array(text.utf8))) }
        let version = "v" + sha256("control=3000;a=1;b=1").prefix(8).map { String(format: "%02x", $0) }.joined()
        let digest = sha256(["herald-experiment-1", "demo", "welcome", version, profileKey].joined(separator: "\n"))
        let bucket = Int(digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 10_000)
        if bucket < 3000 { return "control" }
        return (bucket - 3000) * 2 < 1 * 7000 ? "a" : "b"
    }
}
