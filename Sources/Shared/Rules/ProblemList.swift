import Foundation

/// The problems of one request as the API reports them: the first `[Problem].reportedMax` kept whole, every one
/// counted (in all, and by code for the rejection metric). A request of 200,000 bad names used to hold every problem,
/// path and message until it was answered, about as much memory as its parsed body: now it holds 100.
package struct ProblemList: Sendable, Equatable {
    /// The first problems, whole.
    package private(set) var kept: [Problem] = []
    /// Every problem, kept or not.
    package private(set) var count = 0
    /// How many of each code (codes are a fixed set).
    package private(set) var counts: [String: Int] = [:]

    package init() {}

    package init(_ problems: some Sequence<Problem>) {
        append(contentsOf: problems)
    }

    package var isEmpty: Bool { count == 0 }

    package mutating func append(_ problem: Problem) {
        count += 1
        counts[problem.code, default: 0] += 1
        if kept.count < [Problem].reportedMax { kept.append(problem) }
    }

    package mutating func append(contentsOf problems: some Sequence<Problem>) {
        for problem in problems { append(problem) }
    }

    package mutating func append(contentsOf other: ProblemList) {
        count += other.count
        for (code, n) in other.counts { counts[code, default: 0] += n }
        kept += other.kept.prefix([Problem].reportedMax - kept.count)
    }

    package static func += (list: inout ProblemList, problems: some Sequence<Problem>) { list.append(contentsOf: problems) }
    package static func += (list: inout ProblemList, other: ProblemList) { list.append(contentsOf: other) }

    package static func + (list: ProblemList, problems: some Sequence<Problem>) -> ProblemList {
        var sum = list
        sum.append(contentsOf: problems)
        return sum
    }

    /// The kept problems as the API lists them, and how many were left out.
    package var reported: (list: JSONValue, omitted: Int) {
        (.array(kept.map(\.json)), count - kept.count)
    }
}
