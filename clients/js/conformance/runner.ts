/**
 * The conformance runner (clients/conformance/PROTOCOL.md): one JSON request
 * a line on stdin, one JSON answer a line on stdout, each a single call on
 * the library. It holds no logic of its own beyond that translation.
 *
 * @module
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import {
  Client,
  ClosedError,
  decode,
  InvalidConfigError,
  InvalidCountError,
  InvalidIdError,
  InvalidScheduleError,
  RejectedError,
  UnavailableError,
} from "../src/index.js";
import type { Config } from "../src/index.js";

type Request = Record<string, unknown>;
type Answer = Record<string, unknown>;

/** A request the runner cannot understand. */
class BadRequest extends Error {
  override name = "BadRequest";
}

let client: Client | undefined;

/** The protocol's error kind of an error the library threw. */
function kind(e: unknown): string {
  if (e instanceof BadRequest) return "bad_request";
  if (e instanceof UnavailableError) return "unavailable";
  if (e instanceof RejectedError) return "rejected";
  if (e instanceof ClosedError) return "closed";
  if (e instanceof InvalidConfigError) return "invalid_config";
  if (e instanceof InvalidCountError) return "invalid_count";
  if (e instanceof InvalidScheduleError) return "invalid_schedule";
  if (e instanceof InvalidIdError) return "invalid_id";
  return "other";
}

function failure(e: unknown): Answer {
  const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return { ok: false, error: { kind: kind(e), message } };
}

const CONFIG_KEYS: Record<string, keyof Config> = {
  endpoints: "endpoints",
  health_urls: "healthUrls",
  request_timeout_ms: "requestTimeoutMs",
  max_age_ms: "maxAgeMs",
  refill_period_ms: "refillPeriodMs",
  min_refill: "minRefill",
  max_buffer: "maxBuffer",
  low_water: "lowWater",
  max_attempts: "maxAttempts",
  base_backoff_ms: "baseBackoffMs",
  max_backoff_ms: "maxBackoffMs",
  max_retry_after_ms: "maxRetryAfterMs",
  failure_threshold: "failureThreshold",
  recovery_probes: "recoveryProbes",
  probe_interval_ms: "probeIntervalMs",
  schedule: "schedule",
};

/** The library's Config of the protocol's snake_case config; a key it does not know is a bad request. */
function toConfig(c: unknown): Config {
  if (c === null || typeof c !== "object" || Array.isArray(c)) throw new BadRequest("config is not an object");
  const cfg: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(c)) {
    if (v === null) continue;
    if (k === "tls") {
      const t = v as Record<string, unknown>;
      const read = (f: unknown): Buffer | undefined => {
        if (f === undefined || f === null) return undefined;
        try {
          return readFileSync(String(f));
        } catch (e) {
          throw new InvalidConfigError(`tls: cannot read ${String(f)}: ${(e as Error).message}`);
        }
      };
      cfg.tls = { ca: read(t.ca_file), cert: read(t.cert_file), key: read(t.key_file) };
      continue;
    }
    const name = CONFIG_KEYS[k];
    if (name === undefined) throw new BadRequest(`unknown config key ${JSON.stringify(k)}`);
    cfg[name] = v;
  }
  return cfg as unknown as Config;
}

function needClient(): Client {
  if (client === undefined) throw new BadRequest("no client is open; send an open request first");
  return client;
}

async function handle(req: Request): Promise<Answer> {
  switch (req.op) {
    case "open": {
      if (client !== undefined) {
        await client.close();
        client = undefined;
      }
      client = new Client(toConfig(req.config));
      return { ok: true };
    }
    case "next": {
      const c = needClient();
      const count = Number(req.count);
      const ids: string[] = [];
      try {
        for (let i = 0; i < count; i++) ids.push((await c.next()).toString());
      } catch (e) {
        return { ...failure(e), ids };
      }
      return { ok: true, ids };
    }
    case "next_n": {
      const ids = await needClient().nextN(Number(req.n));
      return { ok: true, ids: ids.map(String) };
    }
    case "next_concurrent": {
      const c = needClient();
      const count = Number(req.count);
      const one = async (): Promise<string[]> => {
        const ids: string[] = [];
        for (let i = 0; i < count; i++) ids.push((await c.next()).toString());
        return ids;
      };
      const all = await Promise.allSettled(Array.from({ length: Number(req.threads) }, one));
      const bad = all.find((r) => r.status === "rejected");
      if (bad !== undefined) throw (bad as PromiseRejectedResult).reason;
      return { ok: true, ids: all.flatMap((r) => (r as PromiseFulfilledResult<string[]>).value) };
    }
    case "run":
      return run(needClient(), Number(req.ms));
    case "decode":
      return { ok: true, decoded: decode(String(req.id), String(req.schedule)) };
    case "close":
      if (client !== undefined) await client.close();
      return { ok: true };
    default:
      throw new BadRequest(`unknown op ${JSON.stringify(req.op)}`);
  }
}

/**
 * Calls next() in a loop for ms milliseconds, checking the clock every
 * 1,024 calls, keeping only the count, the first and last ID and how many
 * were not greater than the one before.
 */
async function run(c: Client, ms: number): Promise<Answer> {
  const start = process.hrtime.bigint();
  const end = start + BigInt(Math.round(ms * 1e6));
  let count = 0;
  let notIncreasing = 0;
  let first = -1n;
  let last = -1n;
  for (;;) {
    for (let k = 0; k < 1024; k++) {
      const id = await c.next();
      if (id <= last) notIncreasing++;
      if (first < 0n) first = id;
      last = id;
      count++;
    }
    if (process.hrtime.bigint() >= end) break;
  }
  const elapsed = process.hrtime.bigint() - start;
  return { ok: true, count, first: first.toString(), last: last.toString(), not_increasing: notIncreasing, elapsed_ns: Number(elapsed) };
}

async function main(): Promise<void> {
  const rl = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    if (line.trim() === "") continue;
    const t0 = performance.now();
    let answer: Answer;
    try {
      let req: unknown;
      try {
        req = JSON.parse(line);
      } catch (e) {
        throw new BadRequest(`not JSON: ${(e as Error).message}`);
      }
      if (req === null || typeof req !== "object" || Array.isArray(req)) throw new BadRequest("a request is a JSON object");
      answer = await handle(req as Request);
    } catch (e) {
      answer = failure(e);
    }
    answer.elapsed_ms = performance.now() - t0;
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
  if (client !== undefined) await client.close();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`conformance runner: ${String(e)}\n`);
    process.exit(1);
  },
);
