"""The Client: IDs handed out from a buffer it keeps filled from the servers
(client/client.go)."""

from __future__ import annotations

import threading
import time
import types
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from ._buffer import NEVER, Buffer
from ._endpoints import Endpoints
from ._refill import Refiller
from .clock import SystemClock
from .config import MAX_BATCH, Config, check
from .errors import ClosedError, InvalidConfigError, InvalidCountError, WaitTimeoutError

_SYSTEM_CLOCK = SystemClock()


@dataclass(frozen=True)
class Stats:
    """A snapshot of a Client's counters."""

    buffered: int
    """IDs in the buffer (expired ones not yet dropped included)."""
    handed_out: int
    """IDs returned by next and next_n."""
    received: int
    """IDs of every 200 taken into the buffer."""
    expired: int
    """IDs dropped for age: those that reached max_age in the buffer, and
    those a next_n had taken and held while it waited for a refill, once the
    oldest of them reached max_age."""
    discarded: int
    """IDs dropped by close or by a next_n that failed."""
    requests: int
    """Mint requests that brought IDs."""
    failures: int
    """Mint requests that did not."""
    endpoint: int
    """The index in Config.endpoints of the endpoint requests go to now (the
    first in service), or -1 when none is in service."""
    in_service: List[bool]
    """Per endpoint, whether it is in service."""


class _Want:
    """One call waiting for IDs: what it took so far and what it waits on."""

    __slots__ = ("n", "dst", "deadline", "need", "ended")

    def __init__(self, n: int) -> None:
        self.n = n
        self.dst: List[int] = []
        # The earliest deadline of the chunks the IDs in dst came from: they
        # age while the call waits for more, and none may be handed out once
        # it has passed.
        self.deadline = NEVER
        self.need = 0
        self.ended = 0


