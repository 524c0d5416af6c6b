"""The clock the client reads and sleeps on, injectable for tests.

The client reads a monotonic clock for the age of buffered IDs, the rate at
which they are taken, and the waits between attempts and between health
probes; it reads the wall clock only for a Retry-After given as an HTTP
date. :class:`SystemClock` is the real one; :class:`FakeClock` moves only
when told, so a test can check a wait without sleeping.
"""

from __future__ import annotations

import threading
import time
from typing import List


class Clock:
    """The interface of a clock. Subclass it (or give any object with these
    three methods) as ``Config.clock``."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, from any origin."""
        raise NotImplementedError

    def wall_ms(self) -> int:
        """Milliseconds since the Unix epoch."""
        raise NotImplementedError

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        """Waits ``seconds`` on the monotonic clock, or until ``stop`` is
        set. Returns False if ``stop`` ended the wait."""
        raise NotImplementedError


class SystemClock(Clock):
    """The system's clocks: ``time.monotonic`` and ``time.time``."""

    monotonic = staticmethod(time.monotonic)  # type: ignore[assignment]

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        return not stop.wait(max(seconds, 0.0))


class FakeClock(Clock):
    """A clock that moves only by :meth:`advance`: :meth:`sleep` blocks until
    the clock has been advanced past its end (or ``stop`` is set). For tests
    of code that takes a ``Config.clock``; safe for use from several threads.
    """

    def __init__(self, wall_ms: int = 1_790_000_000_000) -> None:
        self._cond = threading.Condition()
        self._mono = 0.0
        self._wall0 = wall_ms
        self._sleepers: List[float] = []
        self._stops: List[threading.Event] = []

    def monotonic(self) -> float:
        with self._cond:
            return self._mono

    def wall_ms(self) -> int:
        with self._cond:
            return self._wall0 + int(round(self._mono * 1000))

    def advance(self, seconds: float) -> None:
        """Moves the clock on by ``seconds`` and wakes the sleepers whose end
        it reached."""
        with self._cond:
            self._mono += seconds
            self._cond.notify_all()

    def waiters(self) -> int:
        """How many calls of :meth:`sleep` are waiting."""
        with self._cond:
            return len(self._sleepers)

    def block_until_waiters(self, n: int, timeout: float = 30.0) -> None:
        """Waits (in real time, at most ``timeout``) until at least ``n``
        calls of :meth:`sleep` are waiting; raises TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while len(self._sleepers) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("FakeClock: %d sleepers, want %d" % (len(self._sleepers), n))
                self._cond.wait(min(left, 0.05))

    def sleep(self, seconds: float, stop: threading.Event) -> bool:
        with self._cond:
            end = self._mono + seconds
            self._sleepers.append(end)
            self._cond.notify_all()
            try:
                while self._mono < end:
                    if stop.is_set():
                        return False
                    # stop is an Event of its own: poll it now and then.
                    self._cond.wait(0.01)
                return not stop.is_set()
            finally:
                self._sleepers.remove(end)
                self._cond.notify_all()

