// The client against scripted fake servers (ports of the Go client's
// client_test.go and repeat_test.go, and the JavaScript specifics: waiters
// served in order, refill ahead).
import { test } from "node:test";
import assert from "node:assert/strict";
import type * as http from "node:http";
import {
  BadResponseError,
  Client,
  ClosedError,
  InvalidCountError,
  RateLimitedError,
  RefusedError,
  RejectedError,
  TransportError,
  UnavailableError,
} from "../src/index.js";
import { checkConfig } from "../src/config.js";
import { Transport } from "../src/transport.js";
import { batchBody, countOf, FakeClock, Scripted, setJitter, writeBatch, writeError } from "./helpers.js";

/** Rejects with the error a promise rejects with, failing when it resolves. */
async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  assert.fail("resolved; want an error");
}

function accounted(c: Client): void {
  const st = c.stats();
  assert.equal(st.received, st.handedOut + st.expired + st.discarded + st.buffered, `stats ${JSON.stringify(st)}: received ≠ handed out + expired + discarded + buffered`);
}

test("IDs come out increasing, each once, across many refills, from next and nextN", async () => {
  const s = await new Scripted().start();
  const c = new Client({ endpoints: [s.url] });
  try {
    let last = 0n;
    for (let i = 0; i < 5000; i++) {
      const ids = i % 3 === 0 ? await c.nextN(1 + (i % 1000)) : [await c.next()];
      for (const id of ids) {
        assert.ok(id > last, `ID ${id} after ${last}: not increasing`);
        last = id;
      }
    }
    const st = c.stats();
    assert.ok(st.requests >= 2 && st.failures === 0, JSON.stringify(st));
    accounted(c);
    for (const n of [0, 1001, 1.5, NaN]) assert.ok((await rejection(c.nextN(n))) instanceof InvalidCountError, `nextN(${n})`);
    // tryNext serves from memory, and undefined on an empty buffer.
    const before = c.stats().handedOut;
    let taken = 0;
    while (c.tryNext() !== undefined) taken++;
    assert.equal(c.stats().handedOut, before + taken);
    assert.equal(c.stats().buffered, 0);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("a buffered ID expires maxAgeMs after its request was sent, and is never handed out", async () => {
  const clk = new FakeClock();
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  const s = await new Scripted(
    (q, r) => void released.then(() => s.ok(q, r)),
    (q, r) => s.ok(q, r),
  ).start();
  const c = new Client({ endpoints: [s.url], clock: clk, minRefill: 8, lowWater: 1 });
  try {
    const first = c.next();
    await s.requests(1);
    assert.equal(s.queries[0], "count=8");
    clk.advance(600); // the answer takes 600 ms to come
    release();
    assert.equal(await first, 1n);
    clk.advance(399); // 999 ms after the send
    assert.equal(await c.next(), 2n);
    clk.advance(1); // 1 s after the send: IDs 3..8 expire
    assert.equal(await c.next(), 9n, "the first of a new batch");
    assert.equal(c.stats().expired, 6);
    accounted(c);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("a 429 is retried on the same endpoint no sooner than its Retry-After, and does not take it out of service", async () => {
  const clk = new FakeClock();
  const limited = (_q: http.IncomingMessage, r: http.ServerResponse): void => writeError(r, 429, "2", "rate_limited");
  const s = await new Scripted(limited, limited, limited, (q, r) => s.ok(q, r)).start();
  const c = new Client({ endpoints: [s.url], clock: clk, failureThreshold: 2 });
  setJitter(c, () => 0);
  try {
    const got = c.next();
    for (let k = 1; k <= 3; k++) {
      await s.requests(k);
      await clk.blockUntilWaiters(1);
      clk.advance(1999);
      assert.equal(clk.waiters(), 1, "the client stopped waiting 1 ms before Retry-After");
      clk.advance(1);
    }
    assert.equal(await got, 1n);
    const st = c.stats();
    assert.equal(st.endpoint, 0);
    assert.equal(st.failures, 3);
    assert.deepEqual(st.inService, [true]);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("a 503's Retry-After is honoured, cut to maxRetryAfterMs", async () => {
  const clk = new FakeClock();
  const s = await new Scripted((_q, r) => writeError(r, 503, "60", "fenced"), (q, r) => s.ok(q, r)).start();
  const c = new Client({ endpoints: [s.url], clock: clk, maxRetryAfterMs: 5000 });
  setJitter(c, () => 0);
  try {
    const got = c.next();
    await s.requests(1);
    await clk.blockUntilWaiters(1);
    clk.advance(4999);
    assert.equal(clk.waiters(), 1, "waited less than maxRetryAfterMs");
    clk.advance(1);
    assert.equal(await got, 1n);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("a 4xx other than 429 is returned at once, not retried", async () => {
  const s = await new Scripted((_q, r) => writeError(r, 400, "", "invalid_query")).start();
  const c = new Client({ endpoints: [s.url] });
  try {
    const err = await rejection(c.next());
    assert.ok(err instanceof RejectedError, String(err));
    assert.equal(err.code, "invalid_query");
    assert.equal(err.status, 400);
    assert.equal(s.served, 1);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("a refill that keeps failing gives up after maxAttempts, with the last failure", async () => {
  const s = await new Scripted((_q, r) => writeError(r, 503, "1", "fenced")).start();
  const c = new Client({ endpoints: [s.url], maxAttempts: 4, baseBackoffMs: 1, maxBackoffMs: 1, maxRetryAfterMs: 1, probeIntervalMs: 3_600_000 });
  try {
    const err = await rejection(c.next());
    assert.ok(err instanceof UnavailableError, String(err));
    assert.equal(err.attempts, 4);
    assert.ok(err.last instanceof RefusedError);
    assert.equal(err.last.code, "fenced");
    assert.equal(err.last.retryAfterMs, 1000);
    assert.equal(s.served, 4);
    // The next call starts a new refill.
    assert.ok((await rejection(c.next())) instanceof UnavailableError);
    assert.equal(s.served, 8);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("a 200 that is not the batch asked for yields no IDs", async () => {
  const bodies: Array<[string, string]> = [
    [`{"ids":["3","2"]}`, "application/json"],
    [`{"ids":["1"]}`, "application/json"],
    [`{"ids":["1","2"],"x":1}`, "application/json"],
    [`not json`, "application/json"],
    [`{"ids":["1","2"]}`, "text/plain"],
  ];
  for (const [body, type] of bodies) {
    const s = await new Scripted((_q, r) => {
      r.writeHead(200, { "Content-Type": type });
      r.end(body);
    }).start();
    const c = new Client({ endpoints: [s.url], minRefill: 2, maxAttempts: 2, baseBackoffMs: 1, maxBackoffMs: 1 });
    try {
      const err = await rejection(c.next());
      assert.ok(err instanceof UnavailableError && err.last instanceof BadResponseError, `${body}: ${String(err)}`);
      assert.equal(c.stats().received, 0);
    } finally {
      await c.close();
      await s.stop();
    }
  }
});

test("an answer cut short yields no IDs, and the retry's do", { timeout: 20_000 }, async () => {
  const next = { v: 0n };
  const s = await new Scripted(
    (q, r) => {
      const ids = Array.from({ length: countOf(q) }, () => ++next.v);
      const body = batchBody(ids);
      r.writeHead(200, { "Content-Type": "application/json", "Content-Length": String(body.length) });
      r.write(body.slice(0, body.length / 2), () => r.socket?.destroy());
    },
    (q, r) => writeBatch(r, next, countOf(q)),
  ).start();
  // A request timeout longer than the test's: the cut is seen as such, not as a timeout.
  const c = new Client({ endpoints: [s.url], minRefill: 8, baseBackoffMs: 1, maxBackoffMs: 1, requestTimeoutMs: 60_000 });
  try {
    assert.equal(await c.next(), 9n, "the first ID of the second answer");
    assert.equal(s.served, 2);
    assert.equal(c.stats().failures, 1);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("an answer slower than requestTimeoutMs is abandoned and retried; its IDs are never handed out", async () => {
  const next = { v: 0n };
  const s = await new Scripted(
    (q, r) => {
      const n = countOf(q);
      const ids = Array.from({ length: n }, () => ++next.v); // minted now, sent late
      setTimeout(() => {
        if (!r.destroyed) {
          r.writeHead(200, { "Content-Type": "application/json" });
          r.end(batchBody(ids));
        }
      }, 1500);
    },
    (q, r) => writeBatch(r, next, countOf(q)),
  ).start();
  const c = new Client({ endpoints: [s.url], minRefill: 8, requestTimeoutMs: 200, baseBackoffMs: 1, maxBackoffMs: 1 });
  try {
    assert.equal(await c.next(), 9n);
    const st = c.stats();
    assert.equal(st.failures, 1);
    assert.equal(st.received, 8);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("the refill's last failure is a TransportError for a timeout", async () => {
  const s = await new Scripted(() => {}).start(); // never answers
  const c = new Client({ endpoints: [s.url], requestTimeoutMs: 50, maxAttempts: 1 });
  try {
    const err = await rejection(c.next());
    assert.ok(err instanceof UnavailableError && err.last instanceof TransportError && err.last.timedOut, String(err));
  } finally {
    await c.close();
    await s.stop();
  }
});

test("close ends a waiting next with ClosedError, abandons the request in flight, and fails every later call", async () => {
  const s = await new Scripted(() => {}).start(); // never answers
  const c = new Client({ endpoints: [s.url] });
  const waiting = c.next();
  const waitingN = c.nextN(3);
  await s.requests(1);
  await c.close();
  assert.ok((await rejection(waiting)) instanceof ClosedError);
  assert.ok((await rejection(waitingN)) instanceof ClosedError);
  assert.ok((await rejection(c.nextN(3))) instanceof ClosedError);
  assert.ok((await rejection(c.next())) instanceof ClosedError);
  assert.equal(c.tryNext(), undefined);
  await c.close(); // idempotent
  await s.stop();
});

test("close drops the buffer: no ID of it is handed out afterwards", async () => {
  const s = await new Scripted().start();
  const c = new Client({ endpoints: [s.url], minRefill: 100 });
  await c.next();
  await c.close();
  const st = c.stats();
  assert.equal(st.buffered, 0);
  assert.equal(st.discarded, 99);
  accounted(c);
  await s.stop();
});

test("the refill size follows the rate, at most doubling or halving each time, within minRefill and the buffer", async () => {
  const clk = new FakeClock();
  const c = new Client({ endpoints: ["http://127.0.0.1:1"], clock: clk, minRefill: 10, maxBuffer: 1000, refillPeriodMs: 100 });
  const p = c as unknown as { plan(): number; handedOut: number; low: number; waiters: Array<{ n: number; ids: bigint[] }> };
  const steps: Array<[number, number, number]> = [
    [0, 0, 10], // the first refill is minRefill
    [10, 1, 20], // fast: doubles, no more
    [20, 1, 40], // and again
    [400, 100, 80], // 400 per period: doubles to 80
    [80, 100, 80], // 80 per period: stays
    [1, 100, 40], // slow: halves, no less
    [0, 1000, 20],
    [0, 1000, 10],
    [0, 1000, 10], // never under minRefill
    [100000, 1, 20],
  ];
  steps.forEach(([taken, elapsed, want], i) => {
    p.handedOut += taken;
    clk.advance(elapsed);
    const got = p.plan();
    assert.equal(got, want, `step ${i}: refill`);
    assert.equal(p.low, Math.trunc(want / 2), `step ${i}: low water`);
  });
  p.waiters.push({ n: 500, ids: [] });
  assert.equal(p.plan(), 500, "refill with 500 IDs awaited");
  p.waiters.length = 0;
  await c.close();
});

test("nextN hands out no ID past maxAgeMs, even when it waits for a refill holding IDs it took", async () => {
  const clk = new FakeClock();
  const s = await new Scripted(
    (q, r) => s.ok(q, r), // IDs 1..4
    (_q, r) => writeError(r, 503, "2", "fenced"), // wait 2 s
    (q, r) => s.ok(q, r), // IDs 5..8
  ).start();
  const c = new Client({ endpoints: [s.url], clock: clk, minRefill: 4, maxBuffer: 4, lowWater: 1, maxAgeMs: 1000, maxAttempts: 3 });
  try {
    assert.equal(await c.next(), 1n);
    const p = c.nextN(4); // takes 2..4, waits for more
    await clk.blockUntilWaiters(1); // the refill got the 503 and sleeps
    clk.advance(3000);
    const ids = await p;
    for (const id of ids) assert.ok(id >= 5n, `nextN handed out ID ${id}, fetched 3 s before it returned (maxAgeMs 1 s): ${ids}`);
    assert.ok(c.stats().expired >= 3);
    accounted(c);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("callers waiting on an empty buffer are served in the order they called", async () => {
  const s = await new Scripted().start();
  const c = new Client({ endpoints: [s.url], minRefill: 8 });
  try {
    const order: number[] = [];
    const ps = [c.next(), c.nextN(3), c.next(), c.nextN(2)].map((p, i) => p.then((v) => (order.push(i), v)));
    const got = await Promise.all(ps);
    assert.deepEqual(got, [1n, [2n, 3n, 4n], 5n, [6n, 7n]]);
    assert.deepEqual(order, [0, 1, 2, 3]);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("the buffer refills ahead once next() leaves it at the low-water mark", { timeout: 20_000 }, async () => {
  const s = await new Scripted().start();
  const c = new Client({ endpoints: [s.url], minRefill: 100, maxBuffer: 1000, lowWater: 50, maxAgeMs: 60000 });
  try {
    await c.next();
    for (let i = 0; i < 48; i++) await c.next(); // 51 left
    await new Promise((r) => setImmediate(r));
    assert.equal(s.served, 1, "no refill above the low-water mark");
    await c.next(); // 50 left: the refill starts without another call
    await s.requests(2);
    assert.equal(s.queries[1], "count=200", "50 IDs taken in moments: the size doubles");
    for (let i = 0; i < 150; i++) await c.next();
    assert.equal(c.stats().failures, 0);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("with a schedule, an answer that repeats IDs received before is refused", async () => {
  const base = 683244571854022659n; // v1: machine 298
  const s = await new Scripted((q, r) => writeBatch(r, { v: base }, countOf(q))).start(); // the same IDs every time
  const c = new Client({ endpoints: [s.url], minRefill: 4, maxBuffer: 4, lowWater: 1, maxAttempts: 1, schedule: "v1" });
  try {
    const seen = new Set<bigint>();
    for (let i = 0; i < 8; i++) {
      let id: bigint;
      try {
        id = await c.next();
      } catch (e) {
        assert.ok(e instanceof UnavailableError && e.last instanceof BadResponseError && /repeats IDs/.test(e.last.message), String(e));
        const st = c.stats();
        assert.equal(st.handedOut, 4, "the first answer's 4 IDs handed out");
        assert.ok(st.failures > 0);
        return;
      }
      assert.ok(!seen.has(id), `ID ${id} handed out twice`);
      seen.add(id);
    }
    assert.fail(`next gave ${seen.size} IDs from a server that repeats them, and no error`);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("without a schedule, repeated answers are trusted, as documented", async () => {
  const s = await new Scripted((q, r) => writeBatch(r, { v: 0n }, countOf(q))).start();
  const c = new Client({ endpoints: [s.url], minRefill: 4, maxBuffer: 4, lowWater: 1, maxAttempts: 1 });
  try {
    const got: bigint[] = [];
    for (let i = 0; i < 8; i++) got.push(await c.next());
    assert.equal(got[0], 1n);
    assert.ok(got.slice(1).includes(1n), `want 1 again (the server repeated it and nothing checks): ${got}`);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("a redirect is not followed: the 3xx is the attempt's failed answer", async () => {
  const s = await new Scripted((q, r) => {
    if (q.url?.startsWith("/elsewhere")) return writeBatch(r, { v: 0n }, 8);
    r.writeHead(307, { Location: "/elsewhere" });
    r.end();
  }).start();
  const c = new Client({ endpoints: [s.url], maxAttempts: 2, baseBackoffMs: 1, maxBackoffMs: 1 });
  try {
    const err = await rejection(c.next());
    assert.ok(err instanceof UnavailableError && err.last instanceof RefusedError && err.last.status === 307, String(err));
    assert.equal(c.stats().received, 0);
  } finally {
    await c.close();
    await s.stop();
  }
});

test("Retry-After is read as seconds or an HTTP date, anything else as none", () => {
  const clk = new FakeClock();
  const t = new Transport(checkConfig({ endpoints: ["http://127.0.0.1:1"], clock: clk }));
  const at = (ms: number): string => new Date(clk.wallMs() + ms).toUTCString();
  assert.equal(t.retryAfterMs("3"), 3000);
  assert.equal(t.retryAfterMs("0"), 0);
  assert.equal(t.retryAfterMs(""), 0);
  assert.equal(t.retryAfterMs(undefined), 0);
  assert.equal(t.retryAfterMs("-1"), 0);
  assert.equal(t.retryAfterMs("1.5"), 0);
  assert.equal(t.retryAfterMs(" 3"), 0);
  assert.equal(t.retryAfterMs("4294967296"), 0);
  assert.equal(t.retryAfterMs(at(5000)), 5000);
  assert.equal(t.retryAfterMs(at(-5000)), 0);
  assert.equal(t.retryAfterMs("tomorrow"), 0);
  assert.equal(t.retryAfterMs("Fri Sep 26 12:00:07 2026"), 7000, "ANSI C's asctime form, in UTC");
  assert.equal(t.retryAfterMs("Friday, 26-Sep-26 12:00:09 GMT"), 9000, "RFC 850's form");
  assert.ok(new RateLimitedError({ endpoint: "e", status: 429, code: "", detail: "", reason: "", retryAfterMs: 0 }, "x").retryable());
});

test("a kept-alive connection the server closed is replaced at once, without counting a failure", async () => {
  const next = { v: 0n };
  const perSocket = new WeakMap<object, number>();
  const s = await new Scripted((q, r) => {
    // The second request on a connection finds it closed, as when the
    // server's idle timeout closed it just as the request went out.
    const k = (perSocket.get(q.socket) ?? 0) + 1;
    perSocket.set(q.socket, k);
    if (k === 2) return void q.socket.destroy();
    writeBatch(r, next, countOf(q));
  }).start();
  const c = new Client({ endpoints: [s.url], minRefill: 8, maxBuffer: 8, lowWater: 1, baseBackoffMs: 1, maxBackoffMs: 1 });
  try {
    const got: bigint[] = [];
    for (let i = 0; i < 20; i++) got.push(await c.next());
    assert.deepEqual(got, Array.from({ length: 20 }, (_, i) => BigInt(i + 1)));
    assert.equal(c.stats().failures, 0, "a closed kept-alive connection counted as a failure");
    assert.ok(s.served >= 4, `${s.served} requests: want the refused one sent again`);
  } finally {
    await c.close();
    await s.stop();
  }
});
