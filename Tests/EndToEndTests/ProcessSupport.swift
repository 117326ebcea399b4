import Foundation
import Logging
import HeraldTestSupport
import Shared
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
    private let process: Process
    private let lines = Locked<[String]>([])
    private let exit = Locked<Int32?>(nil)

    init(_ executable: String, arguments: [String] = [], environment: [String: String]) throws {
        name = executable
        let process = Process()
        process.executableURL = binDirectory.appendingPathComponent(executable)
        process.arguments = arguments
        process.environment = environment
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        let buffer = Locked(Data())
        pipe.fileHandleForReading.readabilityHandler = { [lines] handle in
            let chunk = handle.availableData
            buffer.withLock { data in
                data.append(chunk)
                while let newline = data.firstIndex(of: 0x0A) {
                    let line = String(decoding: data[data.startIndex..<newline], as: UTF8.self)
                    data.removeSubrange(data.startIndex...newline)
                    lines.withLock { $0.append(line) }
                }
            }
        }
        process.terminationHandler = { [exit] process in exit.withLock { $0 = process.terminationStatus } }
        self.process = process
        try process.run()
    }

    var output: [String] { lines.withLock { $0 } }
    var exitCode: Int32? { exit.withLock { $0 } }

    /// The JSON log lines whose `msg` is `message`.
    func logs(_ message: String) -> [[String: Any]] {
        output.compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                object["msg"] as? String == message
            else { return nil }
            return object
        }
    }

    func signal(_ signal: Int32) { kill(process.processIdentifier, signal) }

    /// Waits for the process to exit and returns its status.
    func waitForExit(timeout: Duration = .seconds(30)) async throws -> Int32 {
        try await waitUntil("\(name) to exit", timeout: timeout) { self.exitCode != nil }
        return exitCode!
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// An embedded cluster with Herald's topics (4 partitions) and an ingest process started against it, listening.
func startIngest(environment extra: [String: String] = [:]) async throws -> (EmbeddedKafkaCluster, ChildProcess, Int) {
    let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
    try cluster.createTopics(HeraldTopic.specs(partitions: 4))
    let ingest = try ChildProcess(
        "herald-ingest",
        environment: [
            "KAFKA_BOOTSTRAP_SERVERS": cluster.bootstrapServers, "HERALD_HTTP_HOST": "127.0.0.1",
            "HERALD_HTTP_PORT": "0", "HERALD_TOPIC_PARTITIONS": "4", "HERALD_APPS_FILE": sampleAppsFile,
        ].merging(extra) { $1 })
    try await waitUntil("ingest to listen") { !ingest.logs("http listening").isEmpty || ingest.exitCode != nil }
    guard let port = ingest.logs("http listening").first?["port"] as? Int else {
        throw TimedOut(what: "ingest to listen (it exited: \(ingest.output.suffix(3)))")
    }
    return (cluster, ingest, port)
}

/// A GET on loopback: status and body.
func httpGet(_ url: String, headers: [String: String] = [:]) async throws -> (Int, String) {
    var request = URLRequest(url: URL(string: url)!)
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
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

/// Runs a command to completion and returns its exit status and output.
func runCommand(_ path: String, _ arguments: [String]) throws -> (Int32, String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: path)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = pipe
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}
