"""Local decode of snowfence IDs: the layouts v1 and v2, layout schedules in
their text form, and the fields of an ID, exactly as ``snowfence decode
--json --schedule S ID`` prints them.

An ID is 63 bits under a zero sign bit: from the top, a timestamp (41 bits of
milliseconds since 2026-01-01T00:00:00Z in both layouts), the region (v1: 0
bits, v2: 3), the machine (v1: 10, v2: 9) and the sequence (v1: 12, v2: 10).
A schedule says which layout is in force from which instant, so an ID's
timestamp picks its layout.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple, Union

from .errors import InvalidIdError, InvalidScheduleError

MAX_ID = (1 << 63) - 1
"""The largest ID, 2^63 − 1."""

_EPOCH_2026_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
_UNIX = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


@dataclass(frozen=True)
class Layout:
    """How a 64-bit ID is cut into fields (see the module doc)."""

    name: str
    """The layout's name in decoded output ("v1", "v2")."""
    epoch_ms: int
    """The instant of timestamp 0, in Unix milliseconds."""
    unit_ms: int
    """The length of one timestamp tick in milliseconds."""
    time_bits: int
    region_bits: int
    machine_bits: int
    sequence_bits: int

    def describe(self) -> str:
        """The layout as the Go library's Layout.String writes it; two steps
        of a schedule with the same description are the same layout."""
        return "%s (%d/%d/%d/%d bits, %dms since %s)" % (
            self.name, self.time_bits, self.region_bits, self.machine_bits, self.sequence_bits,
            self.unit_ms, format_ms(self.epoch_ms))


V1 = Layout("v1", _EPOCH_2026_MS, 1, 41, 0, 10, 12)
"""The v1 layout: 41 bits of milliseconds since 2026-01-01, 10 of machine, 12 of sequence."""
V2 = Layout("v2", _EPOCH_2026_MS, 1, 41, 3, 9, 10)
"""The v2 layout: 41 bits of milliseconds since 2026-01-01, 3 of region, 9 of machine, 10 of sequence."""
_LAYOUTS = {"v1": V1, "v2": V2}


@dataclass(frozen=True)
class Decoded:
    """An ID taken apart. :meth:`to_dict` is the object ``snowfence decode
    --json`` prints, fields in its order."""

    id: int
    layout: str
    created_at_ms: int
    """The timestamp in Unix milliseconds."""
    region_number: int
    machine: int
    sequence: int

    @property
    def created_at(self) -> str:
        """The timestamp in RFC 3339, UTC, with exactly three fraction digits."""
        return format_ms(self.created_at_ms)

    @property
    def region(self) -> str:
        """The region as text: its number in decimal (no names offline)."""
        return str(self.region_number)

    def to_dict(self) -> Dict[str, Any]:
        """The fields as ``snowfence decode --json`` prints them: the ID as a
        string, then layout, created_at, region, region_number, machine and
        sequence."""
        return {
            "id": str(self.id),
            "layout": self.layout,
            "created_at": self.created_at,
            "region": self.region,
            "region_number": self.region_number,
            "machine": self.machine,
            "sequence": self.sequence,
        }


