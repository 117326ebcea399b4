import Foundation
import Logging
import Shared
import Synchronization
import Testing

@Suite("JSON-lines logging")
struct LoggingTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        var sink: LogSink { LogSink { line in self.lines.withLock { $0.append(line) } } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("one JSON object per line with ts, level, service, logger, msg and metadata")
    func jsonLine() throws {
        let lines = Lines()
        var logger = Logger(label: "herald.test") {
            JSONLogHandler(label: $0, service: "ingest", level: .info, sink: lines.sink)
        }
        logger[metadataKey: "instance"] = "i-1"
        logger.info(
            "hello \"world\"\n", metadata: ["count": .stringConvertible(3), "ok": .stringConvertible(true), "list": ["a", "b"]])
        logger.debug("below the level")
        #expect(lines.all.count == 1)
        let line = try #require(lines.all.first)
        #expect(line.hasSuffix("}\n") && line.filter { $0 == "\n" }.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["service"] as? String == "ingest")
        #expect(object["logger"] as? String == "herald.test")
        #expect(object["msg"] as? String == "hello \"world\"\n")
        #expect(object["instance"] as? String == "i-1")
        #expect(object["count"] as? Int == 3)
        #expect(object["ok"] as? Bool == true)
        #expect(object["list"] as? [String] == ["a", "b"])
        let ts = try #require(object["ts"] as? String)
        #expect(ts.count == 24 && ts.hasSuffix("Z"), "RFC 3339 UTC with milliseconds: \(ts)")
    }

    @Test("metadata cannot overwrite the fixed fields")
    func reservedKeys() throws {
        let lines = Lines()
        let logger = Logger(label: "l") { JSONLogHandler(label: $0, service: "svc", level: .info, sink: lines.sink) }
        logger.info("real", metadata: ["msg": "fake", "service": "other"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines.all[0].utf8)) as? [String: Any])
        #expect(object["msg"] as? String == "real")
        #expect(object["service"] as? String == "svc")
    }

    @Test("console format for people")
    func console() {
        let lines = Lines()
        let logger = Logger(label: "l") {
            JSONLogHandler(label: $0, service: "svc", level: .info, format: .console, sink: lines.sink)
        }
        logger.warning("slow broker", metadata: ["broker": "b 1"])
        #expect(lines.all.first?.contains("WARNING slow broker broker=\"b 1\"") == true)
    }
}
