import Shared

/// The number each project's SMS leave from (its `sms_from` in the apps file, else `HERALD_SMS_FROM`), and so whose a
/// reply is: a STOP sent to a number stops what that number sends (as the carriers apply it), for the projects that send
/// from it and no other. Matching by the recipient's number alone unsubscribed them from every project.
struct SMSSenders: Sendable {
    let defaultFrom: String?
    /// Projects with a number of their own.
    let own: [String: String]
    let projects: [String]

    init(defaultFrom: String?, own: [String: String], projects: [String]) {
        self.defaultFrom = defaultFrom
        self.own = own
        self.projects = projects
    }

    init(defaultFrom: String?, catalog: AppsCatalog) {
        var own: [String: String] = [:]
        for project in catalog.projects { own[project.id] = project.smsFrom }
        self.init(defaultFrom: defaultFrom, own: own, projects: catalog.projects.map(\.id))
    }

    init(_ settings: NotifierSettings) {
        self.init(defaultFrom: settings.sms?.from, catalog: settings.catalog)
    }

    /// The number a project's SMS leave from.
    func from(project: String) -> String? { own[project] ?? defaultFrom }

    /// The projects whose SMS leave from `number`: a reply sent to it speaks for them.
    func projects(sendingFrom number: String) -> Set<String> {
        Set(projects.filter { from(project: $0) == number })
    }
}
