/// A test's own failure, thrown where a value is not what the test needs to go on (`throw Failure("not a purchase")`).
package struct Failure: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
