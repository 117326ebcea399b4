import Crypto
import Foundation
import Logging
import HeraldTestSupport
import Shared
import Testing
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Where `swift build` put the executables: HERALD_BIN_DIR, else the folder of the test bundle.
let binDirectory: URL = {
    if let dir = ProcessInfo.processInfo.environment["HERALD_BIN_DIR"] { return URL(fileURLWithPath: dir) }
    var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
    while url.path != "/" {
        if FileManager.default.fileExists(atPath: url.appendingPathComponent("herald-ingest").path) { return url }
        url.deleteLastPathComponent()
    }
    return URL(fileURLWithPath: ".build/debug")
}()

let quietLogger = Logger(label: "e2e", factory: { _ in SwiftLogNoOpLogHandler() })

/// A child process with its output collected line by line.
final class ChildProcess: Sendable {
    let name: String
    private let process: Spawned
    private let lines = Locked<[String]>([])

    /// `keep`: which output lines are kept (all of them unless told; a benchmark of a million sends drops the line
    /// of each).
    init(
        _ executable: String, arguments: [String] = [], environment: [String: String],
        keep: @escaping @Sendable (String) -> Bool = { _ in true }
    ) throws {
        name = executable
        let buffer = Locked([UInt8]())
        process = try Spawned(
            binDirectory.appendingPathComponent(executable).path, arguments: arguments, environment: environment
        ) { [lines] chunk in
            buffer.withLock { data in
                data.append(contentsOf: chunk)
                var start = 0
                while let newline = data[start...].firstIndex(of: 0x0A) {
                    let line = String(decoding: data[start..<newline], as: UTF8.self)
                    if keep(line) { lines.withLock { $0.append(line) } }
                    start = newline + 1
                }
                data.removeFirst(start)
            }
        }
    }

    var output: [String] { lines.withLock { $0 } }
    var exitCode: Int32? { process.exitCode }
    var pid: pid_t { process.pid }

    /// The JSON log lines whose `msg` is `message`.
    func logs(_ message: String) -> [[String: Any]] {
        output.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["msg"] as? String == message
            else { return nil }
            return object
        }
    }

    func signal(_ signal: Int32) { process.signal(signal) }

    /// Waits for the process to exit and returns its status.
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        try await waitUntil("\(name) to exit", timeout: timeout) { self.exitCode != nil }
        return exitCode!
    }

    /// With HERALD_TEST_LOGS set, every child's output is kept there when the test lets it go (to read a failure):
    /// `<executable>-<pid>.log`.
    deinit {
        if process.exitCode == nil { process.signal(SIGTERM) }
        if let directory = ProcessInfo.processInfo.environment["HERALD_TEST_LOGS"] {
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            try? output.joined(separator: "\n").write(
                toFile: "\(directory)/\(name)-\(pid).log", atomically: true, encoding: .utf8)
        }
    }
}

/// The sample apps file (config/apps.sample.json), whose published keys a trial must allow.
let sampleApps = ["HERALD_APPS_FILE": sampleAppsFile, "HERALD_ALLOW_SAMPLE_KEYS": "true"]

/// An embedded cluster with Herald's topics (4 partitions), `config` published on it by `herald config apply` when
/// given, and an ingest process started against it, ready.
func startIngest(environment extra: [String: String] = [:], config: String? = nil) async throws -> (EmbeddedKafkaCluster, ChildProcess, Int) {
    let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
    try cluster.createTopics(HeraldTopic.specs(partitions: 4))
    if let config {
        let (applied, plan) = try await runCommand(
            binDirectory.appendingPathComponent("herald").path, ["config", "apply", config, "--bootstrap", cluster.bootstrapServers])
        #expect(applied == 0, "\(plan)")
    }
    let ingest = try ChildProcess(
        "herald-ingest",
        environment: [
            "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1",
            "HERALD_HTTP_PORT": "0", "HERALD_TOPIC_PARTITIONS": "4",
        ].merging(sampleApps) { $1 }.merging(extra) { $1 })
    try await waitUntil("ingest to listen") { !ingest.logs("http listening").isEmpty || ingest.exitCode != nil }
    guard let port = ingest.logs("http listening").first?["port"] as? Int else {
        throw TimedOut(what: "ingest to listen (it exited: \(ingest.output.suffix(3)))")
    }
    // Ready once it has read herald.config whole (the campaigns the trigger API checks).
    try await waitUntil("ingest ready") { (try? await httpGet("http://127.0.0.1:\(port)/health/ready"))?.0 == 200 }
    return (cluster, ingest, port)
}

/// A GET on loopback: status and body.
func httpGet(_ url: String, headers: [String: String] = [:]) async throws -> (Int, String) {
    var request = URLRequest(url: URL(string: url)!)
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}

/// The headers of an app's write that names `user`, as config/apps.sample.json's iOS app sends it: its key, and the
/// proof its server gives it for that user (signed identity, `X-CustomID-Auth`).
func signedAppHeaders(_ user: String, key: String = "live_demo_ios_0123456789", secret: String = "identity_secret_demo_ios") -> [String: String] {
    let mac = HMAC<SHA256>.authenticationCode(for: Array((key + user).utf8), using: SymmetricKey(data: Array(secret.utf8)))
    return ["X-Api-Key": key, "X-CustomID-Auth": mac.map { String(format: "%02x", $0) }.joined()]
}

/// A POST on loopback: status and body.
func httpPost(_ url: String, headers: [String: String], body: String) async throws -> (Int, String) {
    var request = URLRequest(url: URL(string: url)!)
    request.httpMethod = "POST"
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    request.httpBody = Data(body.utf8)
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
}

