import Foundation
import Liquid
import Logging
import Shared
import Testing

@Suite("Configuration as code")
struct ConfigurationTests {
    static let project = #"{"kind":"project","id":"demo"}"#
    static let template = #"{"kind":"template","id":"t","project":"demo","channel":"push","variants":{"default":{"body":"Hi"}}}"#

    func read(_ objects: [String]) throws -> (HeraldConfiguration, [String]) { try readConfiguration(objects) }

    @Test(
        "every problem is named",
        arguments: [
            (#"{"kind":"segment","id":"s","project":"demo","condition":"c.plan ="}"#,
             "condition, line 1 column 9: expected a value (a string, a number, true, false, null or now ± a duration), found the end"),
            (#"{"kind":"segment","id":"s","project":"demo","condition":"x.plan = 1"}"#,
             "condition, line 1 column 1: `x.plan` is not a path: expected b., c., t., e., email., sms., push. or location. and a name"),
            (#"{"kind":"segment","id":"s","project":"demo","condition":"c.a = 1","colour":"red"}"#, "segment: unknown field `colour`"),
            (#"{"kind":"widget","id":"w"}"#, #"kind: expected one of project, app, segment, template, content_block, campaign, in_app_message, content_card, holdout, geofence_set, webhook_endpoint, journey, found "widget""#),
            (#"{"kind":"segment","id":"a b","project":"demo","condition":"c.a = 1"}"#, #"id: "a b" is not an identifier (letters, digits, _, - and ., at most 128)"#),
            (#"{"kind":"segment","id":"s","project":"nope","condition":"c.a = 1"}"#, "segment s: no project nope"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"fax","variants":{}}"#, #"channel: expected push, email, sms or webhook, found "fax""#),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"xx":{"text":"a"}}}"#, #"variants: "xx" is not an ISO 639-1 language code or `default`"#),
            (#"{"kind":"template","id":"x","project":"demo","channel":"email","variants":{"default":{"subject":"a"}}}"#, "variants.default: missing `text`"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"{{ d.x }}"}}}"#,
             "variants.default.text: unknown variable `d`: expected c., b., event., trigger., a Braze form or a name the template assigns"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"{{ ${nickname} }}"}}}"#,
             "variants.default.text: ${nickname}: not a standard attribute (${braze_id}, ${city}, ${country}, ${date_of_birth}, ${email_address}, ${first_name}, ${gender}, ${language}, ${last_name}, ${phone_number}, ${time_zone}, ${user_id})"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"{{ campaign.${budget} }}"}}}"#,
             "variants.default.text: campaign.budget: campaign has api_id, dispatch_id, message_name, name"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"{% for i in c.list %}\n{{ i | shout }}{% endfor %}"}}}"#,
             "variants.default.text, line 2 column 1: Unknown filter 'shout'"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"{{content_blocks.${footer}}}"}}}"#,
             "template x variants.default.text: no content block footer in project demo"),
            (#"{"kind":"content_block","id":"b","project":"demo"}"#, "missing `content` (the block's Liquid text)"),
            (#"{"kind":"content_block","id":"b","project":"demo","content":"{% if %}"}"#, "content, line 1 column 1: Expected a value in \"\""),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"{{ c.x | there }}"}}}"#,
             "variants.default.text, line 1 column 1: Unknown filter 'there'"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"{{ c.x "}}}"#,
             "variants.default.text, line 1 column 1: Variable '{{' was not properly terminated with '}}'"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"delay":"5x","messages":[{"channel":"push","template":"t"}]}"#,
             #"delay: expected a duration such as 30m, 1h or 7d (at most 36500d), found "5x""#),
            // Values that once trapped the orchestrator at run time (issue 20, item 10).
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"delay":"infd","messages":[{"channel":"push","template":"t"}]}"#,
             #"delay: expected a duration such as 30m, 1h or 7d (at most 36500d), found "infd""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"delay":"1e300d","messages":[{"channel":"push","template":"t"}]}"#,
             #"delay: expected a duration such as 30m, 1h or 7d (at most 36500d), found "1e300d""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"expires_after":"nanh","messages":[{"channel":"push","template":"t"}]}"#,
             #"expires_after: expected a duration such as 30m, 1h or 7d (at most 36500d), found "nanh""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"delay":"36501d","messages":[{"channel":"push","template":"t"}]}"#,
             #"delay: expected a duration such as 30m, 1h or 7d (at most 36500d), found "36501d""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"delay":"-1h","messages":[{"channel":"push","template":"t"}]}"#,
             #"delay: expected a duration such as 30m, 1h or 7d (at most 36500d), found "-1h""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"reeligibility":{"max":1e300,"per":"1d"},"messages":[{"channel":"push","template":"t"}]}"#,
             "reeligibility.max: expected a whole number of sends, 1 to 1000000"),
            (#"{"kind":"segment","id":"s","project":"demo","condition":"b.last_visit_date > now - 99999999999999d"}"#,
             "condition, line 1 column 27: a duration is at most 36500d (100 years)"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"cancel_on":["B"],"messages":[{"channel":"push","template":"t"}]}"#,
             "cancel_on: only a campaign with a `delay` can be cancelled"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A","where":"c.plan = 1"},"messages":[{"channel":"push","template":"t"}]}"#,
             "condition, line 1 column 1: `c.plan` is not a path: expected event. and a name"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"tomorrow"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             #"schedule.at: expected an ISO-8601 time such as 2026-12-01T09:00:00Z, or a time of day such as 09:00, found "tomorrow""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"messages":[{"channel":"push","template":"t"}]}"#,
             "a scheduled campaign needs an `audience` segment: the profiles it sends to"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"segment_entry":"nope"},"messages":[{"channel":"push","template":"t"}]}"#,
             "campaign c: trigger.segment_entry: no segment nope in project demo"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"segment_exit":"gone"},"messages":[{"channel":"push","template":"t"}]}"#,
             "campaign c: trigger.segment_exit: no segment gone in project demo"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"sms","template":"t"}]}"#,
             "campaign c: messages[0]: template t is for push, not sms"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"reeligibility":{"max":0,"per":"1d"},"messages":[{"channel":"push","template":"t"}]}"#,
             "reeligibility.max: expected a whole number of sends, 1 to 1000000"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"bell":true},"messages":[{"channel":"push","template":"t"}]}"#,
             "trigger: expected event, segment_entry, segment_exit, schedule, api, session_start or push_open, found `bell`"),
            // What apps report (issue 35, item 1): a condition reads only what the report has.
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"session_start":"yes"},"messages":[{"channel":"push","template":"t"}]}"#,
             "trigger.session_start: expected true"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"push_open":true,"where":"event.price > 3"},"messages":[{"channel":"push","template":"t"}]}"#,
             "trigger.where: a push_open trigger has event.campaign, event.action, event.page, event.app, not event.price"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"session_start":true,"delay_by":"1h"},"messages":[{"channel":"push","template":"t"}]}"#,
             "trigger: unknown field `delay_by`"),
            // Event names as the ingest takes them; Herald's own payload key (issue 20, item 16).
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"add to cart"},"messages":[{"channel":"push","template":"t"}]}"#,
             #"trigger.event: "add to cart" is not an event name (1 to 30 letters, digits or underscores)"#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"delay":"1h","cancel_on":["bought-it"],"messages":[{"channel":"push","template":"t"}]}"#,
             #"cancel_on: "bought-it" is not an event name (1 to 30 letters, digits or underscores)"#),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"a"}},"payload":{"com.herald":"x"}}"#,
             "payload.com.herald: reserved: aps is Apple's, herald, com.herald and herald_… are Herald's"),
            // FCM's reserved data keys (Google's FCM v1 API description, Message.data; issue 34, item 2).
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"a"}},"payload":{"from":"x"}}"#,
             "payload.from: reserved by FCM: from, message_type and any key starting with google or gcm"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"a"}},"payload":{"message_type":"x"}}"#,
             "payload.message_type: reserved by FCM: from, message_type and any key starting with google or gcm"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"a"}},"payload":{"google.c.a.e":"1"}}"#,
             "payload.google.c.a.e: reserved by FCM: from, message_type and any key starting with google or gcm"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"a"}},"payload":{"gcm.n.e":"1"}}"#,
             "payload.gcm.n.e: reserved by FCM: from, message_type and any key starting with google or gcm"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"\#(String(repeating: "x", count: 4288))"}}}"#,
             "variants.default: its fixed text and payload take 4316 bytes, and APNs and FCM take 4096 in all (payload_too_large at every send)"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"{{ c.x }}"}},"payload":{"blob":"\#(String(repeating: "x", count: 4096))"}}"#,
             "variants.default: its fixed text and payload take 4130 bytes, and APNs and FCM take 4096 in all (payload_too_large at every send)"),
            // SMS: what the provider takes (issue 34, item 2).
            (#"{"kind":"template","id":"x","project":"demo","channel":"sms","variants":{"default":{"text":"\#(String(repeating: "a", count: 1601)){{ c.name }}"}}}"#,
             "variants.default.text: 1601 characters without its placeholders, and the SMS provider takes 1600"),
            // APNs details (issue 34, item 4).
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"push_type":"background","badge":0}}}"#,
             "variants.default: a background push cannot set the badge (APNs); without `push_type`, a push with a badge and no text sets it silently"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"a","collapse_id":"\#(String(repeating: "c", count: 65))"}}}"#,
             "variants.default.collapse_id: 65 bytes, and APNs takes 64"),
            (#"{"kind":"template","id":"x","project":"demo","channel":"push","variants":{"default":{"body":"a"}},"payload":{"herald_deeplink":"x"}}"#,
             "payload.herald_deeplink: reserved: aps is Apple's, herald, com.herald and herald_… are Herald's"),
            // Delivery timing (issue 21).
            (#"{"kind":"project","id":"p2","timezone":"Europe/Parid"}"#,
             #"timezone: "Europe/Parid" is not an IANA time zone name (such as Europe/Paris or UTC)"#),
            (#"{"kind":"project","id":"p2","quiet_hours":{"from":"21:00","to":"8:00"}}"#,
             #"quiet_hours.to: expected a time of day HH:MM (00:00 to 23:59), found "8:00""#),
            (#"{"kind":"project","id":"p2","quiet_hours":{"from":"24:00","to":"08:00"}}"#,
             #"quiet_hours.from: expected a time of day HH:MM (00:00 to 23:59), found "24:00""#),
            (#"{"kind":"project","id":"p2","quiet_hours":{"from":"21:00","to":"21:00"}}"#,
             "quiet_hours: `from` and `to` are the same time (21:00): the window would be empty or the whole day"),
            (#"{"kind":"project","id":"p2","quiet_hours":{"from":"21:00","to":"08:00","action":"delay"}}"#,
             #"quiet_hours.action: expected hold or drop, found "delay""#),
            (#"{"kind":"project","id":"p2","quiet_hours":{"from":"21:00","to":"08:00","days":"mon"}}"#,
             "quiet_hours: unknown field `days`"),
            (#"{"kind":"project","id":"p2","quiet_hours":"21:00-08:00"}"#,
             #"quiet_hours: expected {from: "21:00", to: "08:00", action: hold or drop}, found a string"#),
            (#"{"kind":"campaign","id":"c","project":"demo","type":"transactional","trigger":{"event":"A"},"quiet_hours":"off","messages":[{"channel":"push","template":"t"}]}"#,
             "quiet_hours: transactional campaigns are never held; remove it or make the campaign marketing"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"quiet_hours":{"from":"23:00"},"messages":[{"channel":"push","template":"t"}]}"#,
             "quiet_hours: missing `to`"),
            (#"{"kind":"project","id":"p2","quiet_hours":{"from":2100,"to":"08:00"}}"#,
             "quiet_hours.from: expected a time of day HH:MM (00:00 to 23:59), found a number"),
            (#"{"kind":"project","id":"p2","array_limits":{"colors":101}}"#,
             "array_limits.colors: expected a whole number of items, 1 to 100"),
            (#"{"kind":"project","id":"p2","array_limits":{"Colors":10}}"#,
             "array_limits.Colors: attribute names are 1 to 30 lowercase letters, digits or underscores"),
            (#"{"kind":"project","id":"p2","profile_limits":{"attributes":0}}"#,
             "profile_limits.attributes: expected a whole number, 1 to 100000"),
            (#"{"kind":"project","id":"p2","profile_limits":{"devices":10}}"#,
             "profile_limits.devices: expected one of attributes, event_names, product_ids, installations"),
            (#"{"kind":"project","id":"p2","profile_limits":[1]}"#,
             "profile_limits: expected a mapping of limits (attributes, event_names, product_ids, installations), found a list"),
            (#"{"kind":"project","id":"p2","frequency_caps":[{"max":0,"per":"1d"}]}"#,
             "frequency_caps[0].max: expected a whole number of messages, 1 to 10000"),
            (#"{"kind":"project","id":"p2","frequency_caps":[{"max":10001,"per":"1d"}]}"#,
             "frequency_caps[0].max: expected a whole number of messages, 1 to 10000"),
            (#"{"kind":"project","id":"p2","frequency_caps":[{"max":3,"per":"91d"}]}"#,
             #"frequency_caps[0].per: expected a period such as 24h or 7d, at most 90d, found "91d""#),
            (#"{"kind":"project","id":"p2","frequency_caps":[{"max":3,"per":"1d","channel":"fax"}]}"#,
             #"frequency_caps[0].channel: expected push, email or sms (webhooks are never capped), found "fax""#),
            (#"{"kind":"project","id":"p2","frequency_caps":[{"max":3,"per":"1d","campaign":"x"}]}"#,
             "frequency_caps[0]: unknown field `campaign`"),
            (#"{"kind":"project","id":"p2","frequency_caps":{"max":3,"per":"1d"}}"#,
             "frequency_caps: expected a list of {max: 3, per: 24h, channel: push}, found a mapping"),
            (#"{"kind":"campaign","id":"c","project":"demo","type":"transactional","trigger":{"event":"A"},"ignore_frequency_cap":true,"messages":[{"channel":"push","template":"t"}]}"#,
             "ignore_frequency_cap: transactional campaigns are never capped; remove it"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"09:00","on":"2026-12-01"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             "missing `timezone`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"09:00","timezone":"Mars/Base","on":"2026-12-01"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             #"schedule.timezone: expected local or an IANA time zone name, found "Mars/Base""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"09:00","timezone":"local","on":"2026-02-30"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             #"schedule.on: expected a date YYYY-MM-DD, found "2026-02-30""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01","every":"36h"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             "schedule.every: a schedule at a time of day repeats in whole days (1d, 7d, 2w)"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01","missed":"later"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             #"schedule.missed: expected next or skip, found "later""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"09:00","timezone":"local","on":"2026-12-01","at_least":1}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             "schedule: unknown field `at_least`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z","timezone":"local"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             #"schedule.timezone: only a schedule at a time of day (at: "09:00") has it"#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"9:00"}},"audience":"s","messages":[{"channel":"push","template":"t"}]}"#,
             #"schedule.at: expected an ISO-8601 time such as 2026-12-01T09:00:00Z, or a time of day such as 09:00, found "9:00""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"rate_limit":{"max":600,"per":"1m"},"messages":[{"channel":"push","template":"t"}]}"#,
             "rate_limit: only a scheduled campaign is spread at a rate (a triggered one sends as its triggers come)"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"audience":"s","rate_limit":600,"messages":[{"channel":"push","template":"t"}]}"#,
             "rate_limit: expected {max: 600, per: 1m}, found a number"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"audience":"s","rate_limit":{"max":0,"per":"1m"},"messages":[{"channel":"push","template":"t"}]}"#,
             "rate_limit.max: expected a whole number of messages, 1 to 100000000"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"audience":"s","rate_limit":{"max":10.5,"per":"1m"},"messages":[{"channel":"push","template":"t"}]}"#,
             "rate_limit.max: expected a whole number of messages, 1 to 100000000"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"audience":"s","rate_limit":{"max":10,"per":"0.5s"},"messages":[{"channel":"push","template":"t"}]}"#,
             #"rate_limit.per: expected a period from 1s to 1d such as 1m, found "0.5s""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"audience":"s","rate_limit":{"max":10,"per":"2d"},"messages":[{"channel":"push","template":"t"}]}"#,
             #"rate_limit.per: expected a period from 1s to 1d such as 1m, found "2d""#),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"audience":"s","rate_limit":{"max":10},"messages":[{"channel":"push","template":"t"}]}"#,
             "missing `per`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"schedule":{"at":"2026-12-01T09:00:00Z"}},"audience":"s","rate_limit":{"max":10,"per":"1m","burst":5},"messages":[{"channel":"push","template":"t"}]}"#,
             "rate_limit: unknown field `burst`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"control":95},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.control: expected a percentage from 0 to 90 with up to two decimals, found 95"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"control":-1},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.control: expected a percentage from 0 to 90 with up to two decimals, found -1"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"control":10.125},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.control: expected a percentage from 0 to 90 with up to two decimals, found 10.125"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"control":"10%"},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.control: expected a percentage from 0 to 90 with up to two decimals, found 10%"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"control":0},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment: a control share above 0 or variants, or both"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"variants":{"a":1}},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.variants: expected 2 to 8 variants as {<id>: <weight>, ...}"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"variants":{"a":1,"b":0}},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.variants.b: expected a whole weight from 1 to 10000, found 0"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"variants":{"a":1,"b":2.5}},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.variants.b: expected a whole weight from 1 to 10000, found 2.5"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"variants":{"a":1,"control":1}},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment.variants.control: a variant id is 1 to 128 letters, digits, `_`, `-` or `.`, and not `control` or `message`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"control":10,"holdout":5},"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment: unknown field `holdout`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":[10],"messages":[{"channel":"push","template":"t"}]}"#,
             "experiment: expected {control: <percent>, variants: {<id>: <weight>, ...}}, found a list"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"control":10},"messages":[{"channel":"push","template":"t","variants":{"b":"t"}}]}"#,
             "messages[0].variants.b: not a variant of the campaign's experiment"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"variants":{"a":1,"b":1}},"messages":[{"channel":"push","template":"t","variants":{"b":"nope"}}]}"#,
             "campaign c: messages[0].variants.b: no template nope in project demo"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"experiment":{"variants":{"a":1,"b":1}},"messages":[{"channel":"push","template":"t","variants":{"b":7}}]}"#,
             "messages[0].variants.b: expected a template id"),
            (#"{"kind":"holdout","id":"g","project":"demo"}"#,
             "missing `percent`"),
            (#"{"kind":"holdout","id":"g","project":"demo","percent":0}"#,
             "percent: expected a percentage from 0.01 to 90 with up to two decimals, found 0"),
            (#"{"kind":"holdout","id":"g","project":"demo","percent":95}"#,
             "percent: expected a percentage from 0.01 to 90 with up to two decimals, found 95"),
            (#"{"kind":"holdout","id":"g","project":"demo","percent":5,"exempt_campaigns":"c"}"#,
             "exempt_campaigns: expected a list of campaign ids, found a string"),
            (#"{"kind":"holdout","id":"g","project":"demo","percent":5,"exempt_campaigns":["nope"]}"#,
             "holdout g: exempt_campaigns: no campaign nope in project demo"),
            (#"{"kind":"holdout","id":"g","project":"demo","percent":5,"exempt_tags":["a b"]}"#,
             "exempt_tags: expected tags (letters, digits, _ and -)"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"tags":"x"}"#,
             "tags: expected a list of tags, found a string"),
            (#"{"kind":"holdout","id":"g","project":"demo","percent":5,"tags":["x"]}"#,
             "holdout: unknown field `tags`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"conversions":[]}"#,
             "conversions: expected a list of 1 to 5 {event, where, window, sources}"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"conversions":[{"event":"A"},{"event":"A"},{"event":"A"},{"event":"A"},{"event":"A"},{"event":"A"}]}"#,
             "conversions: expected a list of 1 to 5 {event, where, window, sources}"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"conversions":[{"event":"PURCHASE","window":"91d"}]}"#,
             "conversions[0].window: expected a period from 1m to 90d such as 7d, found 91d"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"conversions":[{"event":"PURCHASE","window":"30s"}]}"#,
             "conversions[0].window: expected a period from 1m to 90d such as 7d, found 30s"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"conversions":[{"event":"PURCHASE","value":3}]}"#,
             "conversions[0]: unknown field `value`"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"conversions":[{"event":"PURCHASE","sources":"apps"}]}"#,
             "conversions[0].sources: expected server (the customer's servers' writes only) or any (apps and web pages too)"),
            (#"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"A"},"messages":[{"channel":"push","template":"t"}],"conversions":[{"window":"1d"}]}"#,
             "missing `event`"),
        ])
    func problems(object: String, message: String) throws {
        let (_, issues) = try read([Self.project, Self.template, object])
        #expect(issues == [message])
    }

    @Test(
        "push fields with a fixed form: both sides of each limit, literals only",
        arguments: [
            (#"{"body":"b","badge":0,"relevance_score":0,"ttl":"28d","interruption_level":"critical","priority":"normal"}"#, nil),
            (#"{"body":"b","badge":99999,"relevance_score":1,"push_type":"alert","category":"{{ c.kind }}"}"#, nil),
            (#"{"push_type":"background","priority":"normal"}"#, nil),
            (#"{"body":"b","badge":-1}"#, #"variants.default.badge: expected a whole number from 0 to 99999, or +1 to +99999 to add to the installation's count, found "-1""#),
            (#"{"body":"b","badge":100000}"#, #"variants.default.badge: expected a whole number from 0 to 99999, or +1 to +99999 to add to the installation's count, found "100000""#),
            (#"{"body":"b","badge":"{{ c.unread }}"}"#, #"variants.default.badge: expected a whole number from 0 to 99999, or +1 to +99999 to add to the installation's count, found "{{ c.unread }}""#),
            (#"{"body":"b","badge":"+1","attachment_type":"gif"}"#, nil),
            (#"{"body":"b","badge":"+99999"}"#, nil),
            (#"{"body":"b","badge":"+0"}"#, #"variants.default.badge: expected a whole number from 0 to 99999, or +1 to +99999 to add to the installation's count, found "+0""#),
            (#"{"body":"b","badge":"+100000"}"#, #"variants.default.badge: expected a whole number from 0 to 99999, or +1 to +99999 to add to the installation's count, found "+100000""#),
            (#"{"body":"b","attachment_type":"pdf"}"#, #"variants.default.attachment_type: expected one of aif, aiff, avi, gif, jpeg, jpg, m4a, m4v, mp3, mp4, mpeg, mpg, png, wav, found "pdf""#),
            (#"{"body":"b","badge":true}"#, "variants.default.badge: expected a string or a number, found a boolean"),
            (#"{"body":"b","relevance_score":1.5}"#, #"variants.default.relevance_score: expected a number from 0 to 1, found "1.5""#),
            (#"{"body":"b","relevance_score":"-0"}"#, #"variants.default.relevance_score: expected a number from 0 to 1, found "-0""#),
            (#"{"body":"b","interruption_level":"urgent"}"#,
             #"variants.default.interruption_level: expected passive, active, time-sensitive or critical, found "urgent""#),
            (#"{"body":"b","push_type":"silent"}"#, #"variants.default.push_type: expected alert or background, found "silent""#),
            (#"{"body":"b","priority":"urgent"}"#, #"variants.default.priority: expected high or normal, found "urgent""#),
            (#"{"body":"b","ttl":"29d"}"#, #"variants.default.ttl: expected a duration up to 28d, such as 1h, found "29d""#),
            (#"{"title":"t"}"#, "variants.default: missing `body` (only `push_type: background`, or a push that only sets the `badge`, goes without)"),
            (#"{"push_type":"background","priority":"high"}"#,
             "variants.default: a background push goes at `priority: normal` (APNs refuses high)"),
        ] as [(String, String?)])
    func pushFields(fields: String, problem: String?) throws {
        let (config, issues) = try read([
            Self.project, #"{"kind":"template","id":"p","project":"demo","channel":"push","variants":{"default":\#(fields)}}"#,
        ])
        #expect(issues == (problem.map { [$0] } ?? []))
        if problem == nil { #expect(config.templates["demo/p"] != nil) }
    }

    @Test(
        "an app's notification categories: names, 1 to 4 actions (3 on Android), titles of 1 to 40 characters",
        arguments: [
            ("ios", #"{"SALE":{"actions":[{"id":"BUY","title":"Buy now","deeplink":"demo://buy"},{"id":"NO","title":"No","destructive":true,"foreground":false}]}}"#, nil),
            ("ios", #"{"A":{"actions":[{"id":"1","title":"a"},{"id":"2","title":"b"},{"id":"3","title":"c"},{"id":"4","title":"d"}]}}"#, nil),
            ("android", #"{"A":{"actions":[{"id":"1","title":"a"},{"id":"2","title":"b"},{"id":"3","title":"c"},{"id":"4","title":"d"}]}}"#,
             "categories.A.actions: expected a list of 1 to 3 actions (android)"),
            ("ios", #"{"A":{"actions":[]}}"#, "categories.A.actions: expected a list of 1 to 4 actions (ios)"),
            ("ios", #"{"A B":{"actions":[{"id":"1","title":"a"}]}}"#, "categories.A B: a category name is 1 to 64 letters, digits, `_`, `-` or `.`"),
            ("ios", #"{"A":{"actions":[{"id":"1","title":"\#(String(repeating: "x", count: 41))"}]}}"#, "categories.A.actions[0].title: 1 to 40 characters"),
            ("ios", #"{"A":{"actions":[{"id":"1","title":"a"},{"id":"1","title":"b"}]}}"#, "categories.A.actions[1].id: 1 twice in the category"),
            ("ios", #"{"A":{"actions":[{"id":"1","title":"a","color":"red"}]}}"#, "categories.A.actions[0]: unknown field `color`"),
            ("ios", #"["A"]"#, "categories: expected a mapping from category name to {actions: [...]}, found a list"),
        ] as [(String, String, String?)])
    func categories(platform: String, categories: String, problem: String?) throws {
        let (config, issues) = try read([
            Self.project, #"{"kind":"app","id":"a","project":"demo","platform":"\#(platform)","categories":\#(categories)}"#,
        ])
        #expect(issues == (problem.map { [$0] } ?? []))
        if problem == nil, platform == "ios", categories.contains("SALE") {
            #expect(config.apps["demo/a"]?.categories["SALE"] == [
                PushAction(id: "BUY", title: "Buy now", deeplink: "demo://buy"),
                PushAction(id: "NO", title: "No", foreground: false, destructive: true),
            ])
        }
    }

    @Test("a push template's custom payload: strings are templates, other values are sent as written; null is refused")
    func typedPayload() throws {
        let (config, issues) = try read([
            Self.project,
            #"{"kind":"template","id":"p","project":"demo","channel":"push","variants":{"default":{"body":"b"}},"payload":{"screen":"{{ c.page | \"home\" }}","count":3,"vip":true,"product":{"sku":"X1","price":19.5},"tags":["a",1]}}"#,
        ])
        #expect(issues.isEmpty, "\(issues)")
        let payload = try #require(config.templates["demo/p"]?.payload)
        #expect(payload["count"] == .json(.number("3")) && payload["vip"] == .json(.bool(true)))
        #expect(payload["product"] == .json(.object([JSONMember("sku", .string("X1")), JSONMember("price", .number("19.5"))])))
        #expect(payload["tags"] == .json(.array([.string("a"), .number("1")])))
        guard case .text = payload["screen"] else {
            Issue.record("a string is a template")
            return
        }
        let (_, refused) = try read([
            Self.project, #"{"kind":"template","id":"p","project":"demo","channel":"push","variants":{"default":{"body":"b"}},"payload":{"gone":null}}"#,
        ])
        #expect(refused == ["payload.gone: expected a value, found null"])
        let (_, list) = try read([
            Self.project, #"{"kind":"template","id":"p","project":"demo","channel":"push","variants":{"default":{"body":"b"}},"payload":["a"]}"#,
        ])
        #expect(list == ["payload: expected a mapping, found a list"])
    }

    @Test("event names in triggers and cancel_on are matched as the ingest stores them: uppercased")
    func eventNamesNormalized() throws {
        let (config, issues) = try read([
            Self.project, Self.template,
            #"{"kind":"campaign","id":"c","project":"demo","trigger":{"event":"add_to_cart"},"delay":"1h","cancel_on":["purchased"],"messages":[{"channel":"push","template":"t"}]}"#,
        ])
        #expect(issues.isEmpty, "\(issues)")
        let campaign = try #require(config.campaigns["demo/c"])
        guard case .event(let name, _) = campaign.trigger else { Issue.record("not an event trigger"); return }
        #expect(name == "ADD_TO_CART" && campaign.cancelOn == ["PURCHASED"])
    }

    @Test("a valid directory reads whole; the same object twice is refused")
    func valid() throws {
        let (config, issues) = try read([
            Self.project, Self.template,
            #"{"kind":"segment","id":"s","project":"demo","condition":"c.a = 1"}"#,
            #"{"kind":"campaign","id":"c","project":"demo","type":"transactional","trigger":{"event":"A","where":"event.price > 3"},"audience":"s","delay":"90m","cancel_on":["B"],"expires_after":"1d","reeligibility":{"max":2,"per":"7d"},"messages":[{"channel":"push","template":"t"}]}"#,
        ])
        #expect(issues.isEmpty)
        let campaign = try #require(config.campaigns["demo/c"])
        #expect(!campaign.marketing && campaign.delay == 5400 && campaign.expiresAfter == 86_400)
        #expect(campaign.reeligibility == .limit(count: 2, period: 7 * 86_400))
        #expect(campaign.cancelOn == ["B"] && campaign.audience == "s")
        let (_, twice) = try read([Self.project, Self.project])
        #expect(twice == ["project/demo is also defined in f.json:0"])
    }

    /// Herald's first template syntax (`{{ c.name | "there" }}`, `| raw`) renders as it did, now through Liquid.
    @Test("templates: the first syntax's placeholders, defaults, and nothing half-filled")
    func templates() throws {
        let text = try TemplateText(parsing: #"Hi {{ c.name | "there" }}, {{event.product}}!"#)
        #expect(text.liquid.variablePaths == [["c", "name"], ["event", "product"]])
        #expect(text.liquid.usesShorthandDefault)
        var options = LiquidRenderOptions()
        options.strictVariables = true
        func render(_ text: TemplateText, _ variables: LiquidObject) throws -> String { try text.liquid.render(variables, options: options) }
        #expect(try render(text, ["c": ["name": "Paul"], "event": ["product": "Skis"]]) == "Hi Paul, Skis!")
        #expect(try render(text, ["c": [:], "event": ["product": "Skis"]]) == "Hi there, Skis!")
        #expect(throws: LiquidError.self) { try render(text, ["c": ["name": "Paul"], "event": [:]]) }
        #expect(try render(TemplateText(parsing: "plain"), [:]) == "plain")
        let html = try TemplateText(parsing: #"<p>{{ c.bio | "" | raw }} {{ c.name }}</p>"#)
        options.escape = { LiquidFilters.escapeHTML($0) }
        #expect(try render(html, ["c": ["bio": "<b>x</b>", "name": "A&B"]]) == "<p><b>x</b> A&amp;B</p>")
        // Content blocks: included by name, refused when they include themselves.
        let blocks = [
            Self.project,
            #"{"kind":"content_block","id":"a","project":"demo","content":"A{{content_blocks.${b}}}"}"#,
            #"{"kind":"content_block","id":"b","project":"demo","content":"B{{content_blocks.${a}}}"}"#,
            #"{"kind":"content_block","id":"c","project":"demo","content":"C {{ c.name }}"}"#,
        ]
        let (config, issues) = try read(blocks)
        #expect(issues == ["content_block a includes itself: a → b → a", "content_block b includes itself: b → a → b"])
        #expect(config.contentBlocks(project: "demo")["c"]?.contentBlocks == [])
        // A literal field is never parsed.
        #expect(try render(TemplateText(literal: "{{ not liquid"), [:]) == "{{ not liquid")
    }

    @Test("herald.config records round-trip; a tombstone removes the object")
    func topicRecords() throws {
        let node = ConfigNode(json: try JSONParser.parse(Array(Self.project.utf8)))
        let record = ConfigRecord(file: "p.yaml", appliedAt: Date(timeIntervalSince1970: 0), object: node)
        let value = record.value
        // Changing this string is changing the format on the topic.
        #expect(
            String(decoding: value, as: UTF8.self)
                == #"{"v":1,"kind":"config","file":"p.yaml","applied_at":"1970-01-01T00:00:00.000Z","object":"#
                + String(decoding: node.json.serialized, as: UTF8.self) + "}")
        #expect(try ConfigRecord.read(value) == record)
        var objects: [String: (file: String, node: ConfigNode)] = [:]
        let records = [
            KafkaRecord(topic: "herald.config", partition: 0, offset: 0, key: Array("project/demo".utf8), value: value),
            KafkaRecord(topic: "herald.config", partition: 0, offset: 1, key: Array("project/old".utf8), value: value),
            KafkaRecord(topic: "herald.config", partition: 0, offset: 2, key: Array("project/old".utf8), value: nil),
        ]
        ConfigTopic.fold(records, into: &objects, logger: .init(label: "test"))
        #expect(objects.keys.sorted() == ["project/demo"])
    }
}
