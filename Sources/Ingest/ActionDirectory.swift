import Shared
import Synchronization

/// The actions the configuration gives buttons and cards (`AppAction`), from `herald.config` (followed as for
/// `TriggerDirectory`): what the ingest needs to apply the profile writes of a tap the app reports
/// (`ActionWrites`). Only the actions that write anything are kept.
final class ActionDirectory: Sendable {
    /// Where a tap happened, as the app reports it.
    enum Place: Hashable, Sendable {
        /// An in-app message's button (nil: the message's body).
        case inApp(message: String, button: String?)
        /// A notification button of the app's categories (a button id the app's categories give one action only).
        case push(app: String, button: String)
    }

    /// `project` → place → the action.
    private let actions: Mutex<[String: [Place: AppAction]]>

    init(_ actions: [String: [Place: AppAction]] = [:]) {
        self.actions = Mutex(actions)
    }

    func update(_ config: HeraldConfiguration) {
        let index = Self.index(config)
        actions.withLock { $0 = index }
    }

    func action(project: String, at place: Place) -> AppAction? {
        actions.withLock { $0[project]?[place] }
    }

    static func index(_ config: HeraldConfiguration) -> [String: [Place: AppAction]] {
        var index: [String: [Place: AppAction]] = [:]
        func keep(_ project: String, _ place: Place, _ action: AppAction?) {
            if let action, !action.profileWrites.isEmpty { index[project, default: [:]][place] = action }
        }
        for message in config.inAppMessages.values {
            if case .action(let action) = message.clickAction { keep(message.project, .inApp(message: message.id, button: nil), action) }
            for button in message.buttons {
                if case .action(let action) = button.action { keep(message.project, .inApp(message: message.id, button: button.id), action) }
            }
        }
        for app in config.apps.values {
            // A push_open names the button, not its category: a button id with different actions in two categories
            // of the app is applied by neither.
            let buttons = app.categories.values.flatMap { $0 }
            for (id, same) in Dictionary(grouping: buttons, by: \.id) where same.allSatisfy({ $0.action == same[0].action }) {
                keep(app.project, .push(app: app.id, button: id), same[0].action)
            }
        }
        return index
    }
}
