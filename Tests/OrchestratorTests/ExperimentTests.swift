import Foundation
import GRDB
import HeraldTestSupport
import Shared
import Testing

@testable import PartitionStore
@testable import OrchestratorDomain

/// Experiments (issue 36, item 3; docs/measurement.md): the assignment against its published vectors and an
/// independent implementation, the split of many profiles, and a campaign's control group and variants.
@Suite("Experiments: assignment, control groups and variants", .serialized)
struct ExperimentTests {
    static let vectorsFile = repositoryFile("docs/experiment-vectors.json")

    static func experiment(_ vector: JSONValue) -> Experiment {
        var variants: [Experiment.Variant] = []
        if case .object(let members)? = vector["variants"] {
            for member in members { variants.append(.init(id: member.key, weight: int(member.value) ?? 0)) }
        }
        return Experiment(controlBasisPoints: int(vector["control_basis_points"]) ?? 0, variants: variants)
    }

    static func int(_ value: JSONValue?) -> Int? { if case .number(let text)? = value { Int(text) } else { nil } }

    @Test("the published vectors: this code and the independent Python implementation compute every one")
    func publishedVectors() async throws {
        let published = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: Self.vectorsFile))))
        guard case .array(let vectors)? = published["vectors"] else { throw TimedOut(what: "vectors in \(Self.vectorsFile)") }
        #expect(vectors.count >= 20)
        var variants: Set<String> = []
        for vector in vectors {
            let experiment = Self.experiment(vector)
            let version = ExperimentAssignment.version(experiment)
            let bucket = ExperimentAssignment.bucket(
                project: vector["project"]?.stringValue ?? "", campaign: vector["campaign"]?.stringValue ?? "", version: version,
                profileKey: vector["profile_key"]?.stringValue ?? "")
            let variant = ExperimentAssignment.variant(bucket: bucket, experiment)
            #expect(version == vector["version"]?.stringValue && bucket == Self.int(vector["bucket"]), "\(vector)")
            #expect(variant == vector["variant"]?.stringValue, "\(vector)")
            variants.insert(variant)
        }
        #expect(variants.isSuperset(of: ["control", "message", "a", "b", "c"]), "the vectors cover every kind of answer: \(variants)")
        let (status, verdict) = try await runCommand(
            judgePython(), [repositoryFile("scripts/experiment-vectors.py"), "--check", Self.vectorsFile])
        #expect(status == 0, "\(verdict)")
    }

    @Test("300 assignments this code makes (random profiles and splits) are the Python implementation's")
    func independentImplementation() async throws {
        var generator = SeededGenerator(seed: 36)
        var vectors: [JSONValue] = []
        for index in 0..<300 {
            let control = [0, 1, 500, 1000, 3333, 9000][index % 6]
            let count = index % 6 == 0 ? 2 + Int.random(in: 0...3, using: &generator) : Int.random(in: 0...4, using: &generator)
            let variants = (0..<(control == 0 ? max(count, 2) : count)).map {
                Experiment.Variant(id: "v\($0)", weight: Int.random(in: 1...100, using: &generator))
            }
            let experiment = Experiment(controlBasisPoints: control, variants: variants)
            let profile = "demo/\(UInt64.random(in: 0...UInt64.max, using: &generator))-é"
            let version = ExperimentAssignment.version(experiment)
            let bucket = ExperimentAssignment.bucket(project: "demo", campaign: "c\(index % 7)", version: version, profileKey: profile)
            vectors.append(.object([
                JSONMember("project", .string("demo")), JSONMember("campaign", .string("c\(index % 7)")),
                JSONMember("control_basis_points", .number(String(control))),
                JSONMember("variants", .object(variants.map { JSONMember($0.id, .number(String($0.weight))) })),
                JSONMember("profile_key", .string(profile)), JSONMember("version", .string(version)),
                JSONMember("bucket", .number(String(bucket))),
                JSONMember("variant", .string(ExperimentAssignment.variant(bucket: bucket, experiment))),
            ]))
        }
        let directory = try scratchDirectory("herald-experiment")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = "\(directory)/vectors.json"
        try Data(JSONValue.object([JSONMember("vectors", .array(vectors))]).serialized).write(to: URL(fileURLWithPath: file))
        let (status, verdict) = try await runCommand(judgePython(), [repositoryFile("scripts/experiment-vectors.py"), "--check", file])
        #expect(status == 0 && verdict.contains("300 vectors, 0 differ"), "\(verdict)")
    }

    @Test("100,000 profiles split within 1 % of the weights; the order the variants are written in moves nobody")
    func split() {
        let experiment = Experiment(controlBasisPoints: 1000, variants: [.init(id: "b", weight: 30), .init(id: "a", weight: 60)])
        let reordered = Experiment(controlBasisPoints: 1000, variants: [.init(id: "a", weight: 60), .init(id: "b", weight: 30)])
        #expect(ExperimentAssignment.version(experiment) == ExperimentAssignment.version(reordered))
        var counts: [String: Int] = [:]
        for index in 0..<100_000 {
            counts[ExperimentAssignment.assign(experiment, project: "demo", campaign: "welcome", profileKey: "demo/u\(index)").variant, default: 0] += 1
        }
        let expected = ["control": 0.10, "a": 0.60, "b": 0.30]
        for (variant, share) in expected {
            let observed = Double(counts[variant] ?? 0) / 100_000
            #expect(abs(observed - share) < 0.01 * share + 0.001, "\(variant): \(observed) for \(share)")
        }
        // A weight changed: a new version (a new experiment), not the old one's profiles moved within it.
        let changed = Experiment(controlBasisPoints: 1000, variants: [.init(id: "a", weight: 50), .init(id: "b", weight: 40)])
        #expect(ExperimentAssignment.version(changed) != ExperimentAssignment.version(experiment))
    }

    static let objects = [
        demoProject,
        #"{"kind":"template","id":"hello","project":"demo","channel":"push","variants":{"default":{"body":"Hello A"}}}"#,
        #"{"kind":"template","id":"hello-b","project":"demo","channel":"push","variants":{"default":{"body":"Hello B"}}}"#,
    ]

    /// Each user's profile, then their SIGNUP event (the campaigns' trigger); returns the users.
    static func signUp(_ harness: EngagementHarness, _ users: [String]) async throws -> [String] {
        var records: [KafkaRecord] = []
        for user in users {
            records.append(try harness.writer.update(id: "p-\(user)", #"{"first_name":"X"}"#, customID: user))
            records.append(harness.writer.record(.event, id: "e-\(user)", customID: user, fields: event("SIGNUP")))
        }
        try await harness.apply(records)
        return users
    }

    static func campaign(_ experiment: String) -> String {
        #"{"kind":"campaign","id":"welcome","project":"demo","trigger":{"event":"signup"},"reeligibility":"once","experiment":\#(experiment),"messages":[{"channel":"push","template":"hello","variants":{"b":"hello-b"}}]}"#
    }

    @Test("a campaign's control group gets nothing and is recorded; each variant sends its template; a replay or a restart assigns the same")
    func campaignVariants() async throws {
        let harness = try await EngagementHarness(try configuration(Self.objects + [Self.campaign(#"{"control":20,"variants":{"a":1,"b":1}}"#)]))
        let users = try await Self.signUp(harness, (0..<60).map { "u\($0)" })
        let experiment = Experiment(controlBasisPoints: 2000, variants: [.init(id: "a", weight: 1), .init(id: "b", weight: 1)])
        let expected = Dictionary(uniqueKeysWithValues: users.map {
            ($0, ExperimentAssignment.assign(experiment, project: "demo", campaign: "welcome", profileKey: "demo/\($0)").variant)
        })
        let sends = try harness.sends()
        #expect(harness.deadLetters.isEmpty, "\(harness.deadLetters)")
        // One send per profile not in the control group, with its variant's template, named on the send.
        #expect(Set(sends.map(\.profileKey)) == Set(users.filter { expected[$0] != "control" }.map { "demo/\($0)" }))
        for send in sends {
            let variant = expected[String(send.profileKey.dropFirst(5))]
            #expect(send.variant == variant && send.experiment == ExperimentAssignment.version(experiment))
            #expect(send.content["body"] == (variant == "b" ? "Hello B" : "Hello A") && send.template == (variant == "b" ? "hello-b" : "hello"))
        }
        let controls = users.filter { expected[$0] == "control" }
        #expect(!controls.isEmpty && sends.contains { $0.variant == "a" } && sends.contains { $0.variant == "b" })
        // Every profile's assignment recorded, the control group's too, and its decision counted for re-eligibility.
        let recorded = try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT profile_key, variant FROM experiment_assignments").map { (String($0[0] as String).dropFirst(5), $0[1] as String) }
        }
        #expect(Dictionary(uniqueKeysWithValues: recorded.map { (String($0.0), $0.1) }) == expected)
        let history = try await harness.database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM campaign_history") }
        #expect(history == users.count)

        // The same profiles again after a restart, under new event ids: `once` holds (control included); a new
        // profile gets the variant the hash says.
        try harness.reopen()
        try await harness.apply([
            harness.writer.record(.event, id: "again", customID: users[0], fields: event("SIGNUP")),
            try harness.writer.update(id: "p-new", #"{"first_name":"X"}"#, customID: "new"),
            harness.writer.record(.event, id: "e-new", customID: "new", fields: event("SIGNUP")),
        ])
        let newVariant = ExperimentAssignment.assign(experiment, project: "demo", campaign: "welcome", profileKey: "demo/new").variant
        #expect(try harness.sends().count == sends.count + (newVariant == "control" ? 0 : 1))
    }

    @Test("conversions: a qualifying purchase in the window counts once per profile for its variant, the control group's too; revenue adds up; outside the window or the condition, nothing")
    func conversions() async throws {
        let campaign = #"{"kind":"campaign","id":"welcome","project":"demo","trigger":{"event":"SIGNUP"},"reeligibility":"once","experiment":{"control":50},"conversions":[{"event":"PURCHASE","where":"event.revenue_usd >= 10","window":"2d"}],"messages":[{"channel":"push","template":"hello"}]}"#
        let harness = try await EngagementHarness(try configuration(Self.objects + [campaign]))
        let experiment = Experiment(controlBasisPoints: 5000, variants: [])
        let version = ExperimentAssignment.version(experiment)
        let users = try await Self.signUp(harness, (0..<40).map { "u\($0)" })
        let variants = Dictionary(uniqueKeysWithValues: users.map {
            ($0, ExperimentAssignment.assign(experiment, project: "demo", campaign: "welcome", profileKey: "demo/\($0)").variant)
        })
        #expect(Set(variants.values) == ["control", "message"])
        // Every user buys twice a day later (12 and 30 USD), then once after the window (50 USD), and once too cheap.
        var records: [KafkaRecord] = []
        for user in users {
            records.append(harness.writer.record(.purchase, id: "b1-\(user)", customID: user, at: t0 + 86_400, fields: purchase("p", price: 12, quantity: 1, revenue: 12)))
            records.append(harness.writer.record(.purchase, id: "b2-\(user)", customID: user, at: t0 + 86_500, fields: purchase("p", price: 30, quantity: 1, revenue: 30)))
            records.append(harness.writer.record(.purchase, id: "b3-\(user)", customID: user, at: t0 + 86_600, fields: purchase("p", price: 5, quantity: 1, revenue: 5)))
            records.append(harness.writer.record(.purchase, id: "b4-\(user)", customID: user, at: t0 + 3 * 86_400, fields: purchase("p", price: 50, quantity: 1, revenue: 50)))
        }
        try await harness.apply(records)
        // A replayed record changes nothing.
        try await harness.apply([harness.writer.record(.purchase, id: "b1-u0", customID: "u0", at: t0 + 86_400, fields: purchase("p", price: 12, quantity: 1, revenue: 12))])
        struct Converted: Sendable { var user, version, variant, firstAt: String; var conversion, events: Int; var revenue: Double }
        let rows = try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM campaign_conversions").map { row in
                Converted(
                    user: String((row["profile_key"] as String).dropFirst(5)), version: row["version"], variant: row["variant"],
                    firstAt: row["first_at"], conversion: row["conversion"], events: row["events"], revenue: row["revenue_usd"])
            }
        }
        #expect(rows.count == users.count, "every profile converted once, control and treated alike")
        for row in rows {
            #expect(row.variant == variants[row.user] && row.version == version && row.conversion == 0)
            #expect(row.events == 2 && row.revenue == 42 && row.firstAt == WireTime.format(t0 + 86_400), "\(row)")
        }
    }

    /// 20 made-up installations once entered the demo's experiment and bought it a revenue of 5.4e19 with a custom
    /// event's `revenue_usd: 9e18`. Revenue is a purchase's own now, and a conversion counts only the customer's
    /// servers' writes unless it says `sources: any`; the Segment source whose users sign their writes is public too.
    @Test("conversions count what a marketer can trust: server writes by default, revenue only from purchases")
    func trustedConversions() async throws {
        let strict = #"{"kind":"campaign","id":"strict","project":"demo","trigger":{"event":"SIGNUP"},"reeligibility":"once","conversions":[{"event":"BOUGHT"},{"event":"PURCHASE"}],"messages":[{"channel":"push","template":"hello"}]}"#
        let open = #"{"kind":"campaign","id":"open","project":"demo","trigger":{"event":"SIGNUP"},"reeligibility":"once","conversions":[{"event":"BOUGHT","sources":"any"},{"event":"PURCHASE","sources":"any"}],"messages":[{"channel":"push","template":"hello"}]}"#
        let harness = try await EngagementHarness(try configuration(Self.objects + [strict, open]))
        let users = try await Self.signUp(harness, ["app", "web", "server"])
        func custom(_ revenue: String) -> [JSONMember] {
            [JSONMember("event", .object([
                JSONMember("name", .string("BOUGHT")), JSONMember("attributes", .object([JSONMember("revenue_usd.f", .number(revenue))])),
            ]))]
        }
        // An app's: a custom event claiming revenue, and a purchase.
        harness.writer.source = .app(id: "ios", dev: false)
        var records = [
            harness.writer.record(.event, id: "a1", customID: "app", installationID: "I-app", at: t0 + 60, fields: custom("9e18")),
            harness.writer.record(.purchase, id: "a2", customID: "app", installationID: "I-app", at: t0 + 61, fields: purchase("p", price: 9, quantity: 1, revenue: 9)),
        ]
        // A website's, through a Segment source whose users sign: `server` on the wire, but a public key.
        harness.writer.source = .server
        var web = IngestRecord(
            op: .purchase, id: "w1", project: "demo", source: .server, customID: "web", installationID: nil, receivedAt: t0 + 60,
            fields: purchase("p", price: 7, quantity: 1, revenue: 7))
        web.publicKey = true
        records.append(harness.writer.record(web))
        // The customer's server's: the custom event's revenue_usd is an attribute, the purchase's is revenue.
        records.append(harness.writer.record(.event, id: "s1", customID: "server", at: t0 + 60, fields: custom("9e18")))
        records.append(harness.writer.record(.purchase, id: "s2", customID: "server", at: t0 + 61, fields: purchase("p", price: 12, quantity: 2, revenue: 24)))
        try await harness.apply(records)
        let rows = try await harness.database.read { db in
            try Row.fetchAll(db, sql: "SELECT campaign_key, profile_key, conversion, revenue_usd FROM campaign_conversions ORDER BY 1, 2, 3").map {
                "\($0["campaign_key"] as String) \($0["profile_key"] as String) \($0["conversion"] as Int) \($0["revenue_usd"] as Double)"
            }
        }
        #expect(users.count == 3)
        #expect(rows == [
            "demo/open demo/app 0 0.0", "demo/open demo/app 1 9.0", "demo/open demo/server 0 0.0", "demo/open demo/server 1 24.0",
            "demo/open demo/web 1 7.0",
            "demo/strict demo/server 0 0.0", "demo/strict demo/server 1 24.0",
        ])
    }

    @Test("a global holdout group: its members get no marketing campaign but the exempt ones (by id or by tag), and every transactional one; recorded per campaign")
    func holdout() async throws {
        let objects = Self.objects + [
            #"{"kind":"holdout","id":"global","project":"demo","percent":40,"exempt_campaigns":["service"],"exempt_tags":["lifecycle"]}"#,
            #"{"kind":"campaign","id":"onboarding","project":"demo","tags":["growth","lifecycle"],"trigger":{"event":"SIGNUP"},"reeligibility":"once","messages":[{"channel":"push","template":"hello"}]}"#,
            #"{"kind":"campaign","id":"promo","project":"demo","tags":["growth"],"trigger":{"event":"SIGNUP"},"reeligibility":"once","messages":[{"channel":"push","template":"hello"}]}"#,
            #"{"kind":"campaign","id":"welcome","project":"demo","trigger":{"event":"SIGNUP"},"reeligibility":"once","messages":[{"channel":"push","template":"hello"}]}"#,
            #"{"kind":"campaign","id":"service","project":"demo","trigger":{"event":"SIGNUP"},"reeligibility":"once","messages":[{"channel":"push","template":"hello"}]}"#,
            #"{"kind":"campaign","id":"receipt","project":"demo","type":"transactional","trigger":{"event":"SIGNUP"},"reeligibility":"once","messages":[{"channel":"push","template":"hello"}]}"#,
        ]
        let harness = try await EngagementHarness(try configuration(objects))
        let users = try await Self.signUp(harness, (0..<50).map { "h\($0)" })
        let group = try #require(harness.rules.config.holdouts["demo/global"])
        let held = Set(users.filter { ExperimentAssignment.isHeldOut("demo/\($0)", by: group) })
        #expect(held.count > 10 && held.count < 30, "about 40 % of 50: \(held.count)")
        let sends = try harness.sends()
        func recipients(_ campaign: String) -> Set<String> { Set(sends.filter { $0.campaign == campaign }.map { String($0.profileKey.dropFirst(5)) }) }
        #expect(recipients("welcome") == Set(users).subtracting(held) && recipients("promo") == Set(users).subtracting(held))
        #expect(recipients("service") == Set(users) && recipients("receipt") == Set(users) && recipients("onboarding") == Set(users))
        let recorded = try await harness.database.read { db in
            try String.fetchAll(db, sql: "SELECT profile_key FROM experiment_assignments WHERE campaign_key = 'demo/welcome' AND variant = 'holdout:global'")
        }
        #expect(Set(recorded.map { String($0.dropFirst(5)) }) == held)
        // A larger share only adds members.
        var larger = group
        larger.basisPoints = 6000
        #expect(held.allSatisfy { ExperimentAssignment.isHeldOut("demo/\($0)", by: larger) })
    }

    @Test("the report's figures: each arm's assigned, its sends by outcome from the notifier's reports (a replay counts once), its conversions")
    func figures() async throws {
        let harness = try await EngagementHarness(
            try configuration(Self.objects + [Self.campaign(#"{"control":20,"variants":{"a":1,"b":1}}"#)]))
        _ = try await Self.signUp(harness, (0..<30).map { "f\($0)" })
        let sends = try harness.sends()
        // The notifier's reports of those sends (the experiment and variant copied from each), one of them twice.
        var records: [KafkaRecord] = []
        let reported: [(Int, SendRequest)] = Array(sends.enumerated().map { ($0.offset, $0.element) }) + [(0, sends[0])]
        for (index, send) in reported {
            var report = DeliveryReport(
                id: "\(send.sendID)/I/\(index % 5 == 4 ? "failed" : "sent")", sendID: send.sendID, project: "demo", customID: send.customID,
                installationID: "I", channel: .push, outcome: index % 5 == 4 ? .failed : .sent, at: t0)
            report.campaign = send.campaign
            (report.experiment, report.variant) = (send.experiment, send.variant)
            records.append(KafkaRecord(
                topic: HeraldTopic.deliveries.name, partition: 0, offset: 1_000 + Int64(records.count) + harness.writer.offset,
                key: Array(send.profileKey.utf8), value: try Wire.encode(report)))
        }
        try await harness.apply(records)
        let figures = try await harness.database.read { db in try ExperimentFigures.read(db, campaign: "demo/welcome", conversions: 0) }
        let version = try #require(sends.first?.experiment)
        for variant in ["a", "b"] {
            let mine = sends.enumerated().filter { $0.element.variant == variant }
            let arm = try #require(figures.arms.first { $0.variant == variant && $0.version == version })
            #expect(arm.assigned == mine.count)
            #expect(arm.sends[.sent, default: 0] == mine.filter { $0.offset % 5 != 4 }.count, "\(arm)")
            #expect(arm.sends[.failed, default: 0] == mine.filter { $0.offset % 5 == 4 }.count, "\(arm)")
        }
        let control = try #require(figures.arms.first { $0.variant == "control" })
        #expect(control.assigned == 30 - sends.count && control.sends.isEmpty)

        // Opens: the app reports every third delivered push opened (once more, and a button of the first), the
        // orchestrator's reports come back on `herald.deliveries` (twice); a mail proxy's open of the second (a machine
        // open) and the inbox's open of the third arrive from the notifier. Each push counts one open for its variant.
        let delivered = sends.enumerated().filter { $0.offset % 5 != 4 }.map(\.element)
        let opened = delivered.enumerated().filter { $0.offset % 3 == 0 }.map(\.element)
        harness.writer.source = .app(id: "ios", dev: false)
        var opens: [KafkaRecord] = []
        for (index, send) in (opened + [opened[0], opened[0]]).enumerated() {
            opens.append(harness.writer.record(
                .pushOpen, id: "open-\(index)", customID: send.customID, installationID: "I",
                fields: pushOpen(send.sendID, action: index == opened.count + 1 ? "BUY" : nil, at: t0 + 5)))
        }
        harness.outbox = []
        try await harness.apply(opens)
        var notifierOpens: [DeliveryReport] = []
        for (send, machine) in [(delivered[1], true), (delivered[4], false)] {
            var report = DeliveryReport(
                id: "\(send.sendID)/I/opened\(machine ? "/machine" : "")", sendID: send.sendID, project: "demo", customID: send.customID,
                installationID: "I", channel: .push, outcome: .opened, at: t0 + 6)
            (report.campaign, report.experiment, report.variant, report.machine) = (send.campaign, send.experiment, send.variant, machine)
            notifierOpens.append(report)
        }
        let echoed = try harness.outbox.filter { $0.topic == HeraldTopic.deliveries.name }.map { try Wire.decode(DeliveryReport.self, from: $0.value ?? []) }
        #expect(echoed.count == opened.count + 1, "one open per push and one button press: \(echoed.map(\.id))")
        var readBack: [KafkaRecord] = []
        for report in echoed + echoed + notifierOpens + notifierOpens {
            readBack.append(KafkaRecord(
                topic: HeraldTopic.deliveries.name, partition: 0, offset: 2_000 + Int64(readBack.count) + harness.writer.offset,
                key: Array(report.key.utf8), value: try Wire.encode(report)))
        }
        try await harness.apply(readBack)
        let engaged = try await harness.database.read { db in try ExperimentFigures.read(db, campaign: "demo/welcome", conversions: 0) }
        let humanOpens = Set((opened + [delivered[4]]).map(\.sendID))
        for variant in ["a", "b"] {
            let arm = try #require(engaged.arms.first { $0.variant == variant && $0.version == version })
            #expect(arm.sends[.opened, default: 0] == humanOpens.filter { id in sends.contains { $0.sendID == id && $0.variant == variant } }.count, "\(arm)")
            #expect(arm.sends[.openedMachine, default: 0] == (delivered[1].variant == variant ? 1 : 0), "\(arm)")
            #expect(arm.sends[.clicked, default: 0] == (opened[0].variant == variant ? 1 : 0), "\(arm)")
        }
        // Two partitions' figures add up.
        #expect(figures.adding(figures).arms.map(\.assigned) == figures.arms.map { $0.assigned * 2 })
    }

    @Test("retention: a version no campaign runs any more goes 90 days after its assignments, with its conversions and send counts; the running one stays")
    func retention() async throws {
        let before = Self.objects + [Self.campaign(#"{"control":20,"variants":{"a":1,"b":1}}"#)]
        let harness = try await EngagementHarness(try configuration(before))
        _ = try await Self.signUp(harness, (0..<10).map { "k\($0)" })
        let old = try #require(try harness.sends().first)
        var report = DeliveryReport(id: "\(old.sendID)/I/sent", sendID: old.sendID, project: "demo", customID: old.customID, channel: .push, outcome: .sent, at: t0)
        report.campaign = old.campaign
        (report.experiment, report.variant) = (old.experiment, old.variant)
        try await harness.apply([KafkaRecord(
            topic: HeraldTopic.deliveries.name, partition: 0, offset: 2_000, key: Array(old.profileKey.utf8), value: try Wire.encode(report))])
        // The split changes: a new version, which the same profiles get on their next decision.
        let rules = EngagementRules(config: try configuration(Self.objects + [Self.campaign(#"{"control":20,"variants":{"a":1,"b":3}}"#)]), clock: { t0 })
        harness.rules = rules
        func rows() async throws -> [Int] {
            try await harness.database.read { db in
                try ["experiment_assignments", "experiment_sends"].map { try Int.fetchOne(db, sql: "SELECT count(*) FROM \($0)") ?? 0 }
            }
        }
        #expect(try await rows() == [10, 1])
        #expect(try await OrchestratorRetention.pruneExperimentAssignments(harness.database, rules: rules, now: t0 + 89 * 86_400) == 0)
        #expect(try await OrchestratorRetention.pruneExperimentAssignments(harness.database, rules: rules, now: t0 + 91 * 86_400) == 11)
        #expect(try await rows() == [0, 0])
        // Under the configuration that runs that version, nothing goes.
        _ = try await Self.signUp(harness, (10..<14).map { "k\($0)" })
        #expect(try await OrchestratorRetention.pruneExperimentAssignments(harness.database, rules: rules, now: t0 + 400 * 86_400) == 0)
        #expect(try await rows() == [4, 0])
    }
}
