"""The health of the endpoints: which are in service, and the probes that
put one back (client/endpoints.go)."""

from __future__ import annotations

import logging
import threading
from typing import Dict, List, Tuple


class _Endpoint:
    __slots__ = ("base", "mint", "health", "in_service", "fails", "healthy")

    def __init__(self, base: str, mint: str, health: str) -> None:
        self.base, self.mint, self.health = base, mint, health
        self.in_service = True
        self.fails = 0
        self.healthy = 0


class Endpoints:
    """An endpoint is in service until ``failure_threshold`` consecutive
    requests to it fail; it is then probed every ``probe_interval`` and is
    back in service after ``recovery_probes`` consecutive healthy probes.
    Requests go to the first endpoint in service, so the client returns to a
    better endpoint only once it has proved healthy. Safe for use from
    several threads."""

    def __init__(self, bases: List[str], mints: List[str], healths: List[str], threshold: int, recovery: int, log: logging.Logger) -> None:
        self._threshold, self._recovery, self._log = threshold, recovery, log
        self._lock = threading.Lock()
        self._list = [_Endpoint(b, m, h) for b, m, h in zip(bases, mints, healths)]
        self._next = 0  # the endpoint tried when none is in service: they take turns
        self.probe = threading.Event()
        """Set when an endpoint is taken out: wakes the prober."""

    def _first(self) -> int:
        for i, e in enumerate(self._list):
            if e.in_service:
                return i
        return -1

    def pick(self) -> Tuple[int, str, str]:
        """The endpoint the next request goes to (index, base, mint URL):
        the first in service, or, when none is, each in turn."""
        with self._lock:
            i = self._first()
            if i < 0:
                i = self._next
                self._next = (self._next + 1) % len(self._list)
            e = self._list[i]
            return i, e.base, e.mint

    def succeeded(self, i: int) -> None:
        """Records a request to endpoint i that brought IDs. An endpoint out
        of service that answers while none is in service is back in service."""
        with self._lock:
            e = self._list[i]
            e.fails = 0
            if not e.in_service and self._first() < 0:
                e.in_service, e.healthy = True, 0
                self._log.info("endpoint back in service: it answered while no endpoint was in service: %s", e.base)

    def failed(self, i: int, err: BaseException) -> bool:
        """Records a failed request to endpoint i. Returns whether the failure
        took it out of service while another is still in service, so the
        next request can go there at once."""
        with self._lock:
            e = self._list[i]
            e.fails += 1
            if not e.in_service or e.fails < self._threshold:
                return False
            e.in_service, e.healthy = False, 0
            nxt = self._first()
            if nxt >= 0:
                self._log.warning("endpoint %s out of service after %d failures (%s); failing over to %s", e.base, e.fails, err, self._list[nxt].base)
            else:
                self._log.warning("endpoint %s out of service after %d failures (%s); no endpoint is in service", e.base, e.fails, err)
            self.probe.set()
            return nxt >= 0

    def out(self) -> Dict[int, str]:
        """The health URLs of the endpoints out of service, by index."""
        with self._lock:
            return {i: e.health for i, e in enumerate(self._list) if not e.in_service}

    def probed(self, i: int, healthy: bool) -> None:
        """Records a probe of endpoint i."""
        with self._lock:
            e = self._list[i]
            if e.in_service:
                return
            if not healthy:
                e.healthy = 0
                return
            e.healthy += 1
            if e.healthy >= self._recovery:
                e.in_service, e.fails, e.healthy = True, 0, 0
                self._log.info("endpoint %s back in service after %d healthy probes", e.base, self._recovery)

    def snapshot(self) -> Tuple[int, List[bool]]:
        """The first endpoint in service (or -1) and which are."""
        with self._lock:
            return self._first(), [e.in_service for e in self._list]
