import Foundation
import HeraldTestSupport
import Liquid
import Testing

/// Not a test: figures for scripts/bench/template (runs only with HERALD_BENCH=1, in release). Renders per second and
/// the p99 of one render, on one core, of a 1 KB push template with a condition, a loop of 10 and 6 filters (goal:
/// p99 ≤ 50 µs); and a placeholders-only template that Herald's first engine also reads, rendered by both in the same
/// run (the first engine is the ceiling: it could do nothing else).
@Suite("Template benchmark", .enabled(if: ProcessInfo.processInfo.environment["HERALD_BENCH"] != nil), .serialized)
struct TemplateBenchmark {
    static let renders = Int(ProcessInfo.processInfo.environment["HERALD_BENCH_RENDERS"] ?? "") ?? 200_000

    static let pushTemplate = """
        {% if c.tier == "gold" %}Dear {{ c.first_name | capitalize }}{% else %}Hi {{ c.first_name | default: "there" }}{% endif %}, \
        here is what is waiting in your basket since your last visit to the shop, kept for you for seven more days: \
        {% for item in event.items %}{{ forloop.index }}. {{ item.name | upcase }} at {{ item.price | times: 1.2 | round: 2 }} €\
        {% unless forloop.last %}; {% endunless %}{% endfor %}. {{ event.note | truncate: 60 }} Prices include VAT and \
        delivery is free above fifty euros to every address in the European Union, the United Kingdom and Switzerland. \
        Tap to finish your order, or open the app to change quantities, sizes and colours before you pay. Your \
        gold-plan discount applies at checkout, on top of the seasonal offer, and your points are added once the order \
        ships. If you no longer want these reminders, you can turn them off in the app's settings at any time. Questions \
        about sizes or delivery? Our team answers in the app's chat every day from nine to six.
        """

    static let placeholders = #"""
        Hi {{ c.first_name | "there" }}, your {{ event.product | "cart" }} is waiting: {{ event.count | "some" }} items \
        for {{ event.total | "a good price" }}. Tap to see it, {{ c.first_name | "friend" }}.
        """#

    static let variables: LiquidObject = [
        "c": ["first_name": "ada", "tier": "gold"],
        "event": [
            "items": .array((1...10).map { index in ["name": .string("item-\(index)"), "price": .double(Double(index) * 3.5)] }),
            "note": "Some of these items are almost out of stock in your size, so do not wait too long.",
            "product": "skis", "count": 3, "total": "120 €",
        ],
    ]

    /// Renders per second and the p50 and p99 of one render, in µs.
    func measure(_ render: () throws -> String) throws -> (perSecond: Double, p50: Double, p99: Double) {
        for _ in 0..<1_000 { _ = try render() }
        var samples: [Double] = []
        samples.reserveCapacity(Self.renders)
        let clock = ContinuousClock()
        let started = clock.now
        for _ in 0..<Self.renders {
            let start = clock.now
            _ = try render()
            let elapsed = clock.now - start
            samples.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
        }
        let total = clock.now - started
        let seconds = Double(total.components.seconds) + Double(total.components.attoseconds) / 1e18
        samples.sort()
        return (Double(Self.renders) / seconds, samples[samples.count / 2], samples[samples.count * 99 / 100])
    }

    @Test("renders per second and p99")
    func renders() throws {
        var options = LiquidRenderOptions()
        options.strictVariables = true
        let template = try LiquidTemplate(parsing: Self.pushTemplate)
        let output = try template.render(Self.variables, options: options)
        print("template: \(Self.pushTemplate.utf8.count) bytes of template, \(output.utf8.count) bytes rendered: \(output.prefix(120))…")
        let push = try measure { try template.render(Self.variables, options: options) }
        print(String(format: "template push: %.0f renders/s, p50 %.1f µs, p99 %.1f µs", push.perSecond, push.p50, push.p99))
        printFigure("template_push_renders", push.perSecond, unit: "renders/s", goal: "-")
        printFigure("template_push_p99", push.p99, unit: "us", goal: "<=50us")

        let liquid = try LiquidTemplate(parsing: Self.placeholders)
        let first = try FirstTemplateEngine(parsing: Self.placeholders)
        let flat = ["c.first_name": "ada", "event.product": "skis", "event.count": "3", "event.total": "120 €"]
        #expect(try liquid.render(Self.variables, options: options) == (try first.render { flat[$0] }))
        let firstFigure = try measure { try first.render { flat[$0] } }
        let liquidFigure = try measure { try liquid.render(Self.variables, options: options) }
        print(String(format: "template placeholders: Liquid %.0f renders/s (p99 %.1f µs), first engine %.0f renders/s (p99 %.1f µs)",
            liquidFigure.perSecond, liquidFigure.p99, firstFigure.perSecond, firstFigure.p99))
        printFigure("template_placeholders_renders", liquidFigure.perSecond, unit: "renders/s", ceiling: firstFigure.perSecond, goal: "-")
    }
}
