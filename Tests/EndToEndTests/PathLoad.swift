import Foundation
import HeraldTestSupport
import ProviderSimulators
import Shared

/// One phase of the whole-path benchmark (`WholePathBenchmark`): events posted to the ingest's server API at a steady
/// rate, each triggering a push; what each push took per hop, and the CPU each service used meanwhile, from the
/// kernel's accounting of its process.
struct PathLoad {
    let ingestPort: Int
    /// The `sent` reports read from `herald.deliveries`, by send id (filled by the benchmark's reader).
    let reports: Locked<[String: DeliveryReport]>
    let simulators: SimulatorState
    /// Every process of the services, under its service's name (several under one name: their CPU is summed).
    let processes: [(name: String, pid: pid_t)]

    /// The services' names, once each, in order.
    var services: [String] {
        processes.reduce(into: [String]()) { names, process in if !names.contains(process.name) { names.append(process.name) } }
    }

    struct Result {
        var lines: String
        var p50: Double
        var p99: Double
        var hopP99: (decide: Double, request: Double, answer: Double)
        /// CPU seconds per 1,000 events, by service: whole, and net of what the service uses idle.
        var cpuPerThousand: [String: Double]
        var netCPUPerThousand: [String: Double]
        /// This benchmark process's CPU seconds per 1,000 events: the embedded broker's threads, and the rest (the load's
        /// HTTP client, the APNs simulator, the reports' reader): what is not the carrier's, printed apart.
        var brokerPerThousand: Double
        var loadPerThousand: Double
    }

    /// Posts `rate` events a second for `seconds` (one request per tick with the tick's events, one per user in turn:
    /// at most 100 ticks a second, each when its first event is due), waits for every push to be answered, and
    /// measures. Event
    /// ids carry `phase`, so that phases never dedupe. The CPU is given whole, and net of `idle` (each service's CPU
    /// seconds per second with no load, `idleCPU`).
    func run(rate: Int, seconds: Int, phase: Int, idle: [String: Double]) async throws -> Result {
        reports.withLock { $0.removeAll() }
        simulators.reset()
        let users = WholePathBenchmark.users
        let total = rate * seconds
        let perTick = (rate + 99) / 100
        let answers = Locked<[Double]>([])
        /// Requests not answered 200 (their events never reach the path): said when the phase does not finish.
        let refused = Locked<[String]>([])
        let cpuBefore = cpuSeconds()
        let threadsBefore = Self.threadSeconds()
        let start = Date()
        var posted = 0
        while posted < total {
            let due = start.addingTimeInterval(Double(posted) / Double(rate))
            if due > Date() { try await Task.sleep(for: .seconds(due.timeIntervalSinceNow)) }
            let count = min(perTick, total - posted)
            let body = (posted..<(posted + count)).map { n in
                #"{"identifiers":{"custom_id":"u\#(n % users)"},"events":[{"name":"tap","id":"tap-\#(phase)-\#(n)","attributes":{"item":"i\#(n % 50)"}}]}"#
            }.joined(separator: ",")
            posted += count
            Task { [ingestPort] in
                let sent = Date()
                do {
                    let (status, answer) = try await httpPost(
                        "http://127.0.0.1:\(ingestPort)/v1/profiles/update",
                        headers: ["Authorization": "Bearer rest_demo_0123456789abcdef"], body: "[\(body)]")
                    if status == 200 {
                        answers.withLock { $0.append(Date().timeIntervalSince(sent) * 1000) }
                    } else {
                        refused.withLock { $0.append("\(status) \(answer.prefix(200))") }
                    }
                } catch {
                    refused.withLock { $0.append("\(error)") }
                }
            }
        }
        let produceSeconds = Date().timeIntervalSince(start)
        do {
            try await waitUntil("every push answered", timeout: .seconds(300)) { reports.withLock { $0.count } >= total }
        } catch {
            let refusals = refused.withLock { $0 }
            print("  phase \(phase): \(reports.withLock { $0.count }) of \(total) pushes answered; \(refusals.count) requests refused\(refusals.first.map { ", the first: \($0)" } ?? "")")
            throw error
        }
        let busy = Date().timeIntervalSince(start)
        let cpuAfter = cpuSeconds()
        let threadsAfter = Self.threadSeconds()

        // The provider's side: when each push reached the simulator.
        var arrivals: [String: Date] = [:]
        for received in simulators.received("apns") {
            guard let payload = try? JSONParser.parse(Array(received.body.utf8)),
                case .string(let sendID)? = payload["com.herald"]?["i"]
            else { continue }
            arrivals[sendID] = min(arrivals[sendID] ?? received.at, received.at)
        }
        var (decide, request, answer, steady, all): ([Double], [Double], [Double], [Double], [Double]) = ([], [], [], [], [])
        for report in reports.withLock({ Array($0.values) }) {
            guard let triggered = report.triggeredAt, let decided = report.decidedAt, let arrival = arrivals[report.sendID ?? ""]
            else { continue }
            let total = report.at.timeIntervalSince(triggered) * 1000
            all.append(total)
            // The steady state: the first second is the services' first batches at this rate.
            guard triggered >= start.addingTimeInterval(1) else { continue }
            decide.append(decided.timeIntervalSince(triggered) * 1000)
            request.append(arrival.timeIntervalSince(decided) * 1000)
            answer.append(report.at.timeIntervalSince(arrival) * 1000)
            steady.append(total)
        }
        var (cpu, net): ([String: Double], [String: Double]) = ([:], [:])
        for name in services {
            let used = (cpuAfter[name] ?? 0) - (cpuBefore[name] ?? 0)
            cpu[name] = used * 1000 / Double(total)
            net[name] = max(0, used - (idle[name] ?? 0) * busy) * 1000 / Double(total)
        }
        var threads: [String: Double] = [:]
        for (name, seconds) in threadsAfter { threads[name] = seconds - (threadsBefore[name] ?? 0) }
        let broker = threads.filter { Self.isBroker($0.key) }.values.reduce(0, +)
        let rest = threads.filter { !Self.isBroker($0.key) }.values.reduce(0, +)
        let busiest = threads.sorted { $0.value > $1.value }.prefix(6)
            .map { String(format: "%@ %.2f s", $0.key, $0.value * 1000 / Double(total)) }.joined(separator: ", ")
        let used = cpu.values.reduce(0, +)
        let usedNet = net.values.reduce(0, +)
        func perService(_ figures: [String: Double]) -> String {
            services.map { String(format: "%@ %.2f s", $0, figures[$0] ?? 0) }.joined(separator: ", ")
        }
        let lines = """
              phase \(phase): \(total) events at \(rate)/s for \(seconds) s over HTTP (posted in \(String(format: "%.1f", produceSeconds)) s) -> \(reports.withLock { $0.count }) pushes answered, \(arrivals.count) reached APNs
            \(Self.line("HTTP answer (broker acknowledged)", answers.withLock { $0 }))
            \(Self.line("ingest -> decision", decide))
            \(Self.line("decision -> APNs request", request))
            \(Self.line("APNs request -> answer recorded", answer))
            \(Self.line("event -> provider answer (steady)", steady))
            \(Self.line("event -> provider answer (whole phase)", all))
                CPU per 1,000 events: \(perService(cpu)); all \(String(format: "%.2f", used)) s (\(String(format: "%.0f", used * 1000)) µs per event; \(String(format: "%.2f", used * Double(total) / 1000 / busy)) cores busy over the \(String(format: "%.1f", busy)) s)
                net of idle: \(perService(net)); all \(String(format: "%.2f", usedNet)) s (\(String(format: "%.0f", usedNet * 1000)) µs per event)
                not the carrier's, per 1,000 events: embedded broker \(String(format: "%.2f", broker * 1000 / Double(total))) s, the benchmark's load, simulator and reader \(String(format: "%.2f", rest * 1000 / Double(total))) s (busiest threads: \(busiest))
            """
        return Result(
            lines: lines, p50: percentile(steady, 0.5), p99: percentile(steady, 0.99),
            hopP99: (percentile(decide, 0.99), percentile(request, 0.99), percentile(answer, 0.99)),
            cpuPerThousand: cpu, netCPUPerThousand: net, brokerPerThousand: broker * 1000 / Double(total),
            loadPerThousand: rest * 1000 / Double(total))
    }

