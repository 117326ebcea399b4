import Foundation

extension HeraldConfiguration {
    /// What each journey references: its project, the segments of its entry, audience, exits and waits, each message's
    /// template, app and endpoint, and each card node's content card (at the node's line).
    func journeyIssues() -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        for journey in journeys.values.sorted(by: { $0.key < $1.key }) {
            let project = journey.project
            let name = "journey \(journey.id)"
            func check(_ exists: Bool, line: Int? = nil, _ message: String) {
                if !exists { issues.append(ConfigIssue(file: journey.origin.file, line: line ?? journey.origin.line, message: message)) }
            }
            func segment(_ id: String, line: Int? = nil, _ field: String) {
                check(segments["\(project)/\(id)"] != nil, line: line, "\(name): \(field): no segment \(id) in project \(project)")
            }
            check(projects[project] != nil, "\(name): no project \(project)")
            if let audience = journey.audience { segment(audience, "audience") }
            switch journey.entry {
            case .segmentEntry(let id): segment(id, "entry.segment_entry")
            case .segmentExit(let id): segment(id, "entry.segment_exit")
            default: break
            }
            for (index, rule) in journey.exits.enumerated() {
                switch rule {
                case .segmentEntry(let id): segment(id, "exit[\(index)].segment_entry")
                case .segmentExit(let id): segment(id, "exit[\(index)].segment_exit")
                case .event: break
                }
            }
            for node in journey.nodes.values.sorted(by: { $0.line < $1.line }) {
                let origin = ConfigOrigin(file: journey.origin.file, line: node.line == 0 ? journey.origin.line : node.line)
                switch node.step {
                case .message(let message, _):
                    issues += messageIssues(message, project: project, at: "\(name): nodes.\(node.name).message", origin)
                case .card(let card, _):
                    check(
                        contentCards["\(project)/\(card)"] != nil, line: origin.line,
                        "\(name): nodes.\(node.name).card: no content_card \(card) in project \(project)")
                case .wait(let branches, _, _):
                    for (index, branch) in branches.enumerated() {
                        if case .segment(let id, _) = branch { segment(id, line: origin.line, "nodes.\(node.name).wait.branches[\(index)].segment") }
                    }
                default: break
                }
            }
        }
        return issues
    }
}
