import Foundation

/// The `date` filter's two halves: reading a date as Ruby's `Time.parse` would (in the recipient's zone when the
/// text names none), and writing it with `strftime` directives in that zone.
enum LiquidDate {
    /// The dates `date` reads: the years 1 to 9999 (Ruby's `Time` has no bound; Foundation's calendar has none it
    /// keeps, and `%s` of a date past them is past `Int`). A date outside is written out unchanged, as anything the
    /// filter cannot read.
    static let readable = Date(timeIntervalSince1970: -62_135_596_800)...Date(timeIntervalSince1970: 253_402_300_799)

    /// `"now"`/`"today"`, seconds since 1970 (a number or a string of digits), ISO 8601 dates and times, and the
    /// English forms `March 14, 2016`, `14 Mar 2016`, `Fri, 27 Nov 2026 05:00:00 +0000`. nil for anything else, and for
    /// a date outside `readable`, which the filter then writes out unchanged.
    static func parse(_ value: LiquidValue, now: Date, timeZone: TimeZone) -> Date? {
        guard let date = anyDate(value, now: now, timeZone: timeZone), readable.contains(date) else { return nil }
        return date
    }

    private static func anyDate(_ value: LiquidValue, now: Date, timeZone: TimeZone) -> Date? {
        switch value {
        case .int(let seconds): return Date(timeIntervalSince1970: TimeInterval(seconds))
        case .double(let seconds): return seconds.isFinite ? Date(timeIntervalSince1970: seconds) : nil
        case .string(let raw):
            let text = raw.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { return nil }
            switch text.lowercased() {
            case "now", "today": return now
            default: break
            }
            if text.allSatisfy(\.isASCIIDigit), let seconds = TimeInterval(text) { return Date(timeIntervalSince1970: seconds) }
            return iso(text, timeZone) ?? english(text, timeZone)
        default: return nil
        }
    }

    /// `2026-11-27`, `2026-11-27 05:00`, `2026-11-27T05:00:00.250Z`, `2026-11-27T05:00:00+01:00`.
    private static func iso(_ text: String, _ timeZone: TimeZone) -> Date? {
        let pattern = #"^(\d{4})-(\d{1,2})-(\d{1,2})(?:[T ](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(Z|UTC|[+-]\d{2}:?\d{2})?$"#
        guard let match = text.wholeMatch(of: try! Regex(pattern)) else { return nil }
        func part(_ index: Int) -> String? { match.output[index].substring.map(String.init) }
        var components = DateComponents()
        components.year = Int(part(1)!)
        components.month = Int(part(2)!)
        components.day = Int(part(3)!)
        components.hour = part(4).flatMap(Int.init) ?? 0
        components.minute = part(5).flatMap(Int.init) ?? 0
        components.second = part(6).flatMap(Int.init) ?? 0
        if let fraction = part(7) { components.nanosecond = Int((Double("0." + fraction) ?? 0) * 1e9) }
        var zone = timeZone
        if let offset = part(8) { zone = zoneOffset(offset) ?? timeZone }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        guard let month = components.month, (1...12).contains(month), let day = components.day, (1...31).contains(day) else { return nil }
        return calendar.date(from: components)
    }

    private static func zoneOffset(_ text: String) -> TimeZone? {
        if text == "Z" || text == "UTC" { return TimeZone(identifier: "UTC") }
        let digits = text.dropFirst().filter(\.isASCIIDigit)
        guard digits.count == 4, let hours = Int(digits.prefix(2)), let minutes = Int(digits.suffix(2)) else { return nil }
        let seconds = (hours * 3600 + minutes * 60) * (text.first == "-" ? -1 : 1)
        return TimeZone(secondsFromGMT: seconds)
    }

    private static let englishFormats = [
        "MMMM d, yyyy", "MMM d, yyyy", "d MMMM yyyy", "d MMM yyyy", "EEE, d MMM yyyy HH:mm:ss Z", "EEE, d MMM yyyy HH:mm:ss zzz",
        "MMMM d, yyyy HH:mm", "MMM d, yyyy HH:mm", "MMMM d yyyy", "yyyy/MM/dd", "yyyy/MM/dd HH:mm:ss", "EEE MMM d HH:mm:ss Z yyyy",
    ]

    private static func english(_ text: String, _ timeZone: TimeZone) -> Date? {
        for format in englishFormats {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.timeZone = timeZone
            formatter.dateFormat = format
            formatter.isLenient = false
            if let date = formatter.date(from: text) { return date }
        }
        return nil
    }

    // MARK: strftime

    private static let months = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"]
    private static let weekdays = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

