// The refill's next request goes out while a caller looping on
// `await next()` drains the IDs the last answer brought, not after.
//
// Such a loop runs in microtasks, and Node writes a request to its socket on
// a process.nextTick, which runs only once the microtasks are done: the
// server would see the next request only when the caller had drained the
// buffer, and every answer's round trip would add to the caller's wait. The
// server here runs in a worker thread (its own event loop) and records, in
// shared memory, how many IDs the caller had taken when each request came.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Worker } from "node:worker_threads";
import { Client } from "../src/index.js";

const server = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const taken = new Int32Array(workerData.taken);
const seen = new Int32Array(workerData.seen);
let next = 0n, n = 0;
const srv = http.createServer((req, res) => {
  req.resume();
  seen[n++] = Atomics.load(taken, 0);
  const count = Number(new URL(req.url, "http://x").searchParams.get("count"));
  const ids = [];
  for (let i = 0; i < count; i++) ids.push('"' + String(++next) + '"');
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end('{"ids":[' + ids.join(",") + ']}');
});
srv.listen(0, "127.0.0.1", () => parentPort.postMessage(srv.address().port));
parentPort.on("message", () => srv.close(() => process.exit(0)));
`;

/** Starts the worker's server; returns its URL, the shared counters and a stop function. */
async function start(): Promise<{ url: string; taken: Int32Array; seen: Int32Array; stop: () => Promise<void> }> {
  const taken = new Int32Array(new SharedArrayBuffer(4));
  const seen = new Int32Array(new SharedArrayBuffer(4 * 16)).fill(-1);
  const w = new Worker(server, { eval: true, workerData: { taken: taken.buffer, seen: seen.buffer } });
  const port = await new Promise<number>((r) => w.once("message", r));
  const stop = async (): Promise<void> => {
    w.postMessage("stop");
    await new Promise((r) => w.once("exit", r));
  };
  return { url: `http://127.0.0.1:${port}`, taken, seen, stop };
}

/** Takes k IDs in microtasks only, slowly (about 0.2 ms each), never yielding to the event loop, counting them in taken. */
async function drain(c: Client, k: number, taken: Int32Array): Promise<void> {
  for (let i = 0; i < k; i++) {
    await c.next();
    Atomics.add(taken, 0, 1);
    const until = performance.now() + 0.2;
    while (performance.now() < until);
  }
}

test("the refill's next request is written before the caller drains the last answer's IDs", { timeout: 30_000 }, async () => {
  const { url, taken, seen, stop } = await start();
  // One refill of two requests of 1,000.
  const c = new Client({ endpoints: [url], minRefill: 2000, maxBuffer: 4096, maxAgeMs: 60_000 });
  try {
    assert.equal(await c.next(), 1n);
    Atomics.add(taken, 0, 1);
    await drain(c, 999, taken); // the rest of the first answer
    await c.next(); // the second answer's first ID
    assert.notEqual(seen[1], -1, "the second request never came");
    assert.ok(seen[1]! < 1000, `the second request reached the server only after the caller had taken ${seen[1]} of the first answer's IDs`);
  } finally {
    await c.close();
    await stop();
  }
});

test("a refill started at the low-water mark is written before the caller drains the buffer", { timeout: 30_000 }, async () => {
  const { url, taken, seen, stop } = await start();
  // Refills of 1,000 (one request), the next one started at 500 left.
  const c = new Client({ endpoints: [url], minRefill: 1000, maxBuffer: 4096, lowWater: 500, maxAgeMs: 60_000 });
  try {
    assert.equal(await c.next(), 1n);
    Atomics.add(taken, 0, 1);
    await drain(c, 999, taken);
    await c.next();
    assert.notEqual(seen[1], -1, "the second request never came");
    // 499 counted: the call that took ID 500, leaving 500, started it.
    assert.ok(seen[1]! >= 499 && seen[1]! < 1000, `the refill started at 500 left reached the server when the caller had taken ${seen[1]} IDs`);
  } finally {
    await c.close();
    await stop();
  }
});
