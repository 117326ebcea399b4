import Foundation
import HTTPTypes

extension HTTPFields {
    /// The user name of `Authorization: Basic base64(user:password)`; nil without it or when it is not one.
    var basicUser: String? {
        guard let header = self[.authorization], header.utf8.count > 6, header.prefix(6).lowercased() == "basic ",
            let data = Data(base64Encoded: header.dropFirst(6).trimmingCharacters(in: .whitespaces)),
            let text = String(data: data, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { return nil }
        let user = String(text[..<colon])
        return user.isEmpty ? nil : user
    }
}
