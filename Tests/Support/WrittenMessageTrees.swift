import Shared

// Messages the services write straight into bytes (`JSONWriter`), read back as trees for tests that look at one member.

extension IngestRecord {
    package var json: JSONValue { tree(value) }
}

extension ValidatedEvent {
    package var json: JSONValue { tree(serialized) }
}

private func tree(_ bytes: [UInt8]) -> JSONValue {
    do {
        return try JSONParser.parse(bytes)
    } catch {
        preconditionFailure("written bytes are JSON: \(error)")
    }
}
