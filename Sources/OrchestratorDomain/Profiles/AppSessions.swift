import Foundation
import GRDB
import Shared

/// An app's session reports applied to its installation's row (braze-rules §4.2): how many sessions, their total
/// length, the first and the last, and the session in progress. Reports arrive late, batched and out of order:
///
/// - a start counts once (its record id is derived from the session id); it is the session in progress only when it is
///   the installation's newest, and only then does it trigger `session_start` campaigns: a start the app queued for
///   days does not greet the user now;
/// - an end closes the session in progress when it names it, adding the length the app measured (else end − start);
///   the end of another session adds its measured length, if it has one;
/// - a session that never reports its end (the app died) counts with no length when the next one starts.
struct AppSessions {
    let db: Database
    let write: Write

    /// What sessions change for segments.
    static let changes: Set<ChangeKey> = [
        .native("session_count"), .native("session_seconds"), .native("first_session_date"), .native("last_session_date"),
    ]

    func apply(_ report: SessionReport, _ effects: inout WriteEffects) throws {
        guard let installationID = write.installationID else { return }
        let key = write.profileKey
        let table = InstallationsTable(db)
        guard let state = try table.sessionState(key, installationID) else { return }
        switch report.kind {
        case .start:
            guard state.openID != report.sessionID else { return }
            let newest = state.lastAt.map { report.time >= $0 } ?? true
            try table.sessionStarted(key, installationID, sessionID: report.sessionID, at: report.time, open: newest)
            if newest {
                var attributes = [JSONMember("session_id.s", .string(report.sessionID))]
                if let app = write.app { attributes.append(JSONMember("app.s", .string(app))) }
                effects.appReported(.sessionStart, occurrence: "session \(installationID) \(report.sessionID)", attributes: attributes)
            }
        case .end:
            let inProgress = state.openID == report.sessionID
            let measured = report.duration
                ?? (inProgress ? state.openAt.map { max(0, report.time.timeIntervalSince($0)) } : nil)
            guard inProgress || measured != nil else { return }
            try table.sessionEnded(key, installationID, seconds: measured ?? 0, close: inProgress)
        }
        effects.changed(Self.changes)
    }
}
