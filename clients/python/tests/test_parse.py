"""The strict parse of a batch answer: a test per rule of client/parse.go,
and a differential test against an independent reader."""

from __future__ import annotations

import json
import random
import re
import unittest

from helpers import batch_body  # noqa: F401  (puts src on the path)
from snowfence_client._parse import _BATCH, parse_batch

GOOD = [
    ("server's form", b'{"ids":["1","2","97301141913751557"]}', 3, [1, 2, 97301141913751557]),
    ("white space", b' {\n "ids" : [ "5" ,\t"6" ] } \r\n', 2, [5, 6]),
    ("16 and 17 digits", b'{"ids":["1234567890123456","12345678901234567"]}', 2, [1234567890123456, 12345678901234567]),
    ("largest ID", b'{"ids":["9223372036854775806","9223372036854775807"]}', 2, [9223372036854775806, 9223372036854775807]),
]

BAD = [
    ("empty", b"", 1),
    ("not an object", b'["1"]', 1),
    ("other member", b'{"id":"1"}', 1),
    ("extra member", b'{"ids":["1"],"more":1}', 1),
    ("member before", b'{"more":1,"ids":["1"]}', 1),
    ("repeated member", b'{"ids":["1"],"ids":["2"]}', 1),
    ("escaped name", b'{"\\u0069ds":["1"]}', 1),
    ("name case", b'{"IDS":["1"]}', 1),
    ("not an array", b'{"ids":"1"}', 1),
    ("empty array", b'{"ids":[]}', 1),
    ("too few", b'{"ids":["1","2"]}', 3),
    ("too many", b'{"ids":["1","2","3"]}', 2),
    ("number, not string", b'{"ids":[1]}', 1),
    ("NaN", b'{"ids":[NaN]}', 1),
    ("null ID", b'{"ids":[null]}', 1),
    ("zero", b'{"ids":["0"]}', 1),
    ("negative", b'{"ids":["-1"]}', 1),
    ("leading zero", b'{"ids":["01"]}', 1),
    ("leading zero later", b'{"ids":["1","02"]}', 2),
    ("plus sign", b'{"ids":["+1"]}', 1),
    ("space inside", b'{"ids":[" 1"]}', 1),
    ("underscore", b'{"ids":["1_0"]}', 1),
    ("fraction", b'{"ids":["1.0"]}', 1),
    ("escape in ID", b'{"ids":["\\u0031"]}', 1),
    ("non-ASCII digit", '{"ids":["\u0661"]}'.encode(), 1),
    ("over 2^63-1", b'{"ids":["9223372036854775808"]}', 1),
    ("letter in a long ID", b'{"ids":["1234567812345a78901"]}', 1),
    ("colon in a long ID", b'{"ids":["12345678:2345678901"]}', 1),
    ("20 digits", b'{"ids":["10000000000000000000"]}', 1),
    ("5000 digits", b'{"ids":["' + b"1" * 5000 + b'"]}', 1),
    ("empty string", b'{"ids":[""]}', 1),
    ("empty string later", b'{"ids":["1",""]}', 2),
    ("equal", b'{"ids":["5","5"]}', 2),
    ("decreasing", b'{"ids":["6","5"]}', 2),
    ("trailing comma", b'{"ids":["1",]}', 1),
    ("stray character between", b'{"ids":["1"x"2"]}', 2),
    ("stray quote", b'{"ids":["1"x"]}', 1),
    ("unterminated", b'{"ids":["1"]', 1),
    ("cut short", b'{"ids":["1","2', 2),
    ("trailing data", b'{"ids":["1"]}x', 1),
    ("trailing object", b'{"ids":["1"]}{}', 1),
    ("two objects", b'{"ids":["1"]}{"ids":["2"]}', 1),
    ("null", b"null", 1),
    ("byte order mark", b'\xef\xbb\xbf{"ids":["1"]}', 1),
    ("vertical tab is not JSON space", b'{"ids":\x0b["1"]}', 1),
    ("form feed is not JSON space", b'\x0c{"ids":["1"]}', 1),
    ("non-breaking space", '{"ids":\u00a0["1"]}'.encode(), 1),
]


class TestParseBatch(unittest.TestCase):
    def test_good(self):
        for name, body, n, want in GOOD:
            with self.subTest(name):
                self.assertEqual(parse_batch(body, n), want)

    def test_bad(self):
        for name, body, n in BAD:
            with self.subTest(name):
                got = parse_batch(body, n)
                self.assertIsInstance(got, str, "accepted %r as %r" % (body, got))
                self.assertTrue(got)

    def test_batch_of_1000(self):
        ids = [97301141913751557 + i for i in range(1000)]
        self.assertEqual(parse_batch(batch_body(ids), 1000), ids)


def reference(body: bytes, n: int):
    """An independent reader: json.loads made as strict as client/parse.go.
    Returns the IDs or None."""
    if b"\\" in body:  # escapes: the Go parser takes none
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if text[:1] == "\ufeff":
        return None

    def pairs(ps):
        keys = [k for k, _ in ps]
        if len(set(keys)) != len(keys):
            raise ValueError("repeated member")
        return dict(ps)

    def no_constant(c):
        raise ValueError(c)

    try:
        v = json.loads(text, object_pairs_hook=pairs, parse_constant=no_constant)
    except ValueError:
        return None
    if not isinstance(v, dict) or list(v) != ["ids"] or not isinstance(v["ids"], list):
        return None
    raw = v["ids"]
    if len(raw) != n or not all(isinstance(x, str) and re.fullmatch(r"[1-9][0-9]{0,18}", x) for x in raw):
        return None
    ids = [int(x) for x in raw]
    if ids[-1] > (1 << 63) - 1 or any(a >= b for a, b in zip(ids, ids[1:])):
        return None
    return ids


class TestParseAgainstReference(unittest.TestCase):
    def test_mutations_agree(self):
        # Seeded random mutations of sound bodies (compact and spaced): the
        # parse (its quick path for the compact form, and the regular
        # expression) takes exactly what the independent reader takes.
        rng = random.Random(29)
        alphabet = b'0123456789"{}[],: \t\n\rids-+.eE\\u0x\x0b'
        for k in range(3000):
            n = rng.randint(1, 5)
            top = min(10 ** rng.randint(1, 19), (1 << 63) - 1)
            ids = sorted({rng.randint(1, top) for _ in range(n)}) if k % 7 else list(range(1, n + 1))
            n = len(ids)
            body = bytearray(batch_body(ids))
            if k % 3 == 0:
                body = bytearray(json.dumps({"ids": [str(i) for i in ids]}, indent=rng.choice([None, 1])).encode())
            for _ in range(rng.randint(0, 3)):
                op, at = rng.randrange(3), rng.randrange(len(body) + 1)
                if op == 0 and body:
                    del body[min(at, len(body) - 1)]
                elif op == 1:
                    body.insert(at, rng.choice(alphabet))
                elif body:
                    body[min(at, len(body) - 1)] = rng.choice(alphabet)
            want = reference(bytes(body), n)
            got = parse_batch(bytes(body), n)
            if want is None:
                self.assertIsInstance(got, str, "accepted %r (n=%d), the reference refuses it" % (bytes(body), n))
            else:
                self.assertEqual(got, want, "%r (n=%d)" % (bytes(body), n))
            # The quick path and the regular expression agree on the shape.
            if not isinstance(got, str):
                self.assertIsNotNone(_BATCH.fullmatch(bytes(body)))


if __name__ == "__main__":
    unittest.main()
