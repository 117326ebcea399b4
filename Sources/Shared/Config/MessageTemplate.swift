import Foundation
import Liquid

/// A message field's text: a Liquid template (docs/templates.md), parsed once when the configuration is loaded.
///
/// Its variables are the profile's (`c.` custom attributes, `b.` natives such as `b.language` or `b.custom_id`), the
/// trigger's (`event.<attribute>`, `event.label`, `trigger.<property>` of an API trigger), and Braze's names for the
/// same (`MessageVariables`). A value missing without a `default` filter fails the whole message: it is sent whole
/// or not at all. Herald's first syntax, a string after `|` (`{{ c.first_name | "there" }}`), still reads as
/// `default:`; `herald config validate` warns about it.
package struct TemplateText: Sendable, Equatable {
    package let source: String
    package let liquid: LiquidTemplate

    /// What is fixed of the text: its literal parts outside any tag (the least a rendering holds).
    package var fixedText: String { liquid.fixedText }

    /// Whether the text reads no variable and includes no content block: its value is known when it is read, and
    /// checked then.
    package var isFixed: Bool { liquid.variablePaths.isEmpty && liquid.contentBlocks.isEmpty }

    /// A text without placeholders (a push field with a fixed form, `PushOptions`).
    package init(literal text: String) {
        source = text
        liquid = LiquidTemplate(text: text)
    }

    /// Parses `text`; the error gives the line and column in it.
    package init(parsing text: String) throws(LiquidError) {
        source = text
        liquid = try LiquidTemplate(parsing: text)
    }

    package static func == (lhs: TemplateText, rhs: TemplateText) -> Bool { lhs.source == rhs.source }
}

/// Why a message could not be rendered; `aborted` when the template itself said not to send it (`abort_message`).
package struct TemplateError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String
    package var aborted: String?
    package var description: String { message }

    package init(_ message: String, aborted: String? = nil) {
        self.message = message
        self.aborted = aborted
    }
}
