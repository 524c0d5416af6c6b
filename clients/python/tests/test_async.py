"""AsyncClient: served from the buffer at once, the refill awaited without
blocking the event loop."""

from __future__ import annotations

import asyncio
import threading
import unittest

from helpers import Scripted, sf


class TestAsync(unittest.TestCase):
    def test_next_awaits_the_refill_without_blocking_the_loop(self):
        release = threading.Event()
        self.addCleanup(release.set)

        def slow(r):
            release.wait(10)
            r.ok()

        s = Scripted(slow, lambda r: r.ok())
        self.addCleanup(s.close)

        async def main():
            async with sf.AsyncClient(endpoints=[s.url], min_refill=8) as c:
                waiting = asyncio.ensure_future(c.next())
                # While next() waits for the refill, the loop runs other tasks.
                ticks = 0
                while s.count() < 1 or ticks < 5:
                    await asyncio.sleep(0.001)
                    ticks += 1
                self.assertFalse(waiting.done())
                release.set()
                first = await asyncio.wait_for(waiting, 10)
                rest = [await c.next() for _ in range(20)] + await c.next_n(5)
                ids = [first] + rest
                self.assertEqual(ids, sorted(set(ids)))
                self.assertEqual(first, 1)
                with self.assertRaises(sf.InvalidCountError):
                    await c.next_n(0)
                return c

        c = asyncio.run(main())
        with self.assertRaises(sf.ClosedError):
            c.client.next()

    def test_many_tasks_each_id_once(self):
        s = Scripted()
        self.addCleanup(s.close)

        async def main():
            c = sf.AsyncClient(endpoints=[s.url], min_refill=8, max_buffer=64)
            try:
                async def worker():
                    return [await c.next() for _ in range(300)]

                got = await asyncio.gather(*(worker() for _ in range(8)))
            finally:
                await c.aclose()
            every = [i for g in got for i in g]
            self.assertEqual(len(set(every)), len(every), "an ID went to two tasks")
            for g in got:
                self.assertEqual(g, sorted(g))

        asyncio.run(main())

    def test_timeout_and_cancel_give_back_the_wait(self):
        release = threading.Event()
        self.addCleanup(release.set)
        s = Scripted(lambda r: release.wait(10))
        self.addCleanup(s.close)

        async def main():
            c = sf.AsyncClient(endpoints=[s.url])
            try:
                with self.assertRaises(sf.WaitTimeoutError):
                    await c.next(timeout=0.05)
                t = asyncio.ensure_future(c.next())
                await asyncio.sleep(0.01)
                t.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await t
                with c.client._lock:
                    self.assertEqual((c.client._waiters, c.client._demand, c.client._async_waiters), (0, 0, []))
            finally:
                await c.aclose()

        asyncio.run(main())

    def test_close_wakes_a_waiting_task(self):
        release = threading.Event()
        self.addCleanup(release.set)
        s = Scripted(lambda r: release.wait(10))
        self.addCleanup(s.close)

        async def main():
            c = sf.AsyncClient(endpoints=[s.url])
            t = asyncio.ensure_future(c.next())
            while s.count() < 1:
                await asyncio.sleep(0.001)
            await c.aclose()
            with self.assertRaises(sf.ClosedError):
                await asyncio.wait_for(t, 10)

        asyncio.run(main())


if __name__ == "__main__":
    unittest.main()
