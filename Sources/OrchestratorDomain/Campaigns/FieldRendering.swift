import Liquid
import Shared

/// The one loop that renders a variant's fields, for messages (`MessageRenderer`), in-app messages
/// (`InAppEligibility`) and content cards (`ContentCardRenderer`): each field in name order, all or nothing (a message
/// is never sent half-rendered), an error naming the field as `<prefix>.<name>` (a template's `abort_message` kept as
/// such), and the caller's check of each rendered field (a URL an app may not load, a line break in a header).
enum FieldRendering {
    /// `options(name)`: the field's render options (an email's `html` escapes its values); `check(name, rendered)`
    /// returns why a rendered field is refused, or nil.
    static func render(
        _ fields: [String: TemplateText], prefix: String, variables: LiquidObject,
        options: (String) -> LiquidRenderOptions, check: (String, String) -> String? = { _, _ in nil }
    ) throws(TemplateError) -> [String: String] {
        var rendered: [String: String] = [:]
        for (name, text) in fields.sorted(by: { $0.key < $1.key }) {
            let field = "\(prefix).\(name)"
            let value: String
            do {
                value = try text.liquid.render(variables, options: options(name))
            } catch {
                if case .aborted(let reason) = error.kind { throw TemplateError("\(field): \(error.message)", aborted: reason) }
                throw TemplateError("\(field): \(error)")
            }
            if let refusal = check(name, value) { throw TemplateError("\(field): \(refusal)") }
            rendered[name] = value
        }
        return rendered
    }
}
