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
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(contentsOf: "{\"ts\":\"\(Self.timestamp(now))\",\"level\":\"\(level.rawValue)\",\"service\":".utf8)
        JSON.appendString(service, to: &out)
        out.append(contentsOf: ",\"logger\":".utf8)
        JSON.appendString(label, to: &out)
        out.append(contentsOf: ",\"msg\":".utf8)
        JSON.appendString(message, to: &out)
        for key in metadata.keys.sorted() where !Self.reserved.contains(key) {
            out.append(UInt8(ascii: ","))
            JSON.appendString(key, to: &out)
            out.append(UInt8(ascii: ":"))
            JSON.append(metadata[key]!, to: &out)
        }
        out.append(contentsOf: "}\n".utf8)
        return String(decoding: out, as: UTF8.self)
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
                var out: [UInt8] = []
                JSON.append(value, to: &out)
                return String(decoding: out, as: UTF8.self)
            }()
        }
    }

    static func timestamp(_ date: Date) -> String { WireTime.format(date) }
}

/// Minimal JSON writing for log lines (no Foundation encoder on the logging path).
enum JSON {
    /// Appends `string` as a JSON string literal. Runs of bytes that need no escaping are copied at once.
    static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var string = string
        string.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                runStart = index + 1
                switch byte {
                case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
                case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
                case 0x0A: out.append(contentsOf: #"\n"#.utf8)
                case 0x0D: out.append(contentsOf: #"\r"#.utf8)
                case 0x09: out.append(contentsOf: #"\t"#.utf8)
                default:
                    let hex = String(byte, radix: 16)
                    out.append(contentsOf: ("\\u" + String(repeating: "0", count: 4 - hex.count) + hex).utf8)
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        out.append(UInt8(ascii: "\""))
    }

    static func append(_ value: Logger.Metadata.Value, to out: inout [UInt8]) {
        switch value {
        case .string(let string):
            appendString(string, to: &out)
        case .stringConvertible(let convertible):
            if let bool = convertible as? Bool {
                out.append(contentsOf: (bool ? "true" : "false").utf8)
            } else if convertible is any BinaryInteger {
                out.append(contentsOf: convertible.description.utf8)
            } else if let double = convertible as? Double, double.isFinite {
                out.append(contentsOf: convertible.description.utf8)
            } else {
                appendString(convertible.description, to: &out)
            }
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let dictionary):
            out.append(UInt8(ascii: "{"))
            for (index, key) in dictionary.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(dictionary[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
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

extension Logger.MetadataValue {
    /// A time as a log value: written as the log lines' own times are.
    package static func time(_ date: Date) -> Logger.MetadataValue { .string(JSONLogHandler.timestamp(date)) }
}
