/// The answers to one `ExportQuestion` as they come, until every partition has answered: a partition is answered when
/// one instance's parts 0 through its `last` have all come (a partition moving between two instances may be answered by
/// both; the first whole answer is kept, and both read the same rows).
package struct ExportAnswerAssembly: Sendable {
    package let partitionCount: Int32
    /// partition → instance → part → lines.
    private var parts: [Int32: [String: [Int: [String]]]] = [:]
    /// partition → instance → the number of its last part.
    private var lastParts: [Int32: [String: Int]] = [:]
    /// The partitions answered whole, with the lines of the answer kept.
    private var answered: [Int32: [String]] = [:]

    package init(partitionCount: Int32) { self.partitionCount = partitionCount }

    /// The most parts one partition's answer may have: 1 GiB of lines in parts of `ExportAnswer.maxBytes`.
    static let maxParts = 4096

    package mutating func add(_ answer: ExportAnswer) {
        let partition = answer.partition
        // A record anyone could have written: a partition or a part out of range is not counted (and no arithmetic on
        // them can overflow).
        guard partition >= 0, partition < partitionCount, answered[partition] == nil, (0..<Self.maxParts).contains(answer.part)
        else { return }
        parts[partition, default: [:]][answer.instance, default: [:]][answer.part] = answer.lines
        if answer.last { lastParts[partition, default: [:]][answer.instance] = answer.part }
        guard let last = lastParts[partition]?[answer.instance], let got = parts[partition]?[answer.instance], got.count - 1 == last,
            (0...last).allSatisfy({ got[$0] != nil })
        else { return }
        answered[partition] = (0...last).flatMap { got[$0] ?? [] }
        parts[partition] = nil
        lastParts[partition] = nil
    }

    /// The partitions not answered whole yet, in order.
    package var missing: [Int32] { (0..<partitionCount).filter { answered[$0] == nil } }

    package var isComplete: Bool { answered.count == Int(partitionCount) }

    /// Every line, partition by partition; nil until each partition has answered.
    package var lines: [String]? {
        guard isComplete else { return nil }
        return (0..<partitionCount).flatMap { answered[$0] ?? [] }
    }
}
