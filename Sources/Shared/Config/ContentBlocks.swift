import Liquid

/// A reusable piece of template text (`kind: content_block`), included with Braze's `{{content_blocks.${name}}}`.
package struct ContentBlockDefinition: Sendable {
    package var id: String
    package var project: String
    package var content: TemplateText
    package var origin: ConfigOrigin
    package var key: String { "\(project)/\(id)" }
}

extension HeraldConfiguration {
    /// The parsed content blocks of a project, by name, as a render includes them.
    package func contentBlocks(project: String) -> [String: LiquidTemplate] {
        var blocks: [String: LiquidTemplate] = [:]
        for block in contentBlocks.values where block.project == project { blocks[block.id] = block.content.liquid }
        return blocks
    }

    /// Content blocks that exist in their project, and that never include themselves, however indirectly.
    func contentBlockIssues() -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        func missing(_ text: TemplateText, project: String, _ origin: ConfigOrigin, _ name: String) {
            for block in text.liquid.contentBlocks.sorted() where contentBlocks["\(project)/\(block)"] == nil {
                issues.append(ConfigIssue(file: origin.file, line: origin.line, message: "\(name): no content block \(block) in project \(project)"))
            }
        }
        for template in templates.values.sorted(by: { $0.key < $1.key }) {
            for (field, text) in template.texts { missing(text, project: template.project, template.origin, "template \(template.id) \(field)") }
        }
        for card in contentCards.values.sorted(by: { $0.key < $1.key }) {
            for (field, text) in card.texts { missing(text, project: card.project, card.origin, "content_card \(card.id) \(field)") }
        }
        for block in contentBlocks.values.sorted(by: { $0.key < $1.key }) {
            if projects[block.project] == nil {
                issues.append(ConfigIssue(file: block.origin.file, line: block.origin.line, message: "content_block \(block.id): no project \(block.project)"))
            }
            missing(block.content, project: block.project, block.origin, "content_block \(block.id)")
            if let cycle = cycle(from: block) {
                issues.append(
                    ConfigIssue(
                        file: block.origin.file, line: block.origin.line,
                        message: "content_block \(block.id) includes itself: \(cycle.joined(separator: " → "))"))
            }
        }
        return issues
    }

    /// The path back to `start` through the blocks it includes, if there is one.
    private func cycle(from start: ContentBlockDefinition) -> [String]? {
        var visited: Set<String> = []
        func search(_ block: ContentBlockDefinition, _ path: [String]) -> [String]? {
            for name in block.content.liquid.contentBlocks.sorted() {
                if name == start.id { return path + [name] }
                guard !visited.contains(name), let next = contentBlocks["\(start.project)/\(name)"] else { continue }
                visited.insert(name)
                if let found = search(next, path + [name]) { return found }
            }
            return nil
        }
        return search(start, [start.id])
    }
}
