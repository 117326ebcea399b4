#!/usr/bin/env python3
"""Herald's experiment assignment (docs/measurement.md, "Assignment"), written apart from the Swift code from the
documented rules, and the test vectors it checks or writes (docs/experiment-vectors.json).

    python3 scripts/experiment-vectors.py --check docs/experiment-vectors.json   # exit 1 on any difference
    python3 scripts/experiment-vectors.py --write docs/experiment-vectors.json   # the vectors, from the cases below
"""
import hashlib
import json
import sys

SCHEME = "herald-experiment-1"
BUCKETS = 10_000


def version(control_bp, variants):
    """variants: {id: weight}; by id."""
    split = ";".join([f"control={control_bp}"] + [f"{v}={variants[v]}" for v in sorted(variants)])
    return "v" + hashlib.sha256(split.encode()).hexdigest()[:16]


def bucket(project, campaign, version_, profile_key):
    text = "\n".join([SCHEME, project, campaign, version_, profile_key])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") % BUCKETS


def variant(bucket_, control_bp, variants):
    if bucket_ < control_bp:
        return "control"
    if not variants:
        return "message"
    position, span = bucket_ - control_bp, BUCKETS - control_bp
    total = sum(variants.values())
    cumulative = 0
    for v in sorted(variants):
        cumulative += variants[v]
        if position * total < cumulative * span:
            return v
    return sorted(variants)[-1]


CASES = [
    ("demo", "welcome", 1000, {"a": 50, "b": 50}, ["demo/paul", "demo/anna", "demo/install/I-1", "demo/élise", "demo/user|42"]),
    ("demo", "welcome", 0, {"a": 1, "b": 1, "c": 2}, ["demo/paul", "demo/anna", "demo/u0", "demo/u1", "demo/u2"]),
    ("demo", "cart-now", 2550, {}, ["demo/paul", "demo/anna", "demo/u0", "demo/u1", "demo/u2", "demo/u3"]),
    ("shop", "spring", 9000, {"long": 3, "short": 7}, ["shop/1", "shop/2", "shop/3", "shop/4"]),
    ("shop", "spring", 1, {"long": 3, "short": 7}, ["shop/1", "shop/2", "shop/3", "shop/4"]),
]


def vectors():
    out = []
    for project, campaign, control_bp, variants, profiles in CASES:
        v = version(control_bp, variants)
        for profile in profiles:
            b = bucket(project, campaign, v, profile)
            out.append({
                "project": project, "campaign": campaign, "control_basis_points": control_bp, "variants": variants,
                "profile_key": profile, "version": v, "bucket": b, "variant": variant(b, control_bp, variants),
            })
    return out


def main(argv):
    if len(argv) != 3 or argv[1] not in ("--check", "--write"):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[1] == "--write":
        with open(argv[2], "w") as f:
            json.dump({"scheme": SCHEME, "buckets": BUCKETS, "vectors": vectors()}, f, indent=1, ensure_ascii=False)
            f.write("\n")
        return 0
    with open(argv[2]) as f:
        published = json.load(f)
    wrong = 0
    for case in published["vectors"]:
        v = version(case["control_basis_points"], case["variants"])
        b = bucket(case["project"], case["campaign"], v, case["profile_key"])
        got = {"version": v, "bucket": b, "variant": variant(b, case["control_basis_points"], case["variants"])}
        want = {k: case[k] for k in got}
        if got != want:
            wrong += 1
            print(f"{case['profile_key']} in {case['project']}/{case['campaign']}: computed {got}, published {want}", file=sys.stderr)
    print(f"{len(published['vectors'])} vectors, {wrong} differ")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
