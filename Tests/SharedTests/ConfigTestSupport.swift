import Foundation
import Shared
import Testing

/// Configuration objects written as JSON text, read as `herald config validate` reads files: the configuration and
/// each problem's message.
func readConfiguration(_ objects: [String]) throws -> (HeraldConfiguration, [String]) {
    let nodes = try objects.map { (file: "f.json", node: ConfigNode(json: try JSONParser.parse(Array($0.utf8)))) }
    let (config, issues) = HeraldConfiguration.read(nodes)
    return (config, issues.map(\.message))
}

/// Expects `text` to fail as a segment condition at `line`:`column`, saying `message`.
func expectParseError(_ text: String, line: Int, column: Int, message: String, sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        _ = try SegmentParser.parse(text)
        Issue.record("\(text) parsed", sourceLocation: sourceLocation)
    } catch {
        #expect(error.line == line && error.column == column, "\(error)", sourceLocation: sourceLocation)
        #expect(error.message == message, sourceLocation: sourceLocation)
    }
}
