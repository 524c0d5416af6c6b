"""The Client against fake servers: the buffer, age, retries, errors, close
(the Python counterparts of client/client_test.go)."""

from __future__ import annotations

import queue
import threading
import unittest

from helpers import RecordingClock, Scripted, batch_body, sf


def new_client(test: unittest.TestCase, **fields) -> sf.Client:
    c = sf.Client(**fields)
    test.addCleanup(c.close)
    return c


def server(test: unittest.TestCase, *script, **kw) -> Scripted:
    s = Scripted(*script, **kw)
    test.addCleanup(s.close)
    return s


def in_thread(f):
    """Runs f on a thread; returns a queue that gets its result or error."""
    q: "queue.Queue" = queue.Queue()

    def run():
        try:
            q.put(f())
        except BaseException as e:
            q.put(e)

    threading.Thread(target=run, daemon=True).start()
    return q


class TestNext(unittest.TestCase):
    def test_increasing_each_once_across_refills(self):
        s = server(self)
        c = new_client(self, endpoints=[s.url])
        last = 0
        for i in range(3000):
            ids = c.next_n(1 + i % 1000) if i % 3 == 0 else [c.next()]
            for id in ids:
                self.assertGreater(id, last)
                last = id
        st = c.stats()
        self.assertGreaterEqual(st.requests, 2)
        self.assertEqual(st.failures, 0)
        self.assertEqual(st.received, st.handed_out + st.buffered + st.expired + st.discarded)
        for n in (0, 1001, -1, True, 1.0):
            with self.assertRaises(sf.InvalidCountError):
                c.next_n(n)

    def test_refill_ahead_at_low_water(self):
        # The refill_ahead scenario: the refill starts when next() leaves the
        # buffer at the low-water mark, not before.
        s = server(self)
        c = new_client(self, endpoints=[s.url], min_refill=100, max_buffer=1000, low_water=50, max_age=60)
        c.next()
        self.assertEqual(s.count(), 1)
        for _ in range(48):
            c.next()
        self.assertEqual(s.count(), 1, "51 IDs left: above the low-water mark")
        c.next()
        s.wait_requests(2)  # 50 left: the refill starts without another call

    def test_refill_started_when_taken_to_low_water_before_it_ended(self):
        # Callers that take a refill's IDs down to the low-water mark
        # between their arrival and the refill's end found it running and
        # started none: the next refill must start anyway, with no further
        # call. The hook runs in that window of the second refill, in the
        # refill thread, while this thread calls nothing.
        s = server(self)
        c = new_client(self, endpoints=[s.url], min_refill=100, max_buffer=1000, low_water=50, max_age=60)
        armed = []

        def take_to_low_water():
            if armed and armed.pop():
                while c.stats().buffered > 50:
                    c.next()

        c._refiller.after_push = take_to_low_water
        for _ in range(49):
            c.next()
        self.assertEqual(s.count(), 1)
        armed.append(True)
        c.next()  # 50 left: the second refill starts
        s.wait_requests(3, timeout=5.0)

    def test_concurrent_threads(self):
        s = server(self)
        c = new_client(self, endpoints=[s.url], min_refill=8, max_buffer=4096)
        got = [[] for _ in range(4)]

        def work(k):
            for _ in range(2500):
                got[k].append(c.next())

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        every = [i for g in got for i in g]
        self.assertEqual(len(set(every)), 10000, "an ID was handed out twice")
        for g in got:
            self.assertEqual(g, sorted(g), "a thread's IDs do not increase")
        st = c.stats()
        self.assertEqual(st.received, st.handed_out + st.buffered + st.expired + st.discarded)

    def test_ids_are_exact_ints(self):
        big = [9223372036854775806, 9223372036854775807]
        s = server(self, lambda r: r.send(200, batch_body(big[: r.count])))
        c = new_client(self, endpoints=[s.url], min_refill=2, max_buffer=2)
        self.assertEqual(c.next_n(2), big)


class TestAge(unittest.TestCase):
    def test_max_age_counts_from_the_send(self):
        # A buffered ID expires max_age after its request was sent, not after
        # the answer came, and is never handed out.
        clk = sf.FakeClock()
        release = threading.Event()

        def slow(r):
            release.wait(10)
            r.ok()

        s = server(self, slow, lambda r: r.ok())
        c = new_client(self, endpoints=[s.url], clock=clk, min_refill=8, low_water=1)
        got = in_thread(c.next)
        s.wait_requests(1)
        self.assertEqual(s.queries[0], "count=8")
        clk.advance(0.5)  # the answer takes 500 ms to come
        release.set()
        self.assertEqual(got.get(timeout=10), 1)
        clk.advance(0.4375)  # 937.5 ms after the send
        self.assertEqual(c.next(), 2)
        clk.advance(0.0625)  # 1 s after the send: IDs 3..8 expire
        self.assertEqual(c.next(), 9, "want the first of a new batch")
        st = c.stats()
        self.assertEqual(st.expired, 6)
        self.assertEqual(st.received, st.handed_out + st.buffered + st.expired)

    def test_next_n_hands_out_nothing_past_max_age(self):
        # next_n takes what the buffer holds, then waits for a refill; when
        # the refill is slow (a 503 with Retry-After) the IDs it took age
        # past max_age and must be dropped, not handed out.
        clk = sf.FakeClock()
        s = server(self, lambda r: r.ok(), lambda r: r.error(503, "2"), lambda r: r.ok())
        c = new_client(self, endpoints=[s.url], clock=clk, min_refill=4, max_buffer=4, low_water=1, max_age=1, max_attempts=3)
        self.assertEqual(c.next(), 1)  # 2..4 buffered, fetched at 0 s
        got = in_thread(lambda: c.next_n(4))
        clk.block_until_waiters(1)  # the refill sleeps for its Retry-After
        clk.advance(3)
        ids = got.get(timeout=10)
        self.assertNotIsInstance(ids, BaseException, ids)
        self.assertTrue(all(i >= 5 for i in ids), "next_n handed out IDs fetched 3 s before it returned: %s" % ids)
        st = c.stats()
        self.assertGreaterEqual(st.expired, 3)
        self.assertEqual(st.received, st.handed_out + st.expired + st.discarded + st.buffered)


