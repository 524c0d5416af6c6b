"""Writes decode_cases.json: what `snowfence decode --json --schedule S ID`
prints (or that it refuses) for the schedules and IDs below, the reference
test_decode.py holds the local decode to. Run from the repository root:

    go build -o /tmp/snowfence ./cmd/snowfence
    SNOWFENCE=/tmp/snowfence python3 clients/python/tests/gen_decode_cases.py
"""

from __future__ import annotations

import json
import os
import subprocess

SCHEDULES = [
    "v1", "v2", "", " v1 ", "v1,v2@2027-01-01T00:00:00Z", " v1 , v2@2027-01-01T00:00:00Z ",
    "v1,v2@2027-01-01T01:00:00+01:00", "v1,v2@2026-12-31T19:00:00-05:00", "v1,v2@2027-01-01T00:00:00.001Z",
    "v1,v2@2027-01-01T00:00:00.000Z", "v1,v2@2027-01-01T00:00:00.0010000009Z", "v1,v2@2027-01-01T00:00:00.0005Z",
    "v2,v1@2027-01-01T00:00:00Z", "v1,v1@2027-01-01T00:00:00Z", "v1,v2@2025-01-01T00:00:00Z",
    "v1,v2@2026-01-01T00:00:00Z", "v1,v2@2026-01-01T00:00:00.001Z", "v1,v2@2027-01-01t00:00:00z",
    "v1,v2@2027-01-01T00:00:00", "v1,v2@2027-02-30T00:00:00Z", "v1,v2@2028-02-29T00:00:00Z",
    "v1,v2@2027-01-01T24:00:00Z", "v1,v2@2027-01-01T00:00:60Z", "v1,v2@2027-01-01T00:00:00+24:00",
    "v1@2027-01-01T00:00:00Z", "v1,v2", "v3", "V1", "v1,,v2@2027-01-01T00:00:00Z",
    "v1,v2@2027-01-01T00:00:00Z,v1@2028-01-01T00:00:00Z", "v1,v2@2028-01-01T00:00:00Z,v1@2027-01-01T00:00:00Z",
    "v1,v2@2027-01-01T00:00:00Z,v2@2028-01-01T00:00:00Z", "v1,v2@2027-01-01T00:00:00Z@x",
    # Go's general time parser, behind its strict RFC 3339 one, takes these too.
    "v1,v2@2027-01-01T0:00:00Z", "v1,v2@2027-01-01T00:00:00,001Z", "v1,v2@2027-01-01T00:00:00+24:00",
    "v1,v2@2027-01-01T00:00:00+00:60", "v1,v2@2027-01-01T00:00:00+25:00", "v1,v2@2027-01-01T00:00:00.5,5Z",
    "v1,v2@2027-01-01T00:00:0Z", "v1,v2@2027-01-01T00:00:00.Z", "v1,v2@٢027-01-01T00:00:00Z",
    "v1\x1c", "\u3000v1\u3000",
]
IDS = ["0", "1", "4194304", "683244571854022659", "9223372036854775807", "122737214132080640",
       "-1", "9223372036854775808", "12a", "01", "+1", "1.0", "10000000000000000000", "١"]


def main() -> None:
    cli = os.environ.get("SNOWFENCE", "snowfence")
    cases = []
    for sched in SCHEDULES:
        for id in IDS if sched in ("v1", "v1,v2@2027-01-01T00:00:00Z") else IDS[:6]:
            p = subprocess.run([cli, "decode", "--json", "--schedule", sched, "--", id], capture_output=True, text=True)
            case = {"schedule": sched, "id": id, "ok": p.returncode == 0}
            if p.returncode == 0:
                case["decoded"] = json.loads(p.stdout)
            cases.append(case)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decode_cases.json")
    with open(path, "w") as f:
        json.dump(cases, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
