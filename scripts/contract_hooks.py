"""schemathesis hooks of scripts/contract-check: an app's request that names a user carries that user's proof, and
half the operator's journey reads name a journey the configuration has.

The sample apps file's apps have signed identity (the default), so an app write naming a `custom_id` (or a logout's
`from_custom_id`) needs `X-CustomID-Auth`, the HMAC-SHA256 of the app key and the custom ID under the app's identity
secret, which the customer's server computes (docs/security.md). Generated requests cannot know it; this hook adds
it, as an app's SDK would, so that the document's schemas are checked against the requests an app really sends.
"""
import hashlib
import hmac

import schemathesis

# The app key contract-check sends, and its identity secret in config/apps.sample.json.
APP_KEY = "live_demo_android_0123456789"
SECRET = "identity_secret_demo_android"


@schemathesis.hook
def before_call(context, case, kwargs):
    # Negative cases are left as generated: setting a header revalidates the case as a positive one, which would put
    # back a header the case removes on purpose (schemathesis' missing-header check).
    if case.meta is not None and case.meta.generation.mode.is_negative:
        return
    if case.path.startswith("/v1/journeys/{"):
        # An operator's read of a journey: half the cases name one config/example has (the others a generated name:
        # 404), so that the answers' schemas are checked too.
        parameters = case.path_parameters or {}
        if len(str(parameters.get("journey", ""))) % 2 == 0:
            case.path_parameters = {**parameters, "project": "demo", "journey": "welcome-series"}
        return
    if not case.path.startswith("/v1/app/"):
        return
    if isinstance(case.body, dict):
        user = case.body.get("custom_id")
        if not isinstance(user, str):
            user = case.body.get("from_custom_id")
    elif isinstance(case.query, dict):
        # The orchestrator's reads (docs/openapi-orchestrator.yaml) name the user in the query.
        user = case.query.get("custom_id")
    else:
        return
    if isinstance(user, str):
        proof = hmac.new(SECRET.encode(), (APP_KEY + user).encode(), hashlib.sha256).hexdigest()
        case.headers = {**(case.headers or {}), "X-CustomID-Auth": proof}