    /// Each service's CPU seconds per second with no events (its consumers polling the broker, its tickers), over
    /// `seconds`.
    func idleCPU(seconds: Double) async throws -> [String: Double] {
        let before = cpuSeconds()
        try await Task.sleep(for: .seconds(seconds))
        let after = cpuSeconds()
        return after.reduce(into: [:]) { idle, entry in idle[entry.key] = (entry.value - (before[entry.key] ?? 0)) / seconds }
    }

    /// User and system CPU seconds each service's processes have used so far (`stat`).
    func cpuSeconds() -> [String: Double] {
        var seconds: [String: Double] = [:]
        for (name, pid) in processes {
            guard let used = Self.stat("/proc/\(pid)/stat")?.seconds else { continue }
            seconds[name, default: 0] += used
        }
        return seconds
    }

    /// This process's CPU seconds so far by thread name (`/proc/self/task/<tid>/stat`; digits at the end of a name
    /// dropped, so that a pool's threads add up under one name).
    static func threadSeconds() -> [String: Double] {
        var seconds: [String: Double] = [:]
        for task in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? [] {
            guard let (name, used) = stat("/proc/self/task/\(task)/stat") else { continue }
            seconds[String(name.reversed().drop(while: \.isNumber).reversed()), default: 0] += used
        }
        return seconds
    }

    /// A process's or a thread's name and the user and system CPU seconds it has used: fields 14 and 15 of its `stat`
    /// file, in clock ticks, counted after the name's closing parenthesis (a name may itself hold spaces).
    static func stat(_ path: String) -> (name: String, seconds: Double)? {
        guard let stat = try? String(contentsOfFile: path, encoding: .utf8), let open = stat.firstIndex(of: "("),
            let close = stat.lastIndex(of: ")"), open < close
        else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (String(stat[stat.index(after: open)..<close]), (user + system) / Double(sysconf(Int32(_SC_CLK_TCK))))
    }

    /// The embedded broker's threads: librdkafka's mock cluster (`EmbeddedKafkaCluster`).
    static func isBroker(_ thread: String) -> Bool { thread.hasPrefix("rdk:mock") }

    static func line(_ name: String, _ values: [Double]) -> String {
        "    " + name.padding(toLength: 40, withPad: " ", startingAt: 0)
            + String(format: " p50 %7.1f ms   p99 %7.1f ms   max %7.1f ms", percentile(values, 0.5), percentile(values, 0.99), values.max() ?? .nan)
    }
}
