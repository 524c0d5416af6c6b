"""The strict parse of a 200 answer to a mint request (client/parse.go)."""

from __future__ import annotations

import re
from itertools import islice
from operator import lt
from typing import List, Union

MAX_ID = (1 << 63) - 1

_WS = rb"[ \t\n\r]*"  # JSON white space, nothing else
_ID = rb'"[1-9][0-9]{0,18}"'
# The whole documented shape, {"ids":["…",…]}, as one regular expression:
# one object whose only member is "ids" (spelled without escapes), an array
# of at least one string of 1 to 19 digits without a leading zero, and
# nothing after the object but white space. It refuses everything json.loads
# would let through and Go's parser does not: a repeated or escaped member
# name, an escape inside an ID, NaN or numbers, trailing data.
_BATCH = re.compile(
    _WS + rb"\{" + _WS + rb'"ids"' + _WS + rb":" + _WS + rb"\[" + _WS + _ID
    + rb"(?:" + _WS + rb"," + _WS + _ID + rb")*" + _WS + rb"\]" + _WS + rb"\}" + _WS
)


def parse_batch(body: Union[bytes, bytearray, memoryview], n: int) -> "List[int] | str":
    """Reads ``body``, the body of a 200 answer to a request for ``n`` IDs,
    and returns its IDs, or a string saying why it is refused (then no ID of
    it may be used). It takes exactly what client/parse.go takes: the shape
    above, exactly ``n`` IDs, each at most 2^63 − 1 and greater than zero and
    than the one before it.

    It is written for speed because it is the client's only cost per ID
    besides the hand-out, and Python runs it under the GIL beside the callers
    of next(): the regular expression checks the whole shape in one pass in
    C (about 40 µs for 1,000 IDs), ``split`` on the double quote then finds
    the IDs (every string after "ids" is one), ``map(int, …)`` converts them
    in C, and one comparison of neighbours in C checks the order; json.loads
    would need every one of those checks after it, and still could not see
    escapes or a repeated member.
    """
    body = bytes(body)
    # The server's compact form, {"ids":["d","d",…]}, is checked without the
    # regular expression: the body is that prefix, the IDs joined by
    # '","', and that suffix; the IDs joined together are ASCII digits only
    # (one C call: so no quote or comma hides in one, and the split was
    # exact); none is empty or starts with 0 (the least of them, in byte
    # order, does not: b"" and b"0…" sort before any other string of
    # digits). That is the regular expression without white space, in about
    # half its time. Anything else
    # takes the regular expression, then a split on the double quote (every
    # string after "ids" is an ID).
    digits = body[9:-3].split(b'","')
    if not (body[:9] == b'{"ids":["' and body[-3:] == b'"]}' and len(body) >= 13
            and b"".join(digits).isdigit() and min(digits)[:1] not in (b"", b"0")):
        if _BATCH.fullmatch(body) is None:
            return _why(body, n)
        digits = body.split(b'"')[3::2]
    try:
        ids = list(map(int, digits))
    except ValueError:  # over the interpreter's limit of digits in an int
        return "an ID has more than 19 digits"
    if len(ids) != n:
        if len(ids) > n:
            return "more than the %d IDs asked for" % n
        return "%d IDs where %d were asked for" % (len(ids), n)
    # Each is positive (no leading zero, not "0"); strictly increasing, so
    # only the last can be the largest.
    if ids[-1] > MAX_ID:
        return "an ID is larger than 9223372036854775807"
    if not all(map(lt, ids, islice(ids, 1, None))):
        return "the IDs are not strictly increasing"
    return ids


def _why(body: bytes, n: int) -> str:
    """Says where ``body`` leaves the shape (for the error message only:
    the body is refused either way)."""
    i = 0
    for piece, what in (
        (rb"[ \t\n\r]*\{", 'not a JSON object {"ids":[…]}'),
        (rb'[ \t\n\r]*"ids"', 'the object\'s member is not "ids"'),
        (rb"[ \t\n\r]*:", "expected ':' after \"ids\""),
        (rb"[ \t\n\r]*\[", '"ids" is not an array'),
    ):
        m = re.compile(piece).match(body, i)
        if m is None:
            return "%s at offset %d" % (what, i)
        i = m.end()
    k = 0
    item = re.compile(rb'[ \t\n\r]*"([0-9]*)"[ \t\n\r]*([,\]])?')
    while True:
        m = item.match(body, i)
        if m is None:
            return "expected an ID in double quotes at offset %d" % i
        d = m.group(1)
        if d == b"" or len(d) > 19:
            return "an ID is not 1 to 19 decimal digits at offset %d" % m.start(1)
        if d[:1] == b"0":
            return "an ID is zero or has a leading zero at offset %d" % m.start(1)
        k += 1
        i = m.end()
        if m.group(2) == b"]":
            break
        if m.group(2) is None:
            return "expected ',' or ']' after an ID at offset %d" % i
    m = re.compile(rb"[ \t\n\r]*\}").match(body, i)
    if m is None:
        return "expected '}' after the array; the object has only \"ids\" at offset %d" % i
    return "data after the object at offset %d" % m.end()
