"""The refill and the probes: the Client's two threads, their requests, the
retries and the backoff (client/refill.go, client/endpoints.go)."""

from __future__ import annotations

import email.utils
import json
import random

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Tuple, TypeVar

from ._http import Connections, Target, TooLarge
from ._parse import parse_batch
from ._repeat import Marks
from .config import MAX_BATCH
from .errors import (BadResponseError, ClosedError, NetworkError, ServerError, SnowfenceError, UnavailableError,
                     server_error)

if TYPE_CHECKING:
    from .client import Client

MAX_BATCH_BODY = 64 << 10
"""The largest 200 body read: 1,000 IDs of 19 digits in quotes take 22,010
bytes; the rest is room for white space."""
MAX_ERROR_BODY = 4 << 10
"""How much of an error body is read."""

T = TypeVar("T")


def random_jitter(d: float) -> float:
    """A random duration in [0, d]."""
    return random.uniform(0.0, d) if d > 0 else 0.0


class Refiller:
    """The refill thread and the prober of one Client, with their
    connections (one kept alive per host and thread). The refill runs one
    refill at a time as next() asks; the prober probes the endpoints out of
    service."""

    def __init__(self, c: "Client") -> None:
        self._c = c
        s = c._s
        self._s = s
        self._conns = Connections(s.tls)
        self._probe_conns = Connections(s.tls)
        self._mints = [Target(u) for u in s.mint_urls]
        self._mint_paths = [t.path for t in self._mints]  # ".../v1/ids?count="
        self._health: Dict[str, Target] = {}
        self._marks = Marks(s.schedule) if s.schedule is not None else None
        self.jitter: Callable[[float], float] = random_jitter
        """Returns a random duration in [0, d]; tests replace it."""
        self.after_push: Optional[Callable[[], None]] = None
        """Runs (if set, by tests) after each response's IDs are in the
        buffer and the lock is released."""
        self.requests = 0
        """Mint requests that brought IDs."""
        self.failures = 0
        """Mint requests that did not."""

    def close(self) -> None:
        """Abandons the requests in flight: their sockets are shut down."""
        self._conns.close()
        self._probe_conns.close()

    # The refill thread.

    def run_refills(self) -> None:
        """Runs the refills, one at a time, as next() asks for them."""
        c = self._c
        while True:
            with c._lock:
                while not c._kicked and not c._closed:
                    c._kick.wait()
                if c._closed:
                    return
                c._kicked = False
            err: Optional[BaseException] = None
            try:
                self._refill()
            except SnowfenceError as e:
                err = e
            except Exception as e:  # a bug: report it to the callers rather than hang them
                err = e
                c._log.exception("snowfence client: the refill failed unexpectedly")
            with c._lock:
                c._refilling = False
                c._ended += 1
                c._refill_err = err
                c._buf.armed = not c._closed
                c._buf.rekick()
                if err is not None and not c._closed:
                    c._log.warning("snowfence client: refill failed: %s", err)
                c._broadcast_locked()
                # Callers that took this refill's IDs down to the low-water
                # mark before it ended here found it running and started
                # none: start the next for them, or the buffer runs dry
                # before the next call asks.
                if err is None and not c._closed and len(c._buf) <= c._low:
                    c._start_refill_locked()

    def _refill(self) -> None:
        """Fetches one refill's IDs, a request of at most 1,000 at a time,
        adding each response's IDs to the buffer as it arrives."""
        c = self._c
        with c._lock:
            size = self._plan_locked()
        max_age = self._s.max_age
        got = 0
        while got < size:
            n = min(size - got, MAX_BATCH)
            ids, sent = self._fetch(n)
            with c._lock:
                if c._closed:
                    c._discarded += len(ids)
                    raise ClosedError()
                # Age counts from the moment the request was sent: the server
                # minted the IDs after it.
                c._buf.push(ids, sent + max_age)
                c._received += len(ids)
                c._broadcast_locked()
            if self.after_push is not None:
                self.after_push()
            got += n

    def _plan_locked(self) -> int:
        """Sizes the next refill from the rate at which IDs were handed out
        since the last one: about rate × refill_period, at most twice and at
        least half the last size, at least min_refill and what waiting
        callers need, and no more than the buffer has room for. Sets the
        low-water mark to half the size when Config.low_water is not set."""
        c, s = self._c, self._s
        now = c._now()
        c._expired += c._buf.drop_expired(now)
        size = c._size
        handed = c._handed_out_locked()
        if c._planned:
            elapsed = now - c._plan_at
            if elapsed > 0:
                rate = (handed - c._handed_at_plan) / elapsed
                want = int(min(rate * s.refill_period, float(s.max_buffer)))
                size = min(max(want, size // 2), size * 2)
        c._size = min(max(size, s.min_refill), s.max_buffer)
        c._planned, c._plan_at, c._handed_at_plan = True, now, handed
        if s.low_water == 0:
            c._low = c._size // 2
            c._buf.low = c._low
            c._buf.rekick()
        return min(max(c._size, c._demand), s.max_buffer - len(c._buf))

    def _fetch(self, n: int) -> Tuple[List[int], float]:
        """Gets ``n`` IDs, retrying and failing over (see _retry). Returns the
        IDs and the monotonic clock's reading when their request was sent."""
        return self._retry(lambda i, base: self._attempt(i, base, n))

    def _retry(self, attempt: Callable[[int, str], T]) -> T:
        """Runs ``attempt`` against the endpoints: up to max_attempts
        requests, with a jittered exponential wait after each failure (at
        least the Retry-After of a 503 or 429, up to max_retry_after), and
        none after a failure that took an endpoint out of service when
        another is in service. The wait's exponent restarts the first time
        the fetch fails over from each endpoint: a failure says how the
        endpoint it came from is doing, not the next one, so a region with
        several dead endpoints does not leave the last of them (and the
        healthy region behind it) to be tried only after waits grown to
        seconds. Otherwise it grows, so a fleet that is down entirely, or
        flapping in and out of service, is still backed off from. A 4xx
        other than 429 is raised at once. Raises ClosedError once the client
        closes, UnavailableError after max_attempts."""
        c, s = self._c, self._s
        last: Optional[BaseException] = None
        step = 0  # failures since the exponent last restarted
        left: Optional[List[bool]] = None  # endpoints this fetch has failed over from
        for a in range(s.max_attempts):
            i, base, _ = c._eps.pick()
            try:
                result = attempt(i, base)
            except Exception as e:
                err: BaseException = e
                if not isinstance(e, SnowfenceError):
                    err = NetworkError("snowfence client: %s: %s: %s" % (base, type(e).__name__, e))
                    err.__cause__ = e
            else:
                self.requests += 1
                c._eps.succeeded(i)
                return result
            if c._stop.is_set():
                raise ClosedError()
            self.failures += 1
            last = err
            is_server = isinstance(err, ServerError)
            if is_server and not err.retryable:  # type: ignore[union-attr]
                raise err
            # Over quota is not ill health: the endpoint stays in service and
            # the client waits as it was told.
            failover = False
            if not is_server or err.status != 429:  # type: ignore[union-attr]
                failover = c._eps.failed(i, err)
            if failover:
                # Not again from the same endpoint: one that answers /healthz
                # but fails every mint is put back by the prober and taken out
                # again, and must not keep a fleet that issues nothing at
                # base_backoff.
                if left is None:
                    left = [False] * len(s.endpoints)
                if not left[i]:
                    step = 0
                left[i] = True
                continue
            if a == s.max_attempts - 1:
                continue
            retry_after = err.retry_after if is_server else 0.0  # type: ignore[union-attr]
            if not c._clock.sleep(self.backoff(step, retry_after), c._stop):
                raise ClosedError()
            step += 1
        raise UnavailableError(s.max_attempts, last)

    def backoff(self, a: int, retry_after: float) -> float:
        """The wait after the a-th failure (from 0) since the exponent last
        restarted: between half and all of base_backoff·2^a, at most
        max_backoff; and at least retry_after (cut to max_retry_after) plus up
        to a tenth more, so that callers told the same Retry-After do not all
        come back in the same instant."""
        s = self._s
        d = s.max_backoff
        if a < 30:
            d = min(s.base_backoff * (1 << a), s.max_backoff)
        w = d / 2 + self.jitter(d / 2)
        if retry_after > 0:
            r = min(retry_after, s.max_retry_after)
            w = max(w, r + self.jitter(r / 10))
        return w

    def _attempt(self, i: int, base: str, n: int) -> Tuple[List[int], float]:
        """Sends one request for ``n`` IDs. Only a complete 200 whose body
        parses as exactly n strictly increasing IDs yields IDs; a body cut
        short (a dropped connection, a timeout) yields none, whatever part of
        it came."""
        c = self._c
        sent = c._now()
        try:
            status, headers, body = self._conns.exchange(
                self._mints[i], "POST", self._mint_paths[i] + str(n), self._s.request_timeout, MAX_BATCH_BODY, MAX_ERROR_BODY)
        except TooLarge as e:
            raise BadResponseError(base, "a body of %s bytes, more than a batch takes" % e.args[0]) from None
        if status != 200:
            raise self._server_error(base, status, headers.get("retry-after", ""), body)
        ct = headers.get("content-type", "")
        if ct.split(";", 1)[0].strip().lower() != "application/json":
            raise BadResponseError(base, "Content-Type %r is not application/json" % ct)
        ids = parse_batch(body, n)
        if isinstance(ids, str):
            raise BadResponseError(base, ids)
        if self._marks is not None:
            why = self._marks.check(ids)
            if why:
                raise BadResponseError(base, why)
        return ids, sent

    def _server_error(self, base: str, status: int, retry_after: str, body: bytes) -> ServerError:
        """Reads a non-200 answer."""
        code = message = reason = ""
        try:
            v = json.loads(body)
            e = v.get("error") if isinstance(v, dict) else None
            if isinstance(e, dict):
                f = [e.get(k, "") for k in ("code", "message", "reason")]
                if all(isinstance(x, str) for x in f):
                    code, message, reason = f
        except ValueError:
            pass
        return server_error(base, status, code, message, reason, self.retry_after(retry_after))

    def retry_after(self, h: str) -> float:
        """Reads a Retry-After header: whole seconds, or an HTTP date (measured
        against the clock's wall clock). Anything else is zero."""
        if not h:
            return 0.0
        if h.isascii() and h.isdigit():
            v = int(h)
            return float(v) if v < 1 << 32 else 0.0
        try:
            t = email.utils.parsedate_to_datetime(h)
        except (TypeError, ValueError, IndexError):
            return 0.0
        if t is None or t.tzinfo is None:
            return 0.0
        d = int(t.timestamp() * 1000) - self._c._clock.wall_ms()
        return d / 1000.0 if d > 0 else 0.0

    # The prober.

    def run_probes(self) -> None:
        """Probes the endpoints out of service every probe_interval, until
        none is out; then waits for one to be taken out."""
        c, s = self._c, self._s
        eps = c._eps
        while True:
            eps.probe.wait()
            if c._stop.is_set():
                return
            eps.probe.clear()
            out = eps.out()
            while out:
                if not c._clock.sleep(s.probe_interval, c._stop):
                    return
                for i, url in out.items():
                    eps.probed(i, self._probe(url))
                out = eps.out()

    def _probe(self, url: str) -> bool:
        """Whether GET url answers 200."""
        t = self._health.get(url)
        if t is None:
            t = self._health[url] = Target(url)
        try:
            status, _, _ = self._probe_conns.exchange(t, "GET", t.path, self._s.request_timeout, 64 << 10, 64 << 10)
        except (SnowfenceError, TooLarge):
            return False
        return status == 200


