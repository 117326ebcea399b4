import Foundation
import Shared
import Testing

/// `kind: content_card` and a campaign's `cards` (issue 35, item 5): what a card may be, each problem named by its
/// field, and the 2 KB limit on what every rendering holds.
@Suite("Configuration: content cards")
struct ContentCardConfigTests {
    static let project = #"{"kind":"project","id":"demo"}"#

    /// A valid captioned image card; `change` replaces or adds top-level fields.
    static func card(_ change: String = "") -> String {
        #"""
        {"kind":"content_card","id":"ski","project":"demo","type":"captioned_image","categories":["news","advertising"],
         "pinned":true,"dismissible":false,"expires_after":"90d","open_in_web_view":true,"extras":{"k":"v"},
         "variants":{"default":{"title":"Ski","description":"Hi {{ c.first_name | default: \"there\" }}",
                                "image_url":"https://cdn.example/ski.png","url":"https://shop.example/ski"},
                     "fr":{"title":"Ski","description":"Salut","image_url":"https://cdn.example/ski.png"}}\#(change)}
        """#
    }

    static let campaign = #"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"e"},"cards":["ski"]}"#

    func read(_ objects: [String]) throws -> (HeraldConfiguration, [String]) { try readConfiguration(objects) }

    @Test("a valid card reads whole; a campaign may deliver cards without any message")
    func valid() throws {
        let (config, issues) = try read([Self.project, Self.card(), Self.campaign])
        #expect(issues == [])
        let card = try #require(config.contentCards["demo/ski"])
        #expect(card.kind == .captionedImage && card.categories == ["news", "advertising"] && card.pinned && !card.dismissible)
        #expect(card.lifetime == 90 * 86_400 && card.openInWebView && card.variants.keys.sorted() == ["default", "fr"])
        #expect(config.campaigns["demo/c"]?.cards == ["ski"] && config.campaigns["demo/c"]?.messages == [])
        let time = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(card.expiry(deliveredAt: time) == time + 90 * 86_400)
        // Defaults: 30 days, dismissible, no category.
        let (plain, _) = try read([Self.project, #"{"kind":"content_card","id":"t","project":"demo","type":"text_announcement","variants":{"default":{"description":"Hi"}}}"#])
        let text = try #require(plain.contentCards["demo/t"])
        #expect(text.lifetime == 30 * 86_400 && text.dismissible && text.categories.isEmpty)
    }

    @Test(
        "every problem is named",
        arguments: [
            (#","type":"poster""#, #"type: expected one of classic, captioned_image, banner, text_announcement, found "poster""#),
            (#","categories":["news","gossip"]"#, #"categories: expected news, advertising, announcements, social, found "gossip""#),
            (#","expires_after":"400d""#, "expires_after: at most 365d (a card lives a year at most)"),
            (#","expires_at":"2027-01-01T00:00:00Z""#, "expires_at: give expires_after or expires_at, not both"),
            (#","pinned":"yes""#, "pinned: expected true or false, found a string"),
            (#","extras":{"n":{"deep":1}}"#, "extras.n: expected a string of at most 1024 characters under a key of 1 to 255"),
            (#","variants":{"default":{"title":"T","description":"D"}}"#,
             "variants.default: missing `image_url` (a captioned_image card shows it)"),
            (#","variants":{"default":{"title":"T","description":"D","image_url":"not a url"}}"#,
             "variants.default.image_url: expected a URL with a scheme and a host, such as https://example.com/sale (never data, file, javascript, vbscript)"),
            (#","variants":{"default":{"title":"T","description":"D","image_url":"https://x.example/i.png","url":"JavaScript://x/%0Aalert(1)"}}"#,
             "variants.default.url: expected a URL with a scheme and a host, such as https://example.com/sale (never data, file, javascript, vbscript)"),
            (#","variants":{"default":{"title":"T","description":"D","image_url":"https://x.example/i.png","header":"H"}}"#,
             "variants.default.header: not a field of a captioned_image card (title, description, image_url, url)"),
            (#","variants":{"default":{"title":"T","description":"\#(String(repeating: "d", count: 2000))","image_url":"https://x.example/i.png"}}"#,
             "variants.default: the card is 2418 bytes as the app receives it; at most 2048"),
            (#","variants":{"default":{"title":"T","description":"{{ c.x ","image_url":"https://x.example/i.png"}}"#,
             "variants.default.description, line 1 column 1: Variable '{{' was not properly terminated with '}}'"),
            (#","colour":"red""#, "content_card: unknown field `colour`"),
        ])
    func problems(change: String, message: String) throws {
        let (_, issues) = try read([Self.project, Self.card(change)])
        #expect(issues == [message])
    }

    @Test("a card's digest is FNV-1a 64 (stable across processes: rows store it); an edit of what it shows changes it")
    func digests() throws {
        #expect(ContentCardDefinition.digest("") == "cbf29ce484222325" && ContentCardDefinition.digest("a") == "af63dc4c8601ec8c")
        let (before, _) = try read([Self.project, Self.card()])
        let (after, _) = try read([Self.project, Self.card(#","pinned":false"#)])
        let (renamed, _) = try read([Self.project, Self.card(#","name":"Other name""#)])
        #expect(before.contentCardDigests["demo/ski"] != after.contentCardDigests["demo/ski"])
        #expect(before.contentCardDigests["demo/ski"] == renamed.contentCardDigests["demo/ski"])
        #expect(before.contentCardVersions["demo"] != after.contentCardVersions["demo"])
    }

    @Test("a banner shows an image only; a campaign's cards exist in its project and are listed once")
    func bannersAndCampaigns() throws {
        let banner = #"{"kind":"content_card","id":"b","project":"demo","type":"banner","variants":{"default":{"title":"T","image_url":"https://x.example/b.png"}}}"#
        #expect(try read([Self.project, banner]).1 == ["variants.default.title: not a field of a banner card (image_url, url)"])
        let campaign = #"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"e"},"cards":["ski","gone"]}"#
        #expect(try read([Self.project, Self.card(), campaign]).1 == ["campaign c: cards: no content_card gone in project demo"])
        let twice = #"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"e"},"cards":["ski","ski"]}"#
        #expect(try read([Self.project, Self.card(), twice]).1 == ["cards: ski twice"])
        let neither = #"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"e"}}"#
        #expect(try read([Self.project, neither]).1 == ["messages: expected a list of {channel, template} (or `cards` alone)"])
        let project = #"{"kind":"project","id":"demo","max_content_cards":0}"#
        #expect(try read([project]).1 == ["max_content_cards: expected a whole number from 1 to 1000 (live cards per profile)"])
    }
}
