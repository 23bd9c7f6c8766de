#!/usr/bin/env python3
"""Regenerates vectors.json with an encoder independent of the Go code.

For integers-only objects with ASCII keys RFC 8785 equals
json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
The one float vector is the RFC 8785 section 3.2.3 example, whose canonical
form is copied from the RFC rather than computed here.
"""
import hashlib, json

cases = [
    ("empty-object", {}),
    ("empty-array", []),
    ("nested-empty", {"a": {}, "b": [], "c": [{}, []]}),
    ("key-order", {"b": 1, "a": 2, "aa": 3, "A": 4, "_": 5, "a1": 6}),
    ("nested-sort", {"z": {"y": 1, "x": [3, 2, 1]}, "a": {"d": {"c": True, "b": False, "a": None}}}),
    ("html-chars", {"title": "Ship & deploy <v2> \"now\""}),
    ("line-separators", {"t": "a\u2028b\u2029c"}),
    ("non-ascii", {"name": "Zoë Ångström naïve café 日本語"}),
    ("emoji", {"t": "agree 😀🤝🏽 👩‍💻"}),
    ("escapes", {"t": "quote\" backslash\\ slash/ nl\n cr\r tab\t bs\b ff\f nul\u0000 us\u001f del\u007f"}),
    ("integers", {"n": [0, -1, 1, 9007199254740991, -9007199254740991, 100]}),
    ("literals", [None, True, False, "", 0]),
    ("revision-like", {
        "schema": "https://consensus.md/schemas/agreement/v1",
        "agreement_id": "6a1c2d3e-4f50-4a6b-8c7d-9e0f1a2b3c4d",
        "revision": 1,
        "title": "Q3 & Q4 <plan> \u2028 launch 🚀",
        "objective": "Agree on the rollout.\nSecond line.",
        "rules": ["No weekend deploys", "Rollback within 5 min"],
        "participants": [
            {"participant_id": "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", "display_name": "Büyer", "kind": "agent", "required": True},
            {"participant_id": "1d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a", "display_name": "Observer", "kind": "human", "required": False},
        ],
        "decision_rule": "unanimity-of-required",
        "deadline": "2026-12-31T00:00:00Z",
        "locked_at": "2026-12-02T16:00:00Z",
        "issuer": "https://consensus.md",
    }),
]

out = []
for name, value in cases:
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    out.append({"name": name, "input": value, "canonical": canonical,
                "sha256": hashlib.sha256(canonical.encode("utf-8")).hexdigest()})

rfc_input = '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}'
rfc_canonical = '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'
out.append({"name": "rfc8785-3.2.3", "input": json.loads(rfc_input), "canonical": rfc_canonical,
            "sha256": hashlib.sha256(rfc_canonical.encode("utf-8")).hexdigest()})

with open("vectors.json", "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=True, indent=1)
    f.write("\n")
