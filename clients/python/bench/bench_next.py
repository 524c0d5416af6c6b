"""Benchmark of Client.next() from a full buffer: nanoseconds per ID, the
median of several repeats (timeit). No server: the buffer is filled by hand
before each repeat, through the client's private buffer, with a max_age long
enough that nothing expires and a low-water mark no repeat reaches, so no
refill runs while it is timed.

    PYTHONPATH=clients/python/src python3 clients/python/bench/bench_next.py [--repeats 9] [--number 50000]

With --url it also measures the end-to-end rate against a server: next() in a
loop on one thread for --seconds, as the conformance runner's "run" does.
"""

from __future__ import annotations

import argparse
import statistics
import time
import timeit

import snowfence_client as sf


def bench_next(repeats: int, number: int) -> None:
    c = sf.Client(endpoints=["http://127.0.0.1:9"], max_age=3600, refill_period=1, min_refill=8,
                  max_buffer=number + 1024, low_water=1)
    try:
        per_id = []
        base = 1 << 60
        for r in range(repeats):
            with c._lock:
                c._buf.push(list(range(base, base + number + 2)), c._now() + 3600)
            base += number + 2
            t = timeit.Timer("nxt()", globals={"nxt": c.next})
            per_id.append(t.timeit(number=number) / number * 1e9)
            with c._lock:
                c._buf.clear()
        print("next() from a full buffer: median %.0f ns/ID over %d repeats of %d (min %.0f, max %.0f)" % (
            statistics.median(per_id), repeats, number, min(per_id), max(per_id)))
    finally:
        c.close()


def bench_run(url: str, seconds: float) -> None:
    with sf.Client(endpoints=[url]) as c:
        nxt = c.next
        prev = nxt()
        count, bad = 1, 0
        t0 = time.monotonic()
        end = t0 + seconds
        while time.monotonic() < end:
            for _ in range(1024):
                i = nxt()
                if i <= prev:
                    bad += 1
                prev = i
            count += 1024
        el = time.monotonic() - t0
    print("end to end against %s: %.0f IDs/s over %.1f s (%d not increasing)" % (url, count / el, el, bad))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--number", type=int, default=50000)
    p.add_argument("--url", help="a server to measure the end-to-end rate against")
    p.add_argument("--seconds", type=float, default=5.0)
    a = p.parse_args()
    bench_next(a.repeats, a.number)
    if a.url:
        bench_run(a.url, a.seconds)


if __name__ == "__main__":
    main()
