import CRdKafka

/// The one error type of the Kafka layer: a stable code, a human reason, librdkafka's own error code, and whether
/// trying again later can succeed.
package struct KafkaError: Error, CustomStringConvertible, Sendable, Equatable {
    package enum Code: String, Sendable {
        /// The local produce queue is full: the broker is slower than the writers. Retry after a short pause.
        case queueFull = "queue_full"
        /// No broker acknowledged in time (broker down, no leader, network). Retry later.
        case brokerUnavailable = "broker_unavailable"
        /// The record is larger than the broker or client accepts.
        case messageTooLarge = "message_too_large"
        /// The topic or partition does not exist.
        case unknownTopic = "unknown_topic"
        /// A configuration key or value librdkafka refused.
        case configuration
        /// The client raised a fatal error (for instance the idempotent producer lost its sequence): it must be recreated.
        case fatal
        /// The client is shut down or shutting down.
        case closed
        /// An operation did not finish within its deadline.
        case timedOut = "timed_out"
        /// Any other librdkafka error.
        case other
    }

    package var code: Code
    package var reason: String
    /// librdkafka's `rd_kafka_resp_err_t`, when the error came from it.
    package var rdCode: Int32?

    package var isRetriable: Bool {
        switch code {
        case .queueFull, .brokerUnavailable, .timedOut: true
        case .messageTooLarge, .unknownTopic, .configuration, .fatal, .closed, .other: false
        }
    }

    /// Whether the record itself can never be produced as it is, however often it is tried: too large for the client
    /// or the broker, or refused as invalid. Not a missing topic or a missing permission, which an operator fixes.
    package var isPermanentForRecord: Bool {
        if code == .messageTooLarge { return true }
        guard let rdCode else { return false }
        return Self.permanentRecordCodes.contains(rdCode)
    }

    static let permanentRecordCodes: Set<Int32> = [
        RD_KAFKA_RESP_ERR_INVALID_MSG.rawValue, RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE.rawValue,
        RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION.rawValue, RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE.rawValue,
        RD_KAFKA_RESP_ERR_INVALID_RECORD.rawValue,
    ]

    package init(code: Code, reason: String, rdCode: Int32? = nil) {
        self.code = code
        self.reason = reason
        self.rdCode = rdCode
    }

    /// Maps a librdkafka error code to Herald's codes.
    init(_ err: rd_kafka_resp_err_t, context: String? = nil) {
        let text = String(cString: rd_kafka_err2str(err))
        let reason = context.map { "\($0): \(text)" } ?? text
        self.init(code: Self.classify(err), reason: reason, rdCode: err.rawValue)
    }

    static func classify(_ err: rd_kafka_resp_err_t) -> Code {
        switch err {
        case RD_KAFKA_RESP_ERR__QUEUE_FULL:
            .queueFull
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN,
            RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_BROKER_NOT_AVAILABLE,
            RD_KAFKA_RESP_ERR__PURGE_QUEUE, RD_KAFKA_RESP_ERR__PURGE_INFLIGHT:
            .brokerUnavailable
        case RD_KAFKA_RESP_ERR__TIMED_OUT:
            .timedOut
        case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE, RD_KAFKA_RESP_ERR_INVALID_MSG_SIZE, RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
            .messageTooLarge
        case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC,
            RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
            .unknownTopic
        case RD_KAFKA_RESP_ERR__FATAL:
            .fatal
        case RD_KAFKA_RESP_ERR__DESTROY:
            .closed
        case RD_KAFKA_RESP_ERR__INVALID_ARG:
            .configuration
        default:
            .other
        }
    }

    package static func closed(_ what: String) -> KafkaError {
        KafkaError(code: .closed, reason: "\(what) is shut down")
    }

    package var description: String { "kafka \(code.rawValue): \(reason)" }
}
