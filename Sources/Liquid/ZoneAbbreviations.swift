import Foundation
import Synchronization

/// A time zone's abbreviation as the time-zone database writes it (`CET`, `EST`, `JST`, `IST`), which is what Ruby's
/// `%Z` prints; Foundation on Linux answers from ICU (`GMT+1`). Read from the zone's TZif file: the designation of the
/// local time type with the date's offset and daylight-saving flag.
enum ZoneAbbreviations {
    private static let cache = Mutex<[String: [(offset: Int, dst: Bool, name: String)]]>([:])

    static func abbreviation(_ timeZone: TimeZone, at date: Date) -> String {
        if ["UTC", "GMT", "Etc/UTC", "Etc/GMT", "Universal", "Zulu"].contains(timeZone.identifier) { return "UTC" }
        let types = cache.withLock { cached in
            if let types = cached[timeZone.identifier] { return types }
            let types = read(timeZone.identifier)
            cached[timeZone.identifier] = types
            return types
        }
        let offset = timeZone.secondsFromGMT(for: date)
        let dst = timeZone.isDaylightSavingTime(for: date)
        if let type = types.last(where: { $0.offset == offset && $0.dst == dst }) ?? types.last(where: { $0.offset == offset }) {
            return type.name
        }
        return timeZone.abbreviation(for: date) ?? ""
    }

    /// The local time types of `/usr/share/zoneinfo/<name>` (its first, 32-bit block, which lists every type).
    private static func read(_ name: String) -> [(offset: Int, dst: Bool, name: String)] {
        guard !name.contains(".."), let data = FileManager.default.contents(atPath: "/usr/share/zoneinfo/" + name) else { return [] }
        let bytes = [UInt8](data)
        guard bytes.count >= 44, bytes[0..<4] == [0x54, 0x5A, 0x69, 0x66] else { return [] }
        func count(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        let (isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt) = (count(20), count(24), count(28), count(32), count(36), count(40))
        _ = (isutcnt, isstdcnt, leapcnt)
        let typesStart = 44 + timecnt * 5
        let charsStart = typesStart + typecnt * 6
        guard bytes.count >= charsStart + charcnt else { return [] }
        return (0..<typecnt).map { index in
            let at = typesStart + index * 6
            let raw = UInt32(count(at))
            let offset = Int(Int32(bitPattern: raw))
            let start = charsStart + Int(bytes[at + 5])
            let end = bytes[start..<charsStart + charcnt].firstIndex(of: 0) ?? charsStart + charcnt
            return (offset, bytes[at + 4] != 0, String(decoding: bytes[start..<end], as: UTF8.self))
        }
    }
}
