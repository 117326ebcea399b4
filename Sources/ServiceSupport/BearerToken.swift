import Foundation
import HTTPTypes

extension HTTPFields {
    /// The token of `Authorization: Bearer <token>`: the scheme in any case (RFC 9110, 11.1), then one or more spaces;
    /// spaces around the token are ignored. nil without the header, with another scheme, or with an empty token. One
    /// reading for every service (the ingest's REST keys, the operator token).
    package var bearerToken: String? {
        guard let header = self[.authorization], header.utf8.count > 6, header.prefix(6).lowercased() == "bearer",
            header.dropFirst(6).first == " "
        else { return nil }
        let token = header.dropFirst(6).trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }
}
