"""The buffer of IDs received and not yet handed out (client/buffer.go)."""

from __future__ import annotations

from collections import deque
from typing import Deque, List, Tuple

NEVER = float("inf")
"""A deadline never reached."""

_NO_KICK = 1 << 62  # a position never reached: no refill to start


class Buffer:
    """IDs oldest first, as one chunk per response: the response's list of
    ints as parsed, the position of the next ID to hand out in it, and the
    monotonic instant the chunk expires. The client's lock guards it.

    A chunk is the parsed list itself rather than a copy into a ring of
    machine integers: handing out ``cur[pos]`` returns the int the parse
    made, with no allocation per ID, and a response is buffered in O(1).
    Python's ints are objects, so a ring of them (array('q')) would allocate
    an int on every read instead. The current chunk's fields are plain
    attributes (``__slots__``) because Client.next reads them inline.

    ``kick`` is the position in the current chunk from which taking an ID
    leaves the buffer at or below the low-water mark, so next() checks for
    it with one comparison; it is ``_NO_KICK`` while no refill may start.
    """

    __slots__ = ("cur", "pos", "end", "deadline", "pending", "rest", "kick", "low", "armed")

    def __init__(self) -> None:
        self.cur: List[int] = []
        self.pos = 0
        self.end = 0
        self.deadline = NEVER
        # The chunks after the current one, oldest first, and how many IDs
        # they hold.
        self.pending: Deque[Tuple[List[int], float]] = deque()
        self.rest = 0
        self.low = 0
        self.armed = True
        self.kick = _NO_KICK

    def __len__(self) -> int:
        """The number of IDs buffered, expired ones included."""
        return self.end - self.pos + self.rest

    def rekick(self) -> None:
        """Recomputes ``kick`` after a change of the chunks, ``low`` or
        ``armed``: taking the ID at position i leaves end − i − 1 + rest."""
        self.kick = self.end - 1 + self.rest - self.low if self.armed else _NO_KICK

    def _advance(self) -> bool:
        """Makes the oldest pending chunk current once the current one is
        used up; False if there is none."""
        if not self.pending:
            return False
        ids, deadline = self.pending.popleft()
        self.cur, self.pos, self.end, self.deadline = ids, 0, len(ids), deadline
        self.rest -= len(ids)
        self.rekick()
        return True

    def push(self, ids: List[int], deadline: float) -> None:
        """Adds the IDs of one response (not empty), expiring at ``deadline``."""
        if self.pos == self.end and not self.pending:
            self.cur, self.pos, self.end, self.deadline = ids, 0, len(ids), deadline
        else:
            self.pending.append((ids, deadline))
            self.rest += len(ids)
        self.rekick()

    def drop_expired(self, now: float) -> int:
        """Drops the chunks expired at ``now``; returns how many IDs."""
        dropped = 0
        while True:
            if self.pos < self.end:
                if now < self.deadline:
                    break
                dropped += self.end - self.pos
                self.pos = self.end
            if not self._advance():
                break
        if dropped:
            self.rekick()
        return dropped

    def take_n(self, dst: List[int], n: int, now: float, deadline: float) -> Tuple[int, float]:
        """Appends up to ``n`` IDs that have not expired at ``now`` to
        ``dst``, dropping expired ones; returns (how many IDs were dropped,
        the earliest of ``deadline`` and the deadlines of the chunks it took
        from)."""
        dropped = self.drop_expired(now)
        while n > 0 and self.pos < self.end:
            k = min(n, self.end - self.pos)
            dst.extend(self.cur[self.pos:self.pos + k])
            self.pos += k
            n -= k
            if self.deadline < deadline:
                deadline = self.deadline
            if self.pos == self.end:
                self._advance()
            # The next chunk may have expired too.
            dropped += self.drop_expired(now)
        return dropped, deadline

    def clear(self) -> int:
        """Drops every ID; returns how many there were."""
        n = len(self)
        self.cur, self.pos, self.end, self.deadline = [], 0, 0, NEVER
        self.pending.clear()
        self.rest = 0
        self.rekick()
        return n
