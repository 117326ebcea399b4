import Foundation
import Shared

/// A process started with `posix_spawn`, its output (stdout and stderr on one pipe) read by a thread of its own, and
/// its exit waited for by another. Foundation's `Process` and `FileHandle.readabilityHandler` run on libdispatch's
/// sources, whose event loop crashed the test process once in CI ("Bad pointer dereference" in
/// `_dispatch_event_loop_drain`, the crash swiftlang/swift-subprocess#47 moved away from): threads and blocking calls
/// need nothing of it.
package final class Spawned: Sendable {
    package let pid: pid_t
    private let exit = Locked<(code: Int32?, waiters: [CheckedContinuation<Int32, Never>])>((nil, []))

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 and later), which Swift's Glibc module does not
    /// declare.
    private static let addCloseFrom: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32)? = {
        guard let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(
            symbol, to: (@convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32).self)
    }()

    /// Starts `path` with exactly `environment` (nothing inherited, as `Process.environment` did); `onOutput` gets the
    /// output as it comes, on a reader thread: standard output and standard error together, or standard output only
    /// when `onErrors` takes standard error (on a reader thread of its own).
    package init(
        _ path: String, arguments: [String], environment: [String: String]?, onOutput: @escaping @Sendable ([UInt8]) -> Void,
        onErrors: (@Sendable ([UInt8]) -> Void)? = nil
    ) throws {
        let output = try Self.pipeNotInherited()
        let errors: [Int32]?
        do { errors = try onErrors.map { _ in try Self.pipeNotInherited() } } catch {
            output.forEach { close($0) }
            throw error
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, output[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errors?[1] ?? output[1], 2)
        // Nothing else of this process goes with the child, not even until its exec: close-on-exec descriptors are
        // closed after posix_spawn has returned, and an embedded broker's listener kept open in a child for that
        // moment made the broker's re-bind fail (`EmbeddedKafkaCluster.setBrokerDown`).
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }
        // The child starts with every signal at its default and none blocked: a disposition the test process holds
        // (ignored or blocked, as signal sources set them) would otherwise be inherited, and a `sleep` spawned from an
        // exit test's process could not be stopped by SIGTERM (ChildCleanupTests).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        // The child dies with this process, even when it crashes (no `atexit` then): `setpriv` asks the kernel for SIGKILL
        // when its parent thread ends, then execs the command (`Spawner`).
        let (program, words) = Spawner.dieWithParent
            ? (Spawner.setpriv, ["setpriv", "--pdeathsig", "KILL", "--", path] + arguments) : (path, [path] + arguments)
        let argv = words.map { strdup($0) } + [nil]
        let envp = (environment ?? ProcessInfo.processInfo.environment).map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid: pid_t = 0
        // posix_spawn returns when the child execs (glibc's vfork-style clone), after its file actions above closed its
        // copies of this process's descriptors: an embedded broker may re-bind its port after that, not during it.
        let status = Spawner.shared.run {
            EmbeddedKafkaCluster.spawningProcess { posix_spawn(&pid, program, &actions, &attributes, argv, envp) }
        }
        close(output[1])
        if let errors { close(errors[1]) }
        guard status == 0 else {
            close(output[0])
            if let errors { close(errors[0]) }
            throw POSIXError(.init(rawValue: status) ?? .EIO)
        }
        self.pid = pid
        let child = pid
        LiveChildren.started(child)
        var readers = [Self.read(output[0], into: onOutput)]
        if let errors, let onErrors { readers.append(Self.read(errors[0], into: onErrors)) }
        Thread.detachNewThread { [exit, readers] in
            var status: Int32 = 0
            while waitpid(child, &status, 0) == -1 && errno == EINTR {}
            LiveChildren.ended(child)
            // The output written before the exit is read first (unless something else holds the pipe open).
            let deadline = DispatchTime.now() + 2
            for done in readers { _ = done.wait(timeout: deadline) }
            let code = status & 0x7F == 0 ? (status >> 8) & 0xFF : status & 0x7F
            let waiters = exit.withLock { state in
                state.code = code
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: code) }
        }
    }

    /// A pipe whose ends are not inherited by the other children spawned meanwhile (their copy of the write end would
    /// hold the pipe open); the child's own descriptors 1 and 2 are dup2'd, which clears the flag on them.
    private static func pipeNotInherited() throws -> [Int32] {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        return fds
    }

    /// Reads `fd` to its end on a thread of its own, giving each chunk to `take`; signalled once done.
    private static func read(_ fd: Int32, into take: @escaping @Sendable ([UInt8]) -> Void) -> DispatchSemaphore {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    take(Array(buffer[0..<count]))
                } else if count == 0 || errno != EINTR {
                    break
                }
            }
            close(fd)
            done.signal()
        }
        return done
    }

    /// The exit status, or the number of the signal that ended it (as `Process.terminationStatus`); nil while it runs.
    package var exitCode: Int32? { exit.withLock { $0.code } }

    package func signal(_ signal: Int32) { kill(pid, signal) }

    /// Suspends (without holding a thread of the cooperative pool) until the process has exited and its output is read.
    package func exited() async -> Int32 {
        await withCheckedContinuation { continuation in
            let code = exit.withLock { state -> Int32? in
                if state.code == nil { state.waiters.append(continuation) }
                return state.code
            }
            if let code { continuation.resume(returning: code) }
        }
    }
}