class TestRetries(unittest.TestCase):
    def test_retry_after_429_same_endpoint(self):
        # A 429 is retried on the same endpoint no sooner than its
        # Retry-After, and does not take the endpoint out of service.
        clk = RecordingClock()
        e429 = lambda r: r.error(429, "2", "rate_limited")  # noqa: E731
        s = server(self, e429, e429, e429, lambda r: r.ok())
        c = new_client(self, endpoints=[s.url], clock=clk, failure_threshold=2)
        c._refiller.jitter = lambda d: 0.0
        got = in_thread(c.next)
        for k in range(3):
            s.wait_requests(k + 1)
            clk.block_until_waiters(1)
            clk.advance(2 - 1 / 1024)
            self.assertEqual(s.count(), k + 1, "a retry before Retry-After")
            clk.advance(1 / 1024)
        s.wait_requests(4)
        self.assertEqual(got.get(timeout=10), 1)
        self.assertEqual(clk.slept, [2.0, 2.0, 2.0], "each wait is the Retry-After")
        st = c.stats()
        self.assertEqual(st.endpoint, 0)
        self.assertEqual(st.failures, 3)

    def test_retry_after_503_and_http_date(self):
        clk = sf.FakeClock()
        c = new_client(self, endpoints=["http://127.0.0.1:1"], clock=clk)
        r = c._refiller
        self.assertEqual(r.retry_after("3"), 3.0)
        self.assertEqual(r.retry_after(""), 0.0)
        self.assertEqual(r.retry_after("-1"), 0.0)
        self.assertEqual(r.retry_after("1.5"), 0.0)
        self.assertEqual(r.retry_after("4294967296"), 0.0)
        import email.utils
        date = email.utils.formatdate((clk.wall_ms() + 5000) / 1000, usegmt=True)
        self.assertEqual(r.retry_after(date), 5.0)
        # The wait honours it: at least Retry-After, cut to max_retry_after,
        # plus up to a tenth.
        r.jitter = lambda d: d
        self.assertEqual(r.backoff(0, 3.0), 3.3)
        self.assertEqual(r.backoff(0, 60.0), 11.0)
        r.jitter = lambda d: 0.0
        self.assertEqual(r.backoff(0, 0.0), 0.025)
        self.assertEqual(r.backoff(40, 0.0), 1.0)

    def test_rejected_not_retried(self):
        s = server(self, lambda r: r.error(400, "", "invalid_query"))
        c = new_client(self, endpoints=[s.url])
        with self.assertRaises(sf.RejectedError) as cm:
            c.next()
        self.assertEqual(cm.exception.status, 400)
        self.assertEqual(cm.exception.code, "invalid_query")
        self.assertEqual(s.count(), 1)

    def test_unavailable_after_max_attempts(self):
        s = server(self, lambda r: r.error(503, "1", "fenced"))
        c = new_client(self, endpoints=[s.url], max_attempts=4, base_backoff=1e-6, max_backoff=1e-6,
                       max_retry_after=1e-6, probe_interval=3600)
        with self.assertRaises(sf.UnavailableError) as cm:
            c.next()
        e = cm.exception
        self.assertEqual(e.attempts, 4)
        self.assertIsInstance(e.last, sf.RefusedError)
        self.assertEqual((e.last.code, e.last.retry_after), ("fenced", 1.0))
        self.assertIs(e.__cause__, e.last)
        self.assertEqual(s.count(), 4)

    def test_bad_responses_yield_no_ids(self):
        bodies = [
            (b'{"ids":["3","2"]}', "application/json"),
            (b'{"ids":["1"]}', "application/json"),
            (b'{"ids":["1","2"],"x":1}', "application/json"),
            (b"not json", "application/json"),
            (b'{"ids":["1","2"]}', "text/plain"),
            (b'{"ids":["1","2"]}', ""),
        ]
        for body, ct in bodies:
            with self.subTest(body=body, content_type=ct):
                s = server(self, lambda r, body=body, ct=ct: r.send(200, body, content_type=ct))
                c = new_client(self, endpoints=[s.url], min_refill=2, max_attempts=2, base_backoff=1e-6, max_backoff=1e-6)
                with self.assertRaises(sf.UnavailableError) as cm:
                    c.next()
                self.assertIsInstance(cm.exception.last, sf.BadResponseError)
                self.assertEqual(c.stats().received, 0)
                c.close()

    def test_too_large_body_refused(self):
        s = server(self, lambda r: r.send(200, b" " * (70 << 10)))
        c = new_client(self, endpoints=[s.url], min_refill=2, max_attempts=1)
        with self.assertRaises(sf.UnavailableError) as cm:
            c.next()
        self.assertIsInstance(cm.exception.last, sf.BadResponseError)

    def test_request_timeout(self):
        # An answer slower than request_timeout is abandoned and retried; its
        # IDs are never handed out.
        release = threading.Event()
        self.addCleanup(release.set)

        def slow(r):
            ids = r.owner.take(r.count)
            release.wait(5)
            r.send(200, batch_body(ids))

        s = server(self, slow, lambda r: r.ok())
        c = new_client(self, endpoints=[s.url], request_timeout=0.2, min_refill=5, base_backoff=1e-3, max_backoff=1e-3)
        ids = c.next_n(5)
        self.assertEqual(ids, [6, 7, 8, 9, 10], "IDs of the late answer handed out")
        self.assertEqual(c.stats().failures, 1)


