"""Failover, recovery and the backoff across endpoints (the Python
counterparts of client/failover_test.go)."""

from __future__ import annotations

import threading
import unittest

from helpers import Scripted, SleepLog, dead_url, sf


class Region:
    """A fake server that can be taken down (mint 503, healthz 503) and
    brought back; it logs what it answered, in order."""

    def __init__(self, test: unittest.TestCase, counter: Scripted) -> None:
        self.up = True
        self.log = []  # (is_probe, ok)
        self.lock = threading.Lock()
        self.counter = counter

        def mint(r):
            with self.lock:
                up = self.up
                self.log.append((False, up))
            if up:
                r.send(200, _batch(counter.take(r.count)))
            else:
                r.error(503, "1", "fenced")

        self.s = Scripted(mint)
        test.addCleanup(self.s.close)
        orig = self.s._serve

        def serve(h):
            if h.path.startswith("/healthz"):
                with self.lock:
                    self.log.append((True, self.up))
                    self.s.health = 200 if self.up else 503
            orig(h)

        self.s._serve = serve  # type: ignore[assignment]

    def set(self, up: bool) -> None:
        with self.lock:
            self.up = up

    def events(self):
        with self.lock:
            return list(self.log)


def _batch(ids):
    from helpers import batch_body
    return batch_body(ids)


class TestFailover(unittest.TestCase):
    def test_failover_and_return_after_recovery_probes(self):
        # The primary fails; the client moves to the backup after
        # failure_threshold failures, and returns to the primary only after
        # recovery_probes consecutive healthy probes.
        counter = Scripted()
        self.addCleanup(counter.close)
        primary, backup = Region(self, counter), Region(self, counter)
        c = sf.Client(endpoints=[primary.s.url, backup.s.url], min_refill=4, max_buffer=8, base_backoff=1e-6,
                      max_backoff=1e-6, max_retry_after=1e-6, probe_interval=0.001)
        self.addCleanup(c.close)
        seen = set()

        def take():
            for id in c.next_n(4):
                self.assertNotIn(id, seen, "ID handed out twice")
                seen.add(id)

        take()
        primary.set(False)
        for _ in range(10000):
            if c.stats().endpoint == 1:
                break
            take()
        self.assertEqual(c.stats().endpoint, 1)
        failed = sum(1 for probe, ok in primary.events() if not probe and not ok)
        self.assertEqual(failed, 3, "the primary was taken out after %d failed requests, want 3" % failed)
        self.assertTrue(backup.events(), "no request went to the backup")
        primary.set(True)
        for _ in range(100000):
            if any(not p and ok for p, ok in primary.events()[1:]):
                break
            take()
        ev = primary.events()
        first = -1
        for i, (probe, ok) in enumerate(ev):
            if i > 0 and not probe and ok and not ev[i - 1][1]:
                self.fail("a mint went to the primary right after a failure: %s" % ev)
            if not probe and ok and i > 3:
                first = i
                break
        self.assertGreaterEqual(first, 0, "no mint went back to the primary: %s" % ev)
        self.assertEqual(ev[first - 3:first], [(True, True)] * 3,
                         "the client returned to the primary without 3 healthy probes first: %s" % ev[:first + 1])

    def test_dead_port_first(self):
        s = Scripted()
        self.addCleanup(s.close)
        c = sf.Client(endpoints=[dead_url(), s.url], base_backoff=0.01, max_backoff=0.05)
        self.addCleanup(c.close)
        ids = [c.next() for _ in range(100)]
        self.assertEqual(ids, sorted(set(ids)))
        self.assertGreaterEqual(s.count(), 1)


class TestBackoff(unittest.TestCase):
    CFG = dict(base_backoff=0.1, max_backoff=2.0, probe_interval=3600, max_attempts=16)

    def test_backoff_restarts_on_each_endpoint_failed_over_from(self):
        # With three endpoints dead, the waits start small again on each
        # endpoint failed over to: the live fourth is reached after
        # 3 × (100 + 200) ms, not after waits grown to max_backoff.
        live = Scripted()
        self.addCleanup(live.close)
        clk = SleepLog()
        c = sf.Client(endpoints=[dead_url(), dead_url(), dead_url(), live.url], clock=clk, **self.CFG)
        self.addCleanup(c.close)
        c._refiller.jitter = lambda d: d
        c.next()
        self.assertEqual(clk.waits, [0.1, 0.2] * 3)
        self.assertEqual(c.stats().endpoint, 3)

    def test_backoff_grows_when_all_are_down(self):
        clk = SleepLog()
        c = sf.Client(endpoints=[dead_url(), dead_url(), dead_url()], clock=clk, **self.CFG)
        self.addCleanup(c.close)
        c._refiller.jitter = lambda d: d
        with self.assertRaises(sf.UnavailableError) as cm:
            c.next()
        self.assertIsInstance(cm.exception.last, sf.NetworkError)
        # Two waits on each endpoint before it is taken out; the last one's
        # third failure finds none in service, and from there the waits
        # double up to max_backoff. No wait follows the last attempt.
        self.assertEqual(clk.waits, [0.1, 0.2, 0.1, 0.2, 0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0, 2.0, 2.0])

    def test_flapping_fleet_backs_off(self):
        # Endpoints that pass their probes but fail every request are put back
        # during each wait and taken out again: only the first failover from
        # each endpoint restarts the exponent, so the waits still double.
        clk = SleepLog()
        c = sf.Client(endpoints=[dead_url(), dead_url()], clock=clk, failure_threshold=1, recovery_probes=1,
                      probe_interval=3600, base_backoff=0.1, max_backoff=2.0, max_attempts=12)
        self.addCleanup(c.close)
        c._refiller.jitter = lambda d: d
        clk.during = lambda: [c._eps.probed(i, True) for i in range(2)]
        with self.assertRaises(sf.UnavailableError):
            c.next()
        self.assertEqual(clk.waits, [0.1, 0.2, 0.4, 0.8, 1.6])

    def test_429_is_not_a_failure_of_the_endpoint(self):
        # The rate_limited_429 scenario: with failure_threshold 1, two 429s
        # still leave the first endpoint in service.
        s = Scripted(lambda r: r.error(429, "1", "rate_limited"), lambda r: r.error(429, "1", "rate_limited"), lambda r: r.ok())
        other = Scripted()
        self.addCleanup(s.close)
        self.addCleanup(other.close)
        clk = SleepLog()
        c = sf.Client(endpoints=[s.url, other.url], clock=clk, failure_threshold=1, base_backoff=0.01, max_backoff=0.05)
        self.addCleanup(c.close)
        c._refiller.jitter = lambda d: 0.0
        self.assertEqual(c.next(), 1)
        self.assertEqual((s.count(), other.count()), (3, 0))
        self.assertEqual(clk.waits, [1.0, 1.0], "the waits are the Retry-After")


if __name__ == "__main__":
    unittest.main()
