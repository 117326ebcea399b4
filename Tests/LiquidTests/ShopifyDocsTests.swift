import Foundation
import Liquid
import Shared
import Testing

/// Every example on Shopify's Liquid reference pages for the standard tags and filters (shopify-docs/, the
/// `_filters` and `_tags` pages of Shopify/liquid's site, vendored with its licence and version) renders as the page
/// shows it. The data an example's prose describes is in shopify-docs/contexts.json; outputs are compared with
/// whitespace collapsed and HTML comments dropped (the pages use them to state the data); an output the site renders
/// itself (`"now" | date`) is rendered here too. Four examples are documented exceptions, each with its reason.
@Suite struct ShopifyDocsTests {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("shopify-docs")

    static let exceptions: [String: String] = [
        "iteration.md#13": "the page's output wraps the rows in <table>, which the example's input does not write",
        "template.md#3": "the page writes `{% raw %}` through url_decode so that its own Jekyll prints it: not an example",
        "template.md#4": "the page shows `Hat Shirt Pants`; `echo` writes no separator, Ruby Liquid gives `HatShirtPants`",
        "variable.md#3": "the page's output says `favourite` where its input says `favorite`",
    ]

    struct Example {
        var key: String
        var input: String
        var output: String
    }

    static func examples() throws -> [Example] {
        let pattern = try NSRegularExpression(
            pattern: #"<p class="code-label">Input</p>\s*```liquid\n((?:(?!```).)*?)```\s*<p class="code-label">Output</p>\s*```\w*\n((?:(?!```).)*?)```"#,
            options: [.dotMatchesLineSeparators])
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasSuffix(".md") }.sorted()
        var examples: [Example] = []
        for file in files {
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            let matches = pattern.matches(in: text, range: NSRange(text.startIndex..., in: text))
            for (index, match) in matches.enumerated() {
                var input = String(text[Range(match.range(at: 1), in: text)!]).trimmingCharacters(in: .newlines)
                // The pages wrap each input in raw/endraw for their own Jekyll.
                input = input.replacingOccurrences(of: #"^\{%-? raw -?%\}\n?"#, with: "", options: .regularExpression)
                input = input.replacingOccurrences(of: #"\n?\{%-? endraw -?%\}\s*$"#, with: "", options: .regularExpression)
                examples.append(Example(key: "\(file)#\(index)", input: input, output: String(text[Range(match.range(at: 2), in: text)!])))
            }
        }
        return examples
    }

    static func normalized(_ text: String) -> String {
        text.replacingOccurrences(of: #"<!--.*?-->"#, with: "", options: .regularExpression)
            .replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
            .replacingOccurrences(of: #">\s+<"#, with: "><", options: .regularExpression)
            .trimmingCharacters(in: .whitespaces)
    }

    @Test func everyExampleRendersAsThePageShows() throws {
        let contexts = try JSONParser.parse(Array(try Data(contentsOf: Self.directory.appendingPathComponent("contexts.json"))))
        let examples = try Self.examples()
        #expect(examples.count >= 110, "\(examples.count) examples found")
        var options = LiquidRenderOptions()
        options.now = Date(timeIntervalSince1970: 1_795_000_000)
        var failures: [String] = []
        var passed = 0
        for example in examples {
            var variables = LiquidObject()
            if case .object(let members)? = contexts[example.key] {
                variables = LiquidObject(json: members)
            }
            let got: String
            var expected = example.output
            do {
                got = try LiquidTemplate(parsing: example.input).render(variables, options: options)
                if expected.contains("{{") || expected.contains("{%") {
                    expected = try LiquidTemplate(parsing: expected).render(variables, options: options)
                }
            } catch {
                failures.append("\(example.key): \(error)")
                continue
            }
            let matches = Self.normalized(got) == Self.normalized(expected)
            if Self.exceptions[example.key] != nil {
                if matches { failures.append("\(example.key): matches now; take it off the exceptions") }
                continue
            }
            if matches { passed += 1 } else { failures.append("\(example.key): \(Self.normalized(got).debugDescription), the page \(Self.normalized(expected).debugDescription)") }
        }
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
        #expect(passed + Self.exceptions.count == examples.count)
    }
}
