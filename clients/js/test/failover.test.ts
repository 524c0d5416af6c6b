// Failover, probes and the backoff's restarts (ports of the Go client's
// failover_test.go).
import { test } from "node:test";
import assert from "node:assert/strict";
import type * as http from "node:http";
import { Client, UnavailableError } from "../src/index.js";
import type { Config } from "../src/index.js";
import { countOf, deadURL, listen, setJitter, shut, SleepLogClock, writeBatch, writeError } from "./helpers.js";

interface Event {
  health: boolean; // a probe, else a mint
  ok: boolean;
}

/** A fake server that can be taken down (mint 503, healthz 503) and brought back, and logs what it answered, in order. */
class Region {
  up = true;
  readonly log: Event[] = [];
  url = "";
  private server: http.Server | undefined;
  constructor(private readonly next: { v: bigint }) {}

  async start(): Promise<this> {
    const { server, url } = await listen((req, res) => {
      req.resume();
      const health = req.url === "/healthz";
      this.log.push({ health, ok: this.up });
      if (!this.up) writeError(res, 503, "1", "fenced");
      else if (health) res.end();
      else writeBatch(res, this.next, countOf(req));
    });
    this.server = server;
    this.url = url;
    return this;
  }

  async stop(): Promise<void> {
    if (this.server !== undefined) await shut(this.server);
  }
}

test("the client fails over after failureThreshold failures and returns only after recoveryProbes healthy probes", async () => {
  const next = { v: 0n };
  const primary = await new Region(next).start();
  const backup = await new Region(next).start();
  const c = new Client({
    endpoints: [primary.url, backup.url],
    minRefill: 4,
    maxBuffer: 8,
    baseBackoffMs: 1,
    maxBackoffMs: 1,
    maxRetryAfterMs: 1,
    probeIntervalMs: 1,
  });
  try {
    const seen = new Set<bigint>();
    const take = async (): Promise<void> => {
      for (const id of await c.nextN(4)) {
        assert.ok(!seen.has(id), `ID ${id} handed out twice`);
        seen.add(id);
      }
    };
    await take();
    primary.up = false;
    while (c.stats().endpoint !== 1) await take();
    const failedMints = primary.log.filter((e) => !e.health && !e.ok).length;
    assert.equal(failedMints, 3, "the primary was taken out after 3 failed requests");
    assert.ok(backup.log.length > 0, "no request went to the backup while the primary was out");
    primary.up = true;
    // Take IDs until the primary answers a mint again.
    while (!primary.log.slice(1).some((e) => !e.health && e.ok)) await take();
    // The primary's log: after its failures, probes, and at least three
    // healthy probes in a row before the first mint it answers again.
    const ev = primary.log;
    let first = -1;
    for (let i = 0; i < ev.length; i++) {
      if (i > 0 && !ev[i]!.health && ev[i]!.ok && !ev[i - 1]!.ok) assert.fail(`a mint went to the primary right after a failure: ${JSON.stringify(ev)}`);
      if (!ev[i]!.health && ev[i]!.ok && i > 3) {
        first = i;
        break;
      }
    }
    assert.ok(first >= 0, `no mint went back to the primary: ${JSON.stringify(ev)}`);
    for (const e of ev.slice(first - 3, first)) {
      assert.ok(e.health && e.ok, `the client returned to the primary without 3 healthy probes first: ${JSON.stringify(ev.slice(0, first + 1))}`);
    }
  } finally {
    await c.close();
    await primary.stop();
    await backup.stop();
  }
});

const backoffConfig: Partial<Config> = { baseBackoffMs: 100, maxBackoffMs: 2000, probeIntervalMs: 3_600_000, maxAttempts: 16 };

test("with dead endpoints ahead of a live one, the waits start small again on each endpoint failed over to", async () => {
  const next = { v: 0n };
  const live = await new Region(next).start();
  const clk = new SleepLogClock();
  const c = new Client({ ...backoffConfig, endpoints: [await deadURL(), await deadURL(), await deadURL(), live.url], clock: clk });
  setJitter(c, (d) => d);
  try {
    await c.next();
    assert.deepEqual(clk.waits, [100, 200, 100, 200, 100, 200]);
    assert.equal(c.stats().endpoint, 3);
  } finally {
    await c.close();
    await live.stop();
  }
});

test("with every endpoint dead, the waits grow again once none is in service", async () => {
  const clk = new SleepLogClock();
  const c = new Client({ ...backoffConfig, endpoints: [await deadURL(), await deadURL(), await deadURL()], clock: clk });
  setJitter(c, (d) => d);
  try {
    const err = await c.next().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof UnavailableError, String(err));
    assert.equal(err.attempts, 16);
    // Two waits on each endpoint before it is taken out; the last one's
    // third failure finds none in service, and from there the waits double
    // up to maxBackoffMs. No wait follows the last attempt.
    assert.deepEqual(clk.waits, [100, 200, 100, 200, 100, 200, 400, 800, 1600, 2000, 2000, 2000, 2000]);
  } finally {
    await c.close();
  }
});

test("endpoints flapping in and out of service are still backed off from", async () => {
  const clk = new SleepLogClock();
  const c = new Client({
    endpoints: [await deadURL(), await deadURL()],
    clock: clk,
    failureThreshold: 1,
    recoveryProbes: 1,
    probeIntervalMs: 3_600_000,
    baseBackoffMs: 100,
    maxBackoffMs: 2000,
    maxAttempts: 12,
  });
  setJitter(c, (d) => d);
  const eps = (c as unknown as { eps: { probed(i: number, ok: boolean): void } }).eps;
  clk.during = () => {
    for (const i of [0, 1]) eps.probed(i, true);
  };
  try {
    assert.ok((await c.next().catch((e: unknown) => e)) instanceof UnavailableError);
    // Attempt 0 fails over from endpoint 0 (no wait); attempt 1 takes
    // endpoint 1 out with none left in service and waits; both are back
    // after the wait, and so on: a wait after every second attempt.
    assert.deepEqual(clk.waits, [100, 200, 400, 800, 1600]);
  } finally {
    await c.close();
  }
});

test("a 429 does not take an endpoint out of service, whatever the threshold", async () => {
  const next = { v: 0n };
  let limited = 2;
  const { server, url } = await listen((req, res) => {
    req.resume();
    if (limited-- > 0) return writeError(res, 429, "", "rate_limited");
    writeBatch(res, next, countOf(req));
  });
  const backup = await new Region(next).start();
  const c = new Client({ endpoints: [url, backup.url], failureThreshold: 1, baseBackoffMs: 1, maxBackoffMs: 1 });
  try {
    await c.next();
    assert.equal(c.stats().endpoint, 0);
    assert.equal(backup.log.length, 0, "a request went to the backup after a 429");
  } finally {
    await c.close();
    await shut(server);
    await backup.stop();
  }
});
