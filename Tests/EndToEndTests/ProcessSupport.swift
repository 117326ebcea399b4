import Crypto
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

/// A process started with `posix_spawn`, its output (stdout and stderr on one pipe) read by a thread of its own, and
/// its exit waited for by another. Foundation's `Process` and `FileHandle.readabilityHandler` run on libdispatch's
/// sources, whose event loop crashed the test process once in CI ("Bad pointer dereference" in
/// `_dispatch_event_loop_drain`, the crash swiftlang/swift-subprocess#47 moved away from): threads and blocking calls
/// need nothing of it.
final class Spawned: Sendable {
    let pid: pid_t
    private let exit = Locked<(code: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// declare.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Starts `path` with exactly `environment` (nothing inherited, as `Process.environment` did); `onOutput` gets the
    /// output as it comes, on the reader thread.
    init(_ path: String, arguments: [String], environment: [String: String]?, onOutput: @escaping @Sendable ([UInt8]) -> Void) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        // Not inherited by the other children spawned meanwhile (their copy of the write end would hold the pipe
        // open); the child's own descriptors 1 and 2 are dup2'd, which clears the flag on them.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fds[1], 2)
        // Nothing else of this process goes with the child, not even until its exec: close-on-exec descriptors are
        // closed after posix_spawn has returned, and an embedded broker's listener kept open in a child for that
        // moment made the broker's re-bind fail (`EmbeddedKafkaCluster.setBrokerDown`).
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        // posix_spawn returns when the child execs (glibc's vfork-style clone), after its file actions above closed its
        // copies of this process's descriptors: an embedded broker may re-bind its port after that, not during it.
        let status = EmbeddedKafkaCluster.spawningProcess { posix_spawn(&pid, path, &actions, nil, argv, envp) }
        close(fds[1])
        guard status == 0 else {
            close(fds[0])
            throw POSIXError(.init(rawValue: status) ?? .EIO)
        }
        self.pid = pid
        let child = pid
        let readFD = fds[0]
        let outputDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
                if count > 0 {
                    onOutput(Array(buffer[0..<count]))
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(readFD)
            outputDone.signal()
        }
        Thread.detachNewThread { [exit] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            // The output written before the exit is read first (unless something else holds the pipe open).
            _ = outputDone.wait(timeout: .now() + 2)
            let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
            let waiters = exit.withLock { state in
                state.code = code
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: code) }
        }
    }

    /// The exit status, or the number of the signal that ended it (as `Process.terminationStatus`); nil while it runs.
    var exitCode: Int32? { exit.withLock { $0.code } }

    func signal(_ signal: Int32) { kill(pid, signal) }

    /// Suspends (without holding a thread of the cooperative pool) until the process has exited and its output is read.
    func exited() async -> Int32 {
        await withCheckedContinuation { continuation in
            let code = exit.withLock { state -> Int32? in
                if state.code == nil { state.waiters.append(continuation) }
                return state.code
            }
            if let code { continuation.resume(returning: code) }
        }
    }
}

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

/// An embedded cluster with Herald's topics (4 partitions) and an ingest process started against it, listening.
func startIngest(environment extra: [String: String] = [:]) async throws -> (EmbeddedKafkaCluster, ChildProcess, Int) {
    let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: quietLogger)
    try cluster.createTopics(HeraldTopic.specs(partitions: 4))
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

/// Runs a command to completion and returns its exit status and output.
func runCommand(_ path: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> (Int32, String) {
    let output = Locked([UInt8]())
    let process = try Spawned(path, arguments: arguments, environment: environment) { chunk in
        output.withLock { $0.append(contentsOf: chunk) }
    }
    // Awaited, not blocked on: the tests run on a pool as wide as the machine's cores (two here), and a few commands
    // blocking it (pip, kcat, the herald CLI) held every other test's waits meanwhile.
    let status = await process.exited()
    return (status, String(decoding: output.withLock { $0 }, as: UTF8.self))
}
