import Foundation
import HeraldTestSupport
import Shared
import Testing

@testable import Notifier

/// Every FCM message the notifier builds, judged by Google's own description of the FCM v1 API (the discovery document
/// google-api-python-client ships, in .venv): each field known to its schema and of its type, enums among their values,
/// durations as Google writes them, data values strings under keys the description does not reserve; and no message
/// sent over the 4,096 bytes FCM takes (counted by the judge: notification, data and Android notification as JSON).
@Suite("FCM messages per Google's API description", .timeLimit(.minutes(5)))
struct FCMConformanceTests {
    static let judge = #"""
        import glob, json, re, sys
        path = glob.glob(sys.prefix + "/lib/python3*/site-packages/googleapiclient/discovery_cache/documents/fcm.v1.json")[0]
        schemas = json.load(open(path))["schemas"]
        # Message.data's description names its reserved words: the exact ones, and the prefixes (ending in a dot).
        words = re.findall(r'"([^"]+)"', schemas["Message"]["properties"]["data"]["description"].split("When")[0])
        exact = [w for w in words if not w.endswith(".")]
        prefixes = [w for w in words if w.endswith(".")]
        assert "from" in exact and prefixes, words
        camel = lambda name: re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name)  # proto field names are accepted too
        problems = []

        def check(value, schema, where):
            if "$ref" in schema:
                schema = schemas[schema["$ref"]]
            kind = schema.get("type")
            if kind == "object" and "properties" in schema:
                if not isinstance(value, dict): return problems.append(f"{where}: not an object")
                for key, item in value.items():
                    field = schema["properties"].get(camel(key))
                    if field is None: problems.append(f"{where}.{key}: not a field of {schema.get('id')}")
                    else: check(item, field, f"{where}.{key}")
            elif kind == "object":
                if not isinstance(value, dict): return problems.append(f"{where}: not an object")
                for key, item in value.items(): check(item, schema["additionalProperties"], f"{where}.{key}")
            elif kind == "string":
                if not isinstance(value, str): return problems.append(f"{where}: {value!r} is not a string")
                if "enum" in schema and value not in schema["enum"]: problems.append(f"{where}: {value!r} not in {schema['enum']}")
                if schema.get("format") == "google-duration" and not re.fullmatch(r"\d+(\.\d{1,9})?s", value):
                    problems.append(f"{where}: {value!r} is not a duration")
            elif kind == "integer":
                if not isinstance(value, int) or isinstance(value, bool): problems.append(f"{where}: {value!r} is not an integer")
                elif schema.get("format") == "int32" and not -2**31 <= value < 2**31: problems.append(f"{where}: out of int32")
            elif kind == "boolean" and not isinstance(value, bool):
                problems.append(f"{where}: {value!r} is not a boolean")
            elif kind == "array":
                for index, item in enumerate(value): check(item, schema["items"], f"{where}[{index}]")

        cases = json.load(open(sys.argv[1]))
        for case in cases:
            request = case["request"]
            check(request, {"$ref": "SendMessageRequest"}, case["name"])
            message = request["message"]
            for key in message.get("data", {}):
                if key in exact or any(key.startswith(prefix) for prefix in prefixes):
                    problems.append(f"{case['name']}: data key {key!r} is reserved")
            received = {k: message[k] for k in ("notification", "data") if k in message}
            if "notification" in message.get("android", {}): received["android_notification"] = message["android"]["notification"]
            size = len(json.dumps(received, separators=(",", ":"), ensure_ascii=False).encode())
            if case["sent"] and size > 4096: problems.append(f"{case['name']}: sent with {size} bytes")
            if not case["sent"] and size <= 4096: problems.append(f"{case['name']}: refused with {size} bytes")
        print("\n".join(problems) or f"{len(cases)} messages conform")
        sys.exit(1 if problems else 0)
        """#

    static let android = DeliveryTarget(
        id: "a1", address: "fcm-token", installationID: "a1", app: "demo-android", platform: .android, environment: nil, badge: 4)

    static let sends: [(String, [String: String], [String: JSONValue]?)] = [
        ("plain", ["title": "Hello", "body": "World"], nil),
        ("rich", RichPushTests.rich, ["count": .number("3"), "vip": .bool(true), "product": .object([JSONMember("sku", .string("X1"))])]),
        ("background", ["push_type": "background", "priority": "normal"], ["sync": .string("inbox")]),
        ("collapse and tag", ["body": "B", "collapse_id": "cart", "tag": "cart-1", "ttl": "0"], nil),
        ("3,700 bytes of body", ["body": String(repeating: "é", count: 1850)], nil),
        ("4,288 bytes of body", ["body": String(repeating: "x", count: 4288)], nil),
        ("title and body the API allows one by one", ["title": String(repeating: "t", count: 2048), "body": String(repeating: "b", count: 2048)], nil),
        ("payload over the limit", ["body": "B"], ["blob": .string(String(repeating: "p", count: 4100))]),
    ]

    @Test("every message is valid against Google's description of FCM v1; none over 4,096 bytes is sent")
    func discoveryDocument() async throws {
        var cases: [JSONValue] = []
        var refused: [String] = []
        for (name, content, payload) in Self.sends {
            let send = sendRequest(app: "demo-android", content: content, payload: payload)
            let message = FCMProvider.messageMembers(DeliveryAttempt(request: send, target: Self.android, attempt: 1))
            let problem = FCMProvider.sizeProblem(message)
            if problem != nil { refused.append(name) }
            cases.append(.object([
                JSONMember("name", .string(name)), JSONMember("sent", .bool(problem == nil)),
                JSONMember("request", .object([JSONMember("message", .object(message))])),
            ]))
        }
        let (status, verdict) = try await runJudge(Self.judge, cases: .array(cases))
        #expect(status == 0, "\(verdict)")
        #expect(verdict.contains("\(Self.sends.count) messages conform"), "\(verdict)")
        #expect(refused == ["4,288 bytes of body", "title and body the API allows one by one", "payload over the limit"])
    }
}
