// The parser's cost per ID on a batch of 1,000 IDs of 19 digits, beside
// JSON.parse + BigInt of each string (the obvious way, which the client does
// not take) — several runs, the median.
//
//   npm run build && node dist/bench/parse.js
import { parseBatch } from "../src/parse.js";

const RUNS = Number(process.env.RUNS ?? 15);
const ids: bigint[] = [];
let v = 7_000_000_000_000_000_000n;
for (let i = 0; i < 1000; i++) ids.push((v += 1n + BigInt(i % 7)));
const text = `{"ids":[${ids.map((id) => `"${id}"`).join(",")}]}`;
const body = new Uint8Array(65537);
const len = new TextEncoder().encodeInto(text, body).written;
const out = new Uint32Array(2000);
const big = new BigInt64Array(1000);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function bench(name: string, f: () => void): void {
  const per: number[] = [];
  for (let r = 0; r < RUNS + 2; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 1000; i++) f();
    if (r >= 2) per.push(Number(process.hrtime.bigint() - t0) / 1e6); // ns per ID: /1000 batches /1000 IDs
  }
  console.log(`${name.padEnd(28)} ${median(per).toFixed(1).padStart(7)} ns/ID  (median of ${RUNS})`);
}

bench("parseBatch", () => {
  if (parseBatch(body, len, 1000, out) !== "") throw new Error("refused");
});
bench("JSON.parse + BigInt", () => {
  const o = JSON.parse(Buffer.from(body.buffer, 0, len).toString("latin1")) as { ids: string[] };
  for (let k = 0; k < o.ids.length; k++) big[k] = BigInt(o.ids[k]!);
});
