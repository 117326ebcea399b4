import Foundation
import Shared

/// The profile writes of a tap the app reports on an in-app message or a notification's button whose action changes
/// the profile (`batch.user.tag`, `batch.user.event`, in a `batch.group` too; docs/in-app.md, "Actions";
/// `AppAction.payloads`), produced after the report. A card's are the orchestrator's (`ContentCardReports`): the app
/// names a card by its delivery, which only the profile's partition knows.
enum ActionWrites {
    /// Where the item tapped, if it is a tap an action may follow: an in-app message's body or button clicked, a
    /// notification's button pressed.
    static func place(of item: ActivityItem, app: String?) -> ActionDirectory.Place? {
        switch item {
        case .inApp(let report) where report.action == .click: .inApp(message: report.message, button: report.button)
        case .pushOpen(let open):
            if let button = open.action, let app { .push(app: app, button: button) } else { nil }
        default: nil
        }
    }
}
