import CRdKafka

/// The librdkafka the process runs with, and the known defects of older releases Herald works around.
package enum LibRdKafka {
    /// `rd_kafka_version()`: 0xMMmmrrxx (major, minor, revision, pre-release).
    package static let versionNumber = Int(rd_kafka_version())
    package static let version = String(cString: rd_kafka_version_str())

    /// The first release with the fix for confluentinc/librdkafka#4312 (#4381): destroying a cooperative-sticky
    /// consumer that joined its group but never received an assignment aborts the process
    /// (`rd_kafka_sticky_assignor_state_destroy: Assertion 'assignor_state' failed`). Debian 12 ships 2.0.2.
    package static let assignorStateFixed = (text: "2.3.0", number: 0x0203_0000)

    /// Whether destroying a consumer before its first assignment aborts (this librdkafka predates the fix).
    package static var destroyBeforeAssignmentAborts: Bool { versionNumber < assignorStateFixed.number }

    /// What a service logs at start when its librdkafka has the defect: nil when it has not.
    package static var startupWarning: String? {
        guard destroyBeforeAssignmentAborts else { return nil }
        return "librdkafka \(version) is older than \(assignorStateFixed.text): a consumer stopped before its first "
            + "assignment is not destroyed (confluentinc/librdkafka#4312 would abort the process); use an image with "
            + "librdkafka \(assignorStateFixed.text) or later (docs/kafka.md)"
    }
}