/// The thread every child is spawned from, alive as long as the test process. A child starts under `setpriv --pdeathsig
/// KILL` (util-linux, in every Debian): the kernel kills it when the thread that spawned it ends, the thread and not the
/// process, so that thread must never end (the tests' pool and dispatch's threads come and go). A test process that
/// crashes runs no `atexit` handler (`LiveChildren`): its services used to run on, orphaned, and once pushed for 17
/// minutes to whatever listened on their APNs simulator's old port in the next runs.
final class Spawner: @unchecked Sendable {
    static let shared = Spawner()
    static let setpriv = "/usr/bin/setpriv"
    static let dieWithParent = FileManager.default.isExecutableFile(atPath: setpriv)

    private let lock = NSLock()
    private var jobs: [() -> Void] = []
    private let queued = DispatchSemaphore(value: 0)

    private init() {
        let thread = Thread { [self] in
            while true {
                queued.wait()
                let job = lock.withLock { jobs.removeFirst() }
                job()
            }
        }
        thread.name = "herald-test-spawner"
        thread.start()
    }

    /// Runs `spawn` on the spawner thread and gives its result (a `posix_spawn` status).
    func run(_ spawn: @escaping () -> Int32) -> Int32 {
        let done = DispatchSemaphore(value: 0)
        let status = Locked<Int32>(0)
        lock.withLock {
            jobs.append {
                status.withLock { $0 = spawn() }
                done.signal()
            }
        }
        queued.signal()
        done.wait()
        return status.withLock { $0 }
    }
}

/// The children started and not exited yet, each sent SIGTERM when the test process exits. A test that throws (a
/// timeout) may end without its `ChildProcess` being released, and then nothing else stops that child: an orchestrator
/// left so ran for two hours after the test process had gone, beside the next runs.
enum LiveChildren {
    private static let pids = Locked<Set<pid_t>>([])
    /// `atexit` once, on the first child.
    private static let registered: Void = {
        atexit { for pid in LiveChildren.pids.withLock({ $0 }) { kill(pid, SIGTERM) } }
    }()

    static func started(_ pid: pid_t) {
        _ = registered
        pids.withLock { _ = $0.insert(pid) }
    }

    static func ended(_ pid: pid_t) { pids.withLock { _ = $0.remove(pid) } }
}

/// Runs a command to completion and returns its exit status and output.
package func runCommand(_ path: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> (Int32, String) {
    let output = Locked([UInt8]())
    let process = try Spawned(path, arguments: arguments, environment: environment) { chunk in
        output.withLock { $0.append(contentsOf: chunk) }
    }
    // Awaited, not blocked on: the tests run on a pool as wide as the machine's cores (two here), and a few commands
    // blocking it (pip, kcat, the herald CLI) held every other test's waits meanwhile.
    let status = await process.exited()
    return (status, String(decoding: output.withLock { $0 }, as: UTF8.self))
}

/// Runs a command to completion and returns its exit status, its standard output as bytes and its standard error.
/// (Foundation's `Process.run()` is not for the test process: on Linux it copies a whole `dirent` for each entry of
/// /proc/self/fd, reading past glibc's buffer, and with the test process's hundreds of descriptors that read crashed it
/// once ("Bad pointer dereference" at a page boundary, swiftlang/swift-corelibs-foundation#5472, after Swift 6.3.1).)
package func runCommandSeparately(_ path: String, _ arguments: [String], environment: [String: String]? = nil) async throws
    -> (status: Int32, output: [UInt8], errors: String)
{
    let output = Locked([UInt8]()), errors = Locked([UInt8]())
    let process = try Spawned(
        path, arguments: arguments, environment: environment, onOutput: { chunk in output.withLock { $0.append(contentsOf: chunk) } },
        onErrors: { chunk in errors.withLock { $0.append(contentsOf: chunk) } })
    let status = await process.exited()
    return (status, output.withLock { $0 }, String(decoding: errors.withLock { $0 }, as: UTF8.self))
}

/// `openssl` with these arguments, its output written to `errorsFile`: the simulators' certificate maker in the tests
/// (`SimulatorTLS.selfSigned(openssl:)`), spawned the tests' way (`runCommand`).
package let testOpenSSL: @Sendable (_ arguments: [String], _ errorsFile: String) async throws -> Int32 = { arguments, errorsFile in
    let (status, output) = try await runCommand("/usr/bin/env", ["openssl"] + arguments)
    try output.write(toFile: errorsFile, atomically: true, encoding: .utf8)
    return status
}
