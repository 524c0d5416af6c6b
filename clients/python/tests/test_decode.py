"""Local decode against `snowfence decode --json` (decode_cases.json, written
by gen_decode_cases.py from the CLI), and its typed refusals."""

from __future__ import annotations

import json
import os
import unittest

from helpers import sf

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decode_cases.json")


class TestDecode(unittest.TestCase):
    def test_matches_the_cli(self):
        with open(CASES) as f:
            cases = json.load(f)
        self.assertGreater(len(cases), 200)
        for case in cases:
            with self.subTest(schedule=case["schedule"], id=case["id"]):
                if case["ok"]:
                    got = sf.decode(case["id"], case["schedule"]).to_dict()
                    self.assertEqual(json.dumps(got), json.dumps(case["decoded"]), "fields or their order differ")
                else:
                    with self.assertRaises((sf.InvalidScheduleError, sf.InvalidIdError)):
                        sf.decode(case["id"], case["schedule"])

    def test_kinds_of_refusal(self):
        for sched in ("v9", "v1,v2@2025-01-01T00:00:00Z", "v1,v1@2027-01-01T00:00:00Z", "v1,v2"):
            with self.assertRaises(sf.InvalidScheduleError):
                sf.decode("1", sched)
        for id in ("-1", "9223372036854775808", "12a", "", "01", -1, 1 << 63, 1.0, True, None):
            with self.assertRaises(sf.InvalidIdError):
                sf.decode(id, "v1")

    def test_int_and_text_agree(self):
        s = sf.Schedule.parse("v1,v2@2027-01-01T00:00:00Z")
        for id in (0, 1, 683244571854022659, sf.MAX_ID):
            self.assertEqual(s.decode(id), s.decode(str(id)))
        d = sf.decode(683244571854022659)
        self.assertEqual((d.layout, d.created_at, d.machine, d.sequence), ("v1", "2031-03-01T09:30:00.000Z", 298, 2051))


if __name__ == "__main__":
    unittest.main()
