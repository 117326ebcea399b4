import Foundation
import Logging
import Synchronization

/// How log lines are written: one JSON object per line (the default, for machines), or a compact line for people.
package enum LogFormat: String, Sendable, CaseIterable {
    case json
    case console
}

/// Where log lines go. Each line is written with one `write(2)`, so lines of concurrent loggers never interleave.
package final class LogSink: Sendable {
    private let write: @Sendable (String) -> Void

    package init(_ write: @escaping @Sendable (String) -> Void) { self.write = write }

    package static let standardOutput = LogSink { line in
        var line = line
        line.withUTF8 { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Foundation.write(1, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { break }
                offset += written
            }
        }
    }

    func emit(_ line: String) { write(line) }
}

/// swift-log handler writing JSON lines: `{"ts":…,"level":…,"service":…,"logger":…,"msg":…, metadata…}`.
package struct JSONLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    package var logLevel: Logger.Level
    package var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let service: String
    private let format: LogFormat
    private let sink: LogSink

    package init(label: String, service: String, level: Logger.Level, format: LogFormat = .json, sink: LogSink = .standardOutput)
    {
        self.label = label
        self.service = service
        self.logLevel = level
        self.format = format
        self.sink = sink
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let now = Date()
        switch format {
        case .json:
            sink.emit(jsonLine(now: now, level: event.level, message: "\(event.message)", metadata: merged))
        case .console:
            sink.emit(consoleLine(now: now, level: event.level, message: "\(event.message)", metadata: merged))
        }
    }

    func jsonLine(now: Date, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var out = "{\"ts\":\""
        out += Self.timestamp(now)
        out += "\",\"level\":\"\(level.rawValue)\",\"service\":"
        JSON.appendString(service, to: &out)
        out += ",\"logger\":"
        JSON.appendString(label, to: &out)
        out += ",\"msg\":"
        JSON.appendString(message, to: &out)
        for key in metadata.keys.sorted() where !Self.reserved.contains(key) {
            out += ","
            JSON.appendString(key, to: &out)
            out += ":"
            JSON.append(metadata[key]!, to: &out)
        }
        out += "}\n"
        return out
    }

    func consoleLine(now: Date, level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        let time = Self.timestamp(now).dropFirst(11).dropLast()  // HH:MM:SS.mmm
        var out = "\(time) \(level.rawValue.uppercased().padding(toLength: 8, withPad: " ", startingAt: 0))\(message)"
        for key in metadata.keys.sorted() {
            out += " \(key)=\(Self.plain(metadata[key]!))"
        }
        return out + "\n"
    }

    private static let reserved: Set<String> = ["ts", "level", "service", "logger", "msg"]

    private static func plain(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): string.contains(" ") ? "\"\(string)\"" : string
        case .stringConvertible(let convertible): convertible.description
        case .array, .dictionary:
            {
                var out = ""
                JSON.append(value, to: &out)
                return out
            }()
        }
    }

    static func timestamp(_ date: Date) -> String { WireTime.format(date) }
}

/// Minimal JSON writing for log lines (no Foundation encoder on the logging path).
enum JSON {
    static func appendString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    static func append(_ value: Logger.Metadata.Value, to out: inout String) {
        switch value {
        case .string(let string):
            appendString(string, to: &out)
        case .stringConvertible(let convertible):
            if let bool = convertible as? Bool {
                out += bool ? "true" : "false"
            } else if convertible is any BinaryInteger {
                out += convertible.description
            } else if let double = convertible as? Double, double.isFinite {
                out += convertible.description
            } else {
                appendString(convertible.description, to: &out)
            }
        case .array(let values):
            out += "["
            for (index, element) in values.enumerated() {
                if index > 0 { out += "," }
                append(element, to: &out)
            }
            out += "]"
        case .dictionary(let dictionary):
            out += "{"
            for (index, key) in dictionary.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                append(dictionary[key]!, to: &out)
            }
            out += "}"
        }
    }
}

/// Process-wide logging set-up; call once at start.
package enum HeraldLogging {
    private static let bootstrapped = Mutex(false)

    package static func bootstrap(service: String, level: Logger.Level, format: LogFormat) {
        let first = bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        LoggingSystem.bootstrap { label in
            JSONLogHandler(label: label, service: service, level: level, format: format)
        }
    }
}
