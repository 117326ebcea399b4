/// The type of an attribute value: the suffix after its name on the wire (`age.i`, as Batch's SDK writes them), in a
/// profile edit, an event's attributes, and the `type` column of a stored custom attribute.
package enum AttributeType: String, Sendable, CaseIterable {
    case string = "s"
    case integer = "i"
    case double = "f"
    case bool = "b"
    /// An ISO-8601 time.
    case time = "t"
    case url = "u"
    /// An array of strings, or (events only) of objects.
    case array = "a"
    /// Events only.
    case object = "o"
}