class TestRepeats(unittest.TestCase):
    def _replaying(self):
        return server(self, lambda r: r.send(200, batch_body(list(range(1, r.count + 1)))))

    def test_repeated_ids_refused_with_schedule(self):
        s = self._replaying()
        c = new_client(self, endpoints=[s.url], min_refill=4, max_buffer=4, low_water=1, max_attempts=1, schedule="v1")
        seen = set()
        for _ in range(8):
            try:
                id = c.next()
            except sf.UnavailableError as e:
                self.assertIsInstance(e.last, sf.BadResponseError)
                st = c.stats()
                self.assertEqual(st.handed_out, 4)
                self.assertGreater(st.failures, 0)
                return
            self.assertNotIn(id, seen, "ID handed out twice: the client took a repeated batch")
            seen.add(id)
        self.fail("no error from a server that repeats 1..4")

    def test_repeated_ids_trusted_without_schedule(self):
        s = self._replaying()
        c = new_client(self, endpoints=[s.url], min_refill=4, max_buffer=4, low_water=1, max_attempts=1)
        got = [c.next() for _ in range(8)]
        self.assertEqual((got[0], got[4]), (1, 1))


class TestClose(unittest.TestCase):
    def test_close_while_waiting(self):
        release = threading.Event()
        self.addCleanup(release.set)
        s = server(self, lambda r: release.wait(10))
        c = sf.Client(endpoints=[s.url])
        got = in_thread(c.next)
        s.wait_requests(1)
        c.close()
        self.assertIsInstance(got.get(timeout=10), sf.ClosedError)
        with self.assertRaises(sf.ClosedError):
            c.next_n(3)
        c.close()  # idempotent
        self.assertTrue(c.closed)
        for t in c._threads:
            self.assertFalse(t.is_alive(), "a thread of the client outlived close")

    def test_context_manager_and_discard(self):
        s = server(self)
        with sf.Client(endpoints=[s.url], min_refill=100) as c:
            c.next()
        st = c.stats()
        self.assertEqual(st.discarded, st.received - 1)
        self.assertEqual(st.buffered, 0)

    def test_wait_timeout(self):
        release = threading.Event()
        self.addCleanup(release.set)
        s = server(self, lambda r: release.wait(10))
        c = new_client(self, endpoints=[s.url])
        with self.assertRaises(sf.WaitTimeoutError):
            c.next(timeout=0.1)


class TestPlan(unittest.TestCase):
    def test_refill_size_follows_the_rate(self):
        clk = sf.FakeClock()
        c = new_client(self, endpoints=["http://127.0.0.1:1"], clock=clk, min_refill=10, max_buffer=1000, refill_period=0.125)
        steps = [
            (0, 0, 10),  # the first refill is min_refill
            (10, 0.001, 20),  # fast: doubles, no more
            (20, 0.001, 40),
            (400, 0.125, 80),  # 400 per period: doubles to 80
            (80, 0.125, 80),  # 80 per period: stays
            (1, 0.125, 40),  # slow: halves, no less
            (0, 1, 20),
            (0, 1, 10),
            (0, 1, 10),  # never under min_refill
            (100000, 0.001, 20),
        ]
        with c._lock:
            for k, (taken, elapsed, want) in enumerate(steps):
                c._received += taken  # as if received and handed out
                clk.advance(elapsed)
                got = c._refiller._plan_locked()
                self.assertEqual((got, c._low), (want, want // 2), "step %d" % k)
            c._demand = 500
            self.assertEqual(c._refiller._plan_locked(), 500, "waiting callers' demand")
            c._demand = 0


if __name__ == "__main__":
    unittest.main()
