// The cost of next() (and tryNext(), nextN(1000)) from a full buffer, per
// ID: several runs, the median. The buffer is filled from an in-process
// server before each run and not refilled during it (lowWater 1), so only
// the hand-out is timed.
//
//   npm run build && node dist/bench/next.js            # RUNS=15 PER_RUN=60000
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { Client } from "../src/index.js";

const RUNS = Number(process.env.RUNS ?? 15);
const PER_RUN = Number(process.env.PER_RUN ?? 60000);
const BUFFER = 65536;

// An in-process server answering every batch with IDs of 19 digits.
let next = 7_000_000_000_000_000_000n;
const server = http.createServer((req, res) => {
  req.resume();
  const n = Number(new URL(req.url ?? "/", "http://x").searchParams.get("count"));
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(`"${++next}"`);
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(`{"ids":[${ids.join(",")}]}`);
});
await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

/** A client whose buffer is full (65,535 IDs), with no refill due before it is nearly empty. */
async function full(): Promise<Client> {
  const c = new Client({ endpoints: [url], minRefill: BUFFER, maxBuffer: BUFFER, lowWater: 1, maxAgeMs: 600_000, refillPeriodMs: 1000 });
  await c.next();
  while (c.stats().buffered < BUFFER - 1) await new Promise((r) => setImmediate(r));
  return c;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

async function bench(name: string, take: (c: Client, n: number) => Promise<bigint>): Promise<void> {
  const per: number[] = [];
  for (let r = 0; r < RUNS + 2; r++) {
    const c = await full();
    const t0 = process.hrtime.bigint();
    const last = await take(c, PER_RUN);
    const ns = Number(process.hrtime.bigint() - t0) / PER_RUN;
    if (last <= 0n) throw new Error("no ID");
    await c.close();
    if (r >= 2) per.push(ns); // the first two runs warm the JIT up
  }
  console.log(`${name.padEnd(28)} ${median(per).toFixed(1).padStart(7)} ns/ID  (median of ${RUNS}; min ${Math.min(...per).toFixed(1)}, max ${Math.max(...per).toFixed(1)})`);
}

console.log(`node ${process.version}, ${PER_RUN} IDs a run from a full buffer`);
await bench("await next()", async (c, n) => {
  let id = 0n;
  for (let i = 0; i < n; i++) id = await c.next();
  return id;
});
await bench("tryNext() ?? await next()", async (c, n) => {
  let id = 0n;
  for (let i = 0; i < n; i++) id = c.tryNext() ?? (await c.next());
  return id;
});
await bench("await nextN(1000)", async (c, n) => {
  let ids: bigint[] = [];
  for (let i = 0; i < n; i += 1000) ids = await c.nextN(1000);
  return ids[ids.length - 1]!;
});
server.close();
