import Shared
import Testing

@Suite("Export answers: parts and their assembly")
struct ExportAnswerTests {
    @Test("a partition's lines are cut into parts under the limit, a longer line alone, at least one part")
    func parts() {
        let lines = ["aaaa", "bbbb", "cccccccccccc", "dd", "ee"]
        let parts = ExportAnswer.parts(question: "q", instance: "n1", partition: 2, lines: lines, maxBytes: 8)
        #expect(parts.map(\.lines) == [["aaaa", "bbbb"], ["cccccccccccc"], ["dd", "ee"]])
        #expect(parts.map(\.part) == [0, 1, 2] && parts.map(\.last) == [false, false, true])
        let none = ExportAnswer.parts(question: "q", instance: "n1", partition: 0, lines: [])
        #expect(none.count == 1 && none[0].last && none[0].lines.isEmpty)
    }

    @Test("whole once every partition's parts have come, in any order, lines in partition order")
    func assembly() {
        var assembly = ExportAnswerAssembly(partitionCount: 3)
        let second = ExportAnswer.parts(question: "q", instance: "n1", partition: 1, lines: ["b1", "b2", "b3"], maxBytes: 2)
        #expect(second.count == 3)
        assembly.add(second[2])
        assembly.add(ExportAnswer(question: "q", instance: "n2", partition: 2, part: 0, last: true, lines: []))
        assembly.add(second[0])
        #expect(assembly.missing == [0, 1] && assembly.lines == nil)
        assembly.add(ExportAnswer(question: "q", instance: "n2", partition: 0, part: 0, last: true, lines: ["a"]))
        #expect(assembly.missing == [1])
        assembly.add(second[1])
        #expect(assembly.isComplete && assembly.lines == ["a", "b1", "b2", "b3"])
    }

    @Test("a partition answered by two instances (it was moving) counts once; parts of two instances never mix")
    func twoInstances() {
        var assembly = ExportAnswerAssembly(partitionCount: 1)
        assembly.add(ExportAnswer(question: "q", instance: "old", partition: 0, part: 0, last: false, lines: ["x"]))
        assembly.add(ExportAnswer(question: "q", instance: "new", partition: 0, part: 1, last: true, lines: ["y"]))
        #expect(!assembly.isComplete)
        assembly.add(ExportAnswer(question: "q", instance: "new", partition: 0, part: 0, last: false, lines: ["x"]))
        #expect(assembly.lines == ["x", "y"])
        assembly.add(ExportAnswer(question: "q", instance: "old", partition: 0, part: 1, last: true, lines: ["y"]))
        #expect(assembly.lines == ["x", "y"])
    }

    @Test("a partition or a part out of range is not counted")
    func outOfRange() {
        var assembly = ExportAnswerAssembly(partitionCount: 1)
        assembly.add(ExportAnswer(question: "q", instance: "n", partition: 1, part: 0, last: true, lines: ["z"]))
        assembly.add(ExportAnswer(question: "q", instance: "n", partition: -1, part: 0, last: true, lines: ["z"]))
        // A part number no notifier writes, from a record anyone could have written: ignored, never an overflow.
        assembly.add(ExportAnswer(question: "q", instance: "n", partition: 0, part: Int.max, last: true, lines: ["z"]))
        assembly.add(ExportAnswer(question: "q", instance: "n", partition: 0, part: -1, last: true, lines: ["z"]))
        #expect(assembly.missing == [0])
    }
}
