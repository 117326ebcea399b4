import Liquid

extension LiquidValue {
    /// A JSON value as Liquid sees it: integers apart from floats, objects with their members in order.
    package init(json: JSONValue) {
        switch json {
        case .null: self = .nil
        case .bool(let value): self = .bool(value)
        case .number(let text):
            if let integer = Int(text) {
                self = .int(integer)
            } else {
                self = .double(Double(text) ?? 0)
            }
        case .string(let text): self = .string(text)
        case .array(let items): self = .array(items.map(LiquidValue.init(json:)))
        case .object(let members): self = .object(LiquidObject(json: members))
        }
    }
}

extension LiquidObject {
    /// A JSON object's members as Liquid variables, in their order.
    package init(json members: [JSONMember]) {
        self.init(members.map { ($0.key, LiquidValue(json: $0.value)) })
    }
}
