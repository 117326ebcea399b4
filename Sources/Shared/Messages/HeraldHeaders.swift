/// The Kafka headers Herald's records carry (`kcat -f '%h'` shows them).
package enum HeraldHeader {
    /// `herald.ingest`: the record's op (`profile_update`, `install_move`, …).
    package static let op = "herald-op"
    /// `herald.ingest`: the ingest request that carried the write (its `X-Request-Id`): the correlation id a send and
    /// its delivery logs keep, kept when the orchestrator forwards the write to another key.
    package static let requestID = "herald-request-id"
    /// `herald.sends.*`: the send's id.
    package static let sendID = "herald-send-id"
}