def format_ms(ms: int) -> str:
    """Unix milliseconds as RFC 3339 in UTC with three fraction digits,
    e.g. 2031-03-01T09:30:00.000Z."""
    t = _UNIX + _dt.timedelta(milliseconds=ms)
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (
        t.year, t.month, t.day, t.hour, t.minute, t.second, t.microsecond // 1000)


class Schedule:
    """Which layout is in force from which instant. Build one with
    :meth:`parse` (``"v1"``, ``"v1,v2@2027-01-01T00:00:00Z"``) or
    :data:`DEFAULT_SCHEDULE`. Immutable."""

    __slots__ = ("_steps", "_from_ticks", "_text")

    def __init__(self, steps: List[Tuple[int, Layout]], text: str) -> None:
        # steps: (first tick, layout), checked by parse.
        self._steps = steps
        self._from_ticks = [t for t, _ in steps]
        self._text = text

    @classmethod
    def parse(cls, text: str) -> "Schedule":
        """Reads the text form ``snowfence decode --schedule`` takes: layout
        names (v1, v2) separated by commas, each after the first with
        ``@`` and the RFC 3339 instant it takes effect, after the epoch and on
        a millisecond. Empty text is v1 alone. Raises
        :class:`InvalidScheduleError` for anything the CLI refuses."""
        if not isinstance(text, str):
            raise InvalidScheduleError("a schedule is text such as \"v1\" or \"v1,v2@2027-01-01T00:00:00Z\", not %r" % (text,))
        if _go_trim(text) == "":
            return DEFAULT_SCHEDULE
        steps: List[Tuple[int, Layout]] = []
        for i, part in enumerate(text.split(",")):
            name, has_at, at = _go_trim(part).partition("@")
            layout = _LAYOUTS.get(name)
            if layout is None:
                raise InvalidScheduleError("invalid layout: unknown layout %s (known: v1, v2)" % _go_quote(name))
            if bool(has_at) != (i > 0):
                raise InvalidScheduleError(
                    "invalid layout: in %s, every layout but the first needs @<RFC 3339 instant> and the first takes none" % _go_quote(text))
            if not has_at:
                steps.append((0, layout))
                continue
            parsed = _parse_rfc3339(at)
            if parsed is None:
                raise InvalidScheduleError(
                    "invalid layout: cutover %s is not an RFC 3339 instant such as 2028-01-01T00:00:00Z" % _go_quote(at))
            ms, sub_ms = parsed
            prev_tick, prev = steps[-1]
            first = steps[0][1]
            if layout.describe() == prev.describe():
                raise InvalidScheduleError(
                    "invalid layout: layout %s at %s repeats the layout in force before it; leave the step out" % (layout.name, format_ms(ms)))
            d = ms - first.epoch_ms
            if d <= 0 or d % first.unit_ms != 0 or sub_ms:
                raise InvalidScheduleError(
                    "invalid layout: cutover to %s at %s must be after the epoch and on a %dms boundary" % (layout.name, format_ms(ms), first.unit_ms))
            tick = d // first.unit_ms
            if tick <= prev_tick:
                raise InvalidScheduleError(
                    "invalid layout: cutovers must be in increasing order (%s at %s)" % (layout.name, format_ms(ms)))
            steps.append((tick, layout))
        return cls(steps, text)

    def __repr__(self) -> str:
        return "Schedule.parse(%r)" % self._text

    def layout_at_tick(self, tick: int) -> Layout:
        """The layout in force at a tick (units since the epoch)."""
        return self._steps[bisect.bisect_right(self._from_ticks, tick) - 1][1]

    def decode(self, id: Union[int, str]) -> Decoded:
        """Takes an ID apart, picking the layout by its timestamp. ``id`` is an
        int or its decimal text; raises :class:`InvalidIdError` for anything
        else (negative, over 2^63 − 1, not canonical decimal)."""
        v = parse_id(id) if isinstance(id, str) else check_id(id)
        first = self._steps[0][1]
        tick = v >> (63 - first.time_bits)
        layout = self.layout_at_tick(tick)
        seq_bits, mach_bits, reg_bits = layout.sequence_bits, layout.machine_bits, layout.region_bits
        t = v >> (seq_bits + mach_bits + reg_bits)
        return Decoded(
            id=v,
            layout=layout.name,
            created_at_ms=layout.epoch_ms + t * layout.unit_ms,
            region_number=(v >> (seq_bits + mach_bits)) & ((1 << reg_bits) - 1),
            machine=(v >> seq_bits) & ((1 << mach_bits) - 1),
            sequence=v & ((1 << seq_bits) - 1),
        )

    def stream_of(self, id: int) -> Tuple[str, int, int]:
        """The (layout, region number, machine) of an ID: the stream whose IDs
        only increase over time."""
        first = self._steps[0][1]
        layout = self.layout_at_tick(id >> (63 - first.time_bits))
        s = layout.sequence_bits
        return (layout.name,
                (id >> (s + layout.machine_bits)) & ((1 << layout.region_bits) - 1),
                (id >> s) & ((1 << layout.machine_bits) - 1))


DEFAULT_SCHEDULE = Schedule([(0, V1)], "v1")
"""v1 from the epoch on."""


def decode(id: Union[int, str], schedule: Union[str, Schedule] = "v1") -> Decoded:
    """Decodes an ID (an int or its decimal text) with a schedule (text or a
    :class:`Schedule`). See :meth:`Schedule.decode`."""
    if not isinstance(schedule, Schedule):
        schedule = Schedule.parse(schedule)
    return schedule.decode(id)


def parse_id(text: str) -> int:
    """Reads an ID in canonical decimal: 1 to 19 digits, no sign, spaces or
    leading zero, at most 9223372036854775807. Raises
    :class:`InvalidIdError` otherwise."""
    shown = text if len(text) <= 40 else text[:40] + "…"

    def fail(reason: str) -> InvalidIdError:
        return InvalidIdError("invalid ID %s: %s" % (_go_quote(shown), reason))

    if text == "":
        raise fail("empty; an ID is 1 to 19 decimal digits")
    if len(text) > 19:
        raise fail("more than 19 characters; the largest ID is 9223372036854775807")
    if len(text) > 1 and text[0] == "0":
        raise fail("leading zero; write the ID without one")
    for i, c in enumerate(text):
        if not ("0" <= c <= "9"):
            raise fail("character %s at offset %d is not a decimal digit (no signs, spaces or separators)" % (_go_quote(c), i))
    v = int(text)
    if v > MAX_ID:
        raise fail("larger than 9223372036854775807, the largest ID")
    return v


def check_id(v: int) -> int:
    """Returns ``v`` if it is an ID (an int from 0 to 2^63 − 1); raises
    :class:`InvalidIdError` otherwise."""
    if type(v) is not int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise InvalidIdError("an ID is an int or its decimal text, not %r" % (v,))
        v = int(v)
    if v < 0:
        raise InvalidIdError("invalid ID %d: IDs are never negative" % v)
    if v > MAX_ID:
        raise InvalidIdError("invalid ID %d: larger than 9223372036854775807, the largest ID" % v)
    return v


# Go's unicode.IsSpace for the characters strings.TrimSpace removes (Python's
# str.strip also removes U+001C..U+001F, which Go keeps).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def _go_trim(s: str) -> str:
    return s.strip(_GO_SPACE)


def _go_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# What Go's time.Parse(time.RFC3339Nano, s) takes (its strict fast path, then
# the general parser it falls back to): a 4-digit year, 2-digit month, day,
# minute and second, an hour of 1 or 2 digits, an optional fraction after "."
# or ",", then Z or ±hh:mm (hour up to 24, minute up to 60 there).
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?(Z|[+-][0-9]{2}:[0-9]{2})")


def _parse_rfc3339(s: str) -> "Tuple[int, bool] | None":
    """Parses an RFC 3339 instant as Go's time.Parse(time.RFC3339Nano, s)
    does (digits of the fraction past the ninth ignored). Returns (Unix
    milliseconds, whether a part below the millisecond is not zero), or
    None."""
    m = _RFC3339.fullmatch(s)
    if m is None:
        return None
    year, month, day, hour, minute, sec = (int(g) for g in m.groups()[:6])
    if not (1 <= month <= 12 and hour <= 23 and minute <= 59 and sec <= 59):
        return None
    nanos = int((m.group(7) or "")[:9].ljust(9, "0"))
    zone = m.group(8)
    offset = 0
    if zone != "Z":
        oh, om = int(zone[1:3]), int(zone[4:6])
        if oh > 24 or om > 60:
            return None
        offset = (oh * 60 + om) * 60 * (1 if zone[0] == "+" else -1)
    if year == 0:
        # Before the epoch whatever the rest (Python's dates start at year 1):
        # refused by the caller, as Go refuses it there.
        leap = True
        if day < 1 or day > (29 if month == 2 and leap else 28 if month == 2 else 30 if month in (4, 6, 9, 11) else 31):
            return None
        return (-62_167_219_200_000, False)
    try:
        date = _dt.date(year, month, day)
    except ValueError:
        return None
    days = (date - _dt.date(1970, 1, 1)).days
    secs = days * 86400 + hour * 3600 + minute * 60 + sec - offset
    return (secs * 1000 + nanos // 1_000_000, nanos % 1_000_000 != 0)
