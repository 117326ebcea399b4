import Foundation

/// An action the app runs when a button or a card is tapped (batch-rules §8.4, Batch Actions; docs/in-app.md,
/// "Actions"): an identifier and its arguments. Identifiers are case-insensitive (kept lowercased); those starting with
/// `batch.` are Batch's builtins, whose arguments are checked here; any other is the app's own, passed as written.
/// `batch.user.tag` and `batch.user.event` change the profile: when the app reports the tap, the ingest applies them as
/// the profile writes they stand for (`profileWrites`).
package struct AppAction: Codable, Sendable, Equatable {
    package var id: String
    /// An object (empty when the action takes none).
    package var args: JSONValue

    package init(id: String, args: JSONValue = .object([])) {
        self.id = id.lowercased()
        self.args = args
    }

    /// As the app receives it: `{"id": "batch.user.tag", "args": {…}}`.
    package var json: JSONValue { .object([JSONMember("id", .string(id)), JSONMember("args", args)]) }

    /// A profile write an action stands for.
    package enum ProfileWrite: Sendable, Equatable {
        /// `batch.user.tag`: add or remove `tag` in the string-array attribute `collection`.
        case tag(add: Bool, collection: String, tag: String)
        /// `batch.user.event`: an event, as `POST /v1/app/events` takes it (`{"name", "attributes"}` with `$label` and
        /// `$tags`).
        case event(JSONValue)
    }

    /// What the action (and each action of a group) writes to the profile, in order.
    package var profileWrites: [ProfileWrite] {
        switch id {
        case "batch.user.tag":
            guard let a = args["a"]?.stringValue, let c = args["c"]?.stringValue, let t = args["t"]?.stringValue else { return [] }
            return [.tag(add: a == "add", collection: c, tag: t)]
        case "batch.user.event":
            guard let name = args["e"]?.stringValue else { return [] }
            var attributes: [JSONMember] = []
            if case .object(let data)? = args["a"] { attributes = data }
            if let label = args["l"] { attributes.append(JSONMember("$label", label)) }
            if let tags = args["t"] { attributes.append(JSONMember("$tags", tags)) }
            return [.event(.object([JSONMember("name", .string(name)), JSONMember("attributes", .object(attributes))]))]
        case "batch.group":
            return BatchActions.groupItems(args).flatMap(\.profileWrites)
        default:
            return []
        }
    }
}

extension AppAction {
    /// The payloads of the action's writes, validated as the app's own writes would be (`ProfileValidation`,
    /// `EventValidation`); what fails the rules (a collection over the attribute limits of this
    /// profile, say) is left out and returned as problems under `path`.
    package func payloads(identified: Bool, path: String) -> ([IngestPayload], [Problem]) {
        var payloads: [IngestPayload] = []
        var problems: [Problem] = []
        for write in profileWrites {
            switch write {
            case .tag(let add, let collection, let tag):
                let edit = JSONValue.object([
                    JSONMember(collection, .object([JSONMember(add ? "$add" : "$remove", .array([.string(tag)]))]))
                ])
                let (validated, found) = ProfileValidation.validate(edit, path: path, identified: identified)
                problems += found
                if !validated.isEmpty { payloads.append(.profileUpdate(ProfileUpdate(profile: validated))) }
            case .event(let event):
                switch EventValidation.validate(event, path: path) {
                case .valid(let validated): payloads.append(.event(validated))
                case .invalid(let found): problems += found
                }
            }
        }
        return (payloads, problems)
    }
}

