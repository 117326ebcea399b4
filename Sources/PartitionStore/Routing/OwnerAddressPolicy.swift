import Foundation

/// What an owner's announced address may be: the form this instance's own takes. Whoever can write `herald.owners`
/// chooses where an instance forwards a read (with the app's key and the user's proof) and whose answer it passes
/// back; so an announced URL must be `scheme://host:port` with this instance's scheme and port (the instances of a
/// service listen alike), a host, and nothing else: no user, path, query or fragment.
package struct OwnerAddressPolicy: Sendable, Equatable {
    package let scheme: String
    /// nil: any port (this instance listens on one picked at start, as the tests' do).
    package let port: Int?

    /// From the instance's own settings: `HERALD_ADVERTISED_URL`, else `http` and `HERALD_HTTP_PORT`.
    package init(advertised: String?, httpPort: Int) {
        if let advertised, let own = URLComponents(string: advertised), let scheme = own.scheme?.lowercased() {
            self.scheme = scheme
            port = own.port ?? Self.defaultPort(scheme)
        } else {
            scheme = "http"
            port = httpPort == 0 ? nil : httpPort
        }
    }

    /// Accepts any `http(s)://host:port` (an instance that cannot tell its own form).
    package static let any = OwnerAddressPolicy(scheme: "", port: nil)

    private init(scheme: String, port: Int?) {
        self.scheme = scheme
        self.port = port
    }

    static func defaultPort(_ scheme: String) -> Int? { scheme == "https" ? 443 : scheme == "http" ? 80 : nil }

    package func accepts(_ url: String) -> Bool {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            ["http", "https"].contains(scheme), self.scheme.isEmpty || scheme == self.scheme,
            let host = components.host, !host.isEmpty, components.user == nil, components.password == nil,
            components.path.isEmpty || components.path == "/", components.query == nil, components.fragment == nil
        else { return false }
        guard let port else { return true }
        return (components.port ?? Self.defaultPort(scheme)) == port
    }
}
