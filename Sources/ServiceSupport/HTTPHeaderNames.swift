import HTTPTypes

/// Every HTTP header a Herald service reads or writes that `HTTPTypes` does not name, spelled once: the only place a
/// header name is force-unwrapped (the initialiser fails only on a malformed token, which none of these is).
extension HTTPField.Name {
    /// An app's or a server's project key (Braze's `X-Api-Key` convention for the app endpoints).
    package static let apiKey = Self("X-Api-Key")!
    /// The signed proof that a client speaks for a custom id (`CustomIDProof`).
    package static let customIDAuth = Self("X-CustomID-Auth")!
    /// A client's key making a write safe to repeat.
    package static let idempotencyKey = Self("Idempotency-Key")!
    /// The correlation id of a request, echoed in its answer and carried through Kafka to the delivery logs.
    package static let requestID = Self("X-Request-Id")!
    /// RFC 7240: `handling=strict` asks ingest to refuse a request with any invalid item.
    package static let prefer = Self("Prefer")!
    package static let preferenceApplied = Self("Preference-Applied")!
    /// The client chain a trusted proxy reports.
    package static let forwardedFor = Self("X-Forwarded-For")!
    /// The rate-limit headers of draft-ietf-httpapi-ratelimit-headers.
    package static let rateLimitLimit = Self("RateLimit-Limit")!
    package static let rateLimitRemaining = Self("RateLimit-Remaining")!
    package static let rateLimitReset = Self("RateLimit-Reset")!
    package static let rateLimitPolicy = Self("RateLimit-Policy")!
    /// The instances' shared key on a question one asks another about partitions it owns (`PartitionPeers`).
    package static let heraldPeerKey = Self("X-Herald-Peer-Key")!
    /// Set on a read forwarded to a partition's owner, so that it is never forwarded twice (`ReadForwarding`).
    package static let heraldForwardedBy = Self("X-Herald-Forwarded-By")!
    package static let referrerPolicy = Self("Referrer-Policy")!
    /// Twilio's signature of an SMS webhook.
    package static let twilioSignature = Self("X-Twilio-Signature")!
}