/// Batch's builtin actions and their arguments (batch-rules §8.4), checked when the configuration is read.
package enum BatchActions {
    /// Builtin → (required arguments, optional arguments).
    static let builtins: [String: (required: [String], optional: [String])] = [
        "batch.dismiss": ([], []),
        "batch.deeplink": (["l"], ["li"]),
        "batch.ios_request_notifications": ([], []),
        "batch.ios_redirect_settings": ([], []),
        "batch.ios_smart_reoptin": ([], []),
        "batch.ios_tracking_consent": ([], []),
        "batch.user.tag": (["a", "c", "t"], []),
        "batch.user.event": (["e"], ["l", "t", "a"]),
        "batch.group": (["actions"], []),
        "batch.clipboard": (["t"], []),
        "batch.rating": ([], []),
    ]
    /// The argument of `batch.user.event` a path of the event it stands for names: `args.name` is `args.e`, `$label` and
    /// `$tags` are `l` and `t`, the other attributes `a`.
    static func eventArgument(_ path: String) -> String {
        for (event, argument) in [("args.name", "args.e"), ("args.attributes.$label", "args.l"), ("args.attributes.$tags", "args.t"), ("args.attributes", "args.a")]
        where path.hasPrefix(event) {
            return argument + path.dropFirst(event.count)
        }
        return path
    }

    /// A group holds at most this many actions.
    package static let maxGroup = 10

    /// A group's actions: `[[id, {args}], …]` (an action without arguments may be `[id]`).
    static func groupItems(_ args: JSONValue) -> [AppAction] {
        guard case .array(let items)? = args["actions"] else { return [] }
        return items.compactMap { item in
            guard case .array(let pair) = item, let id = pair.first?.stringValue else { return nil }
            return AppAction(id: id, args: pair.count > 1 ? pair[1] : .object([]))
        }
    }

    /// Every problem of an action, each with the path of what is wrong (`args.c`); none for an app's own action with an
    /// object of arguments. `nested`: inside a group, where a group may not be.
    package static func problems(_ action: AppAction, nested: Bool = false) -> [(path: String, message: String)] {
        guard Rules.isActionName(action.id) else {
            return [("id", "an action id is 1 to 64 letters, digits, `_`, `-` or `.`, found \"\(action.id)\"")]
        }
        guard case .object(let members) = action.args else { return [("args", "expected a mapping of arguments")] }
        guard action.id.hasPrefix("batch.") else { return [] }
        guard let (required, optional) = builtins[action.id] else {
            return [("id", "\(action.id): the batch. prefix is Batch's, and it has no such action (\(builtins.keys.sorted().joined(separator: ", ")))")]
        }
        if nested, action.id == "batch.group" { return [("id", "a batch.group never holds another")] }
        var problems: [(path: String, message: String)] = []
        for member in members where !(required + optional).contains(member.key) {
            problems.append(("args.\(member.key)", "not an argument of \(action.id) (\((required + optional).joined(separator: ", ")))"))
        }
        for name in required where action.args[name] == nil { problems.append(("args", "missing `\(name)` (\(action.id))")) }
        let string = { (name: String) -> String? in action.args[name]?.stringValue }
        func expect(_ name: String, _ valid: Bool, _ message: String) {
            if action.args[name] != nil, !valid { problems.append(("args.\(name)", message)) }
        }
        switch action.id {
        case "batch.deeplink":
            let link = string("l") ?? ""
            expect("l", Rules.isSafeURL(link), "expected a URL with a scheme, such as demo://sale (never \(Rules.unsafeSchemes.sorted().joined(separator: ", ")))")
            expect("li", { if case .bool? = action.args["li"] { true } else { false } }(), "expected true or false (open the link inside the app)")
        case "batch.user.tag":
            expect("a", ["add", "remove"].contains(string("a") ?? ""), "expected add or remove")
            expect("c", string("c").map { (try? Rules.attributeName($0)) != nil } ?? false, "expected a collection: an attribute name (letters, digits, _, at most 30)")
            expect("t", string("t").map { !$0.isEmpty && $0.count <= Limits.tagLength } ?? false, "expected a tag of 1 to \(Limits.tagLength) characters")
        case "batch.user.event":
            // What the ingest would take from the app itself (EventValidation): the same rules, now.
            if case .event(let event)? = action.profileWrites.first, case .invalid(let found) = EventValidation.validate(event, path: "args") {
                for problem in found { problems.append((eventArgument(problem.path), problem.message)) }
            }
        case "batch.clipboard":
            expect("t", string("t").map { $0.count <= Limits.string } ?? false, "expected a text of at most \(Limits.string) characters")
        case "batch.group":
            guard case .array(let items)? = action.args["actions"] else {
                if action.args["actions"] != nil { problems.append(("args.actions", "expected a list of [id, {args}]")) }
                break
            }
            if items.count > maxGroup { problems.append(("args.actions", "a group holds at most \(maxGroup) actions, found \(items.count)")) }
            for (index, item) in items.enumerated() {
                guard case .array(let pair) = item, (1...2).contains(pair.count), let id = pair[0].stringValue else {
                    problems.append(("args.actions[\(index)]", "expected [id, {args}]"))
                    continue
                }
                let inner = AppAction(id: id, args: pair.count > 1 ? pair[1] : .object([]))
                for (path, message) in Self.problems(inner, nested: true) { problems.append(("args.actions[\(index)].\(path)", message)) }
            }
        default:
            break
        }
        return problems
    }
}

extension ConfigReader {
    /// `{id: batch.user.tag, args: {a: add, c: interests, t: ski}}`: an action and its arguments, every problem named
    /// under `path`.
    mutating func appAction(_ node: ConfigNode, _ path: String) -> AppAction? {
        rejectUnknown(node, allowed: ["id", "args"], path)
        guard let id = string(node, "id") else { return nil }
        let action = AppAction(id: id, args: node["args"]?.json ?? .object([]))
        let problems = BatchActions.problems(action)
        for (at, message) in problems { fail(at.hasPrefix("args") ? node["args"] ?? node : node["id"], "\(path).\(at): \(message)") }
        return problems.isEmpty ? action : nil
    }
}