    /// Ruby's `strftime`, with its flags (`-` no padding, `_` spaces, `0` zeros, `^` upper case) and widths.
    static func format(_ date: Date, _ format: String, timeZone: TimeZone) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .nanosecond, .weekday], from: date)
        let dayOfYear = calendar.ordinality(of: .day, in: .year, for: date) ?? 1
        let offset = timeZone.secondsFromGMT(for: date)
        // The calendar gives every component of a date in `readable`; the fallbacks keep a wrong answer from trapping.
        let year = c.year ?? 1970, month = min(max(c.month ?? 1, 1), 12), hour = c.hour ?? 0
        let weekday = min(max(c.weekday ?? 1, 1), 7)
        var out = ""
        var characters = Substring(format)
        while let character = characters.first {
            characters = characters.dropFirst()
            guard character == "%" else {
                out.append(character)
                continue
            }
            var flags = ""
            while let flag = characters.first, "-_0^#:".contains(flag) {
                flags.append(flag)
                characters = characters.dropFirst()
            }
            let widthText = characters.prefix(while: \.isASCIIDigit)
            characters = characters.dropFirst(widthText.count)
            let width = Int(widthText)
            guard let directive = characters.first else {
                out += "%" + flags + widthText
                break
            }
            characters = characters.dropFirst()
            func number(_ value: Int, _ digits: Int, pad: Character = "0") -> String {
                var text = String(value)
                let padding: Character? = flags.contains("-") ? nil : flags.contains("_") ? " " : flags.contains("0") ? "0" : pad
                if let padding { while text.count < (width ?? digits) { text.insert(padding, at: text.startIndex) } }
                return text
            }
            func word(_ text: String) -> String {
                var text = flags.contains("^") ? text.uppercased() : flags.contains("#") ? text.uppercased() : text
                if let width { while text.count < width { text.insert(flags.contains("0") ? "0" : " ", at: text.startIndex) } }
                return text
            }
            let hour12 = (hour + 11) % 12 + 1
            switch directive {
            case "Y": out += number(year, 4)  // Ruby pads the year to four digits: 0001
            case "C": out += number(year / 100, 2)
            case "y": out += number(year % 100, 2)
            case "m": out += number(month, 2)
            case "B": out += word(months[month - 1])
            case "b", "h": out += word(String(months[month - 1].prefix(3)))
            case "d": out += number(c.day ?? 1, 2)
            case "e": out += number(c.day ?? 1, 2, pad: " ")
            case "j": out += number(dayOfYear, 3)
            case "H": out += number(hour, 2)
            case "k": out += number(hour, 2, pad: " ")
            case "I": out += number(hour12, 2)
            case "l": out += number(hour12, 2, pad: " ")
            case "P": out += word(hour < 12 ? "am" : "pm")
            case "p": out += flags.contains("#") ? (hour < 12 ? "am" : "pm") : word(hour < 12 ? "AM" : "PM")
            case "M": out += number(c.minute ?? 0, 2)
            case "S": out += number(c.second ?? 0, 2)
            case "L": out += number((c.nanosecond ?? 0) / 1_000_000, 3)
            case "N": out += number(c.nanosecond ?? 0, 9)
            case "z":
                let sign = offset < 0 ? "-" : "+"
                let hours = abs(offset) / 3600, minutes = abs(offset) % 3600 / 60
                out += sign + (hours < 10 ? "0" : "") + String(hours) + (flags.contains(":") ? ":" : "") + (minutes < 10 ? "0" : "") + String(minutes)
            case "Z":
                out += word(ZoneAbbreviations.abbreviation(timeZone, at: date))
            case "A": out += word(weekdays[weekday - 1])
            case "a": out += word(String(weekdays[weekday - 1].prefix(3)))
            case "u": out += String(weekday == 1 ? 7 : weekday - 1)
            case "w": out += String(weekday - 1)
            case "s": out += String(Int(exactly: date.timeIntervalSince1970.rounded(.down)) ?? 0)
            case "D", "x": out += Self.format(date, "%m/%d/%y", timeZone: timeZone)
            case "F": out += Self.format(date, "%Y-%m-%d", timeZone: timeZone)
            case "T", "X": out += Self.format(date, "%H:%M:%S", timeZone: timeZone)
            case "R": out += Self.format(date, "%H:%M", timeZone: timeZone)
            case "r": out += Self.format(date, "%I:%M:%S %p", timeZone: timeZone)
            case "c": out += Self.format(date, "%a %b %e %H:%M:%S %Y", timeZone: timeZone)
            case "n": out += "\n"
            case "t": out += "\t"
            case "%": out += "%"
            default: out += "%" + flags + widthText + String(directive)
            }
        }
        return out
    }
}