class Client:
    """Hands out IDs from a buffer it keeps filled from the servers of
    ``Config.endpoints``, refilling in the background, retrying and failing
    over. Create it with a :class:`Config` (or its fields as keyword
    arguments), take IDs with :meth:`next` and :meth:`next_n`, and
    :meth:`close` it when done (or use it as a context manager). Safe for
    concurrent use from threads; :class:`AsyncClient` serves asyncio.

    IDs are Python ints (exact, 1 to 2^63 − 1); ``str(id)`` is the decimal
    text the server sent. (``next`` is defined after the class, by
    ``_make_next``.)
    """

    def __init__(self, config: Optional[Config] = None, **fields: Any) -> None:
        """Checks the configuration and starts two daemon threads (the refill
        and the health probes), which :meth:`close` stops. Sends no request:
        the first next() fills the buffer. Raises InvalidConfigError."""
        if config is None:
            try:
                config = Config(**fields)
            except TypeError as e:
                raise InvalidConfigError("invalid configuration: snowfence client: %s; see snowfence_client.Config for the fields" % e) from e
        elif fields:
            raise InvalidConfigError("invalid configuration: snowfence client: give a Config or its fields as keyword arguments, not both")
        s = check(config)
        self._s = s
        self._log = s.logger
        self._clock = s.clock if s.clock is not None else _SYSTEM_CLOCK
        self._now: Callable[[], float] = time.monotonic if s.clock is None else s.clock.monotonic
        if s.clock is not None:
            # next with the injected clock's reading (see _make_next).
            self.next = types.MethodType(_make_next(s.clock.monotonic), self)  # type: ignore[method-assign]
        self._eps = Endpoints(s.endpoints, s.mint_urls, s.health_urls, s.failure_threshold, s.recovery_probes, s.logger)
        self._lock = threading.Lock()
        # Callers waiting for IDs wait on _cond; the refill thread waits on
        # _kick; both on the one lock.
        self._cond = threading.Condition(self._lock)
        self._kick = threading.Condition(self._lock)
        self._buf = Buffer()
        self._refilling = False  # from the moment a refill is asked for until it ends: at most one runs
        self._kicked = False
        self._closed = False
        self._waiters = 0
        self._async_waiters: List[Callable[[], None]] = []
        self._demand = 0  # IDs waiting callers still need
        self._ended = 0  # refills that ended
        self._refill_err: Optional[BaseException] = None  # the last one's error
        self._size = s.min_refill
        self._low = s.low_water or self._size // 2
        self._buf.low = self._low
        self._buf.rekick()
        self._planned = False
        self._plan_at = 0.0
        self._handed_at_plan = 0
        self._received = 0
        self._expired = 0
        self._discarded = 0
        self._stop = threading.Event()
        self._refiller = Refiller(self)
        self._threads = [
            threading.Thread(target=self._refiller.run_refills, name="snowfence-refill", daemon=True),
            threading.Thread(target=self._refiller.run_probes, name="snowfence-probe", daemon=True),
        ]
        for t in self._threads:
            t.start()

    # The hot path: next, made by _make_next (below the class).

    def next_n(self, n: int, timeout: Optional[float] = None) -> List[int]:
        """Returns ``n`` IDs (1 ≤ n ≤ 1000) in the order the buffer holds them.
        On error it returns none: any it had taken are discarded, never handed
        out. When the buffer holds fewer than n it takes what is there and
        waits for a refill; if the oldest it holds reaches max_age meanwhile
        it drops them all (Stats.expired) and takes again, so no ID it
        returns has reached max_age when it returns. Raises
        InvalidCountError for n outside 1..1000 or above max_buffer, and what
        next raises."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1 or n > MAX_BATCH:
            raise InvalidCountError("invalid count: %r; ask for 1 to %d IDs" % (n, MAX_BATCH))
        if n > self._s.max_buffer:
            # Gathered over several refills, the first IDs would age past
            # max_age while the last arrive, be dropped and gathered again
            # without end (as the Go client, found by an attack).
            raise InvalidCountError("invalid count: %d is more than the buffer holds (max_buffer %d); "
                                    "ask for at most max_buffer IDs at once, or raise max_buffer" % (n, self._s.max_buffer))
        return self._take(n, timeout)

    # Taking IDs, waiting for refills.

    def _take(self, n: int, timeout: Optional[float]) -> List[int]:
        w = _Want(n)
        end = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while not self._step_locked(w):
                err: Optional[BaseException] = None
                if end is None:
                    self._cond.wait()
                else:
                    left = end - time.monotonic()
                    if left <= 0 or not self._cond.wait(left):
                        err = WaitTimeoutError("snowfence client: no IDs within %gs; the refill goes on in the background" % timeout)
                self._woken_locked(w, err)
            return w.dst

    def _step_locked(self, w: _Want) -> bool:
        """Takes what the buffer has for ``w``. Returns True when ``w`` has
        all its IDs; False when it must wait (then it counts as a waiter and
        a refill is running); raises ClosedError."""
        while True:
            now = self._now()
            dropped, w.deadline = self._buf.take_n(w.dst, w.n - len(w.dst), now, w.deadline)
            self._expired += dropped
            if len(self._buf) <= self._low and not self._refilling and not self._closed:
                self._start_refill_locked()
            if now >= w.deadline:
                # Held past max_age while waiting for a refill: drop them all
                # (IDs come out oldest first, so the rest are the newest) and
                # take again from what the refill brought.
                self._expired += len(w.dst)
                w.dst.clear()
                w.deadline = NEVER
                continue
            # now was read under the lock, just now: no ID in dst has reached
            # its deadline when the call returns.
            if len(w.dst) == w.n:
                return True
            if self._closed:
                self._abandon_locked(w)
                raise ClosedError()
            w.need = w.n - len(w.dst)
            if not self._refilling:
                self._start_refill_locked()
            w.ended = self._ended
            self._demand += w.need
            self._waiters += 1
            return False

    def _woken_locked(self, w: _Want, err: Optional[BaseException]) -> None:
        """Ends a wait of ``w``: raises ``err``, ClosedError, or the error of a
        refill that ended with nothing buffered, discarding what ``w`` took."""
        self._demand -= w.need
        self._waiters -= 1
        if err is not None:
            self._abandon_locked(w)
            raise err
        if self._closed:
            self._abandon_locked(w)
            raise ClosedError()
        if self._ended != w.ended and self._refill_err is not None and len(self._buf) == 0:
            self._abandon_locked(w)
            raise self._refill_err

    def _abandon_locked(self, w: _Want) -> None:
        self._discarded += len(w.dst)
        w.dst.clear()

    def _start_refill_locked(self) -> None:
        """Asks the refill thread for a refill."""
        self._refilling = True
        self._kicked = True
        self._buf.armed = False
        self._buf.rekick()
        self._kick.notify()

    def _broadcast_locked(self) -> None:
        """Wakes the callers waiting for IDs."""
        if self._waiters > 0 or self._closed:
            self._cond.notify_all()
        if self._async_waiters:
            wake, self._async_waiters = self._async_waiters, []
            for f in wake:
                try:
                    f()
                except RuntimeError:  # the waiter's event loop is closed: nobody to wake
                    pass

    def _handed_out_locked(self) -> int:
        return self._received - len(self._buf) - self._expired - self._discarded

    # Lifecycle.

    def close(self) -> None:
        """Stops the client: a request in flight is abandoned (its IDs never
        handed out), the IDs in the buffer are dropped, and every waiting and
        later call raises ClosedError. It waits for the two threads to end
        (at most about request_timeout, for a connection being opened).
        Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._discarded += self._buf.clear()
            self._buf.armed = False
            self._buf.rekick()
            self._broadcast_locked()
            self._kick.notify_all()
        self._stop.set()
        self._eps.probe.set()
        self._refiller.close()
        me = threading.current_thread()
        for t in self._threads:
            if t is not me:
                t.join(self._s.request_timeout + 1.0)

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stats(self) -> Stats:
        """Returns the client's counters."""
        with self._lock:
            buffered, handed = len(self._buf), self._handed_out_locked()
            received, expired, discarded = self._received, self._expired, self._discarded
        first, in_service = self._eps.snapshot()
        return Stats(buffered, handed, received, expired, discarded,
                     self._refiller.requests, self._refiller.failures, first, in_service)





def _make_next(now: Callable[[], float]) -> Callable[..., int]:
    """Returns Client.next reading the monotonic clock ``now``: the class's
    reads time.monotonic, a client with an injected clock gets its own. The
    clock is a variable of the closure, not an attribute of the client,
    because next is the whole cost of an ID from the buffer and that read is
    an eighth of it (about 16 ns of 200)."""

    def next(self: Client, timeout: Optional[float] = None) -> int:
        """Returns the next ID. From a warm buffer it takes the lock, reads
        the monotonic clock once and indexes a list: no allocation, no wait.
        The clock is read on every call because that is the only way to be
        sure no ID is handed out past max_age; it is compared with the
        current chunk's deadline (there is no timestamp per ID). When the
        buffer is empty it waits for the refill in flight (or starts one), at
        most ``timeout`` seconds if given (WaitTimeoutError). Raises
        ClosedError, or the error of the refill it waited for
        (UnavailableError, RejectedError)."""
        with self._lock:
            b = self._buf
            i = b.pos
            if i < b.end and now() < b.deadline:
                b.pos = i + 1
                if i >= b.kick:
                    self._start_refill_locked()
                return b.cur[i]
        return self._take(1, timeout)[0]

    return next


Client.next = _make_next(time.monotonic)  # type: ignore[method-assign]
