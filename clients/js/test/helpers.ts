// Test helpers: a fake clock, scripted fake servers, dead ports.
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "../src/index.js";
import { Client } from "../src/index.js";
import type { Config } from "../src/index.js";

/** The instant the fake clocks start at (Unix ms). */
export const EXAMPLE_WALL = Date.UTC(2026, 8, 26, 12);

interface Sleeper {
  until: number;
  resolve: (slept: boolean) => void;
}

/**
 * FakeClock is a Clock moved by hand: sleeps end when advance() moves the
 * clock past them, or when their signal aborts.
 */
export class FakeClock implements Clock {
  private mono = 1000;
  private wall = EXAMPLE_WALL;
  private sleepers = new Set<Sleeper>();
  private watchers: Array<() => void> = [];

  now(): number {
    return this.mono;
  }

  wallMs(): number {
    return this.wall;
  }

  sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const s: Sleeper = {
        until: this.mono + ms,
        resolve: (slept) => {
          this.sleepers.delete(s);
          signal.removeEventListener("abort", onAbort);
          resolve(slept);
        },
      };
      const onAbort = (): void => s.resolve(false);
      signal.addEventListener("abort", onAbort, { once: true });
      this.sleepers.add(s);
      for (const w of this.watchers.splice(0)) w();
    });
  }

  /** Moves the clock on by ms, ending the sleeps it passes. */
  advance(ms: number): void {
    this.mono += ms;
    this.wall += ms;
    for (const s of [...this.sleepers]) if (s.until <= this.mono) s.resolve(true);
  }

  /** How many sleeps are in progress. */
  waiters(): number {
    return this.sleepers.size;
  }

  /** Resolves once at least n sleeps are in progress. */
  async blockUntilWaiters(n: number): Promise<void> {
    while (this.sleepers.size < n) await new Promise<void>((r) => this.watchers.push(r));
  }
}

/**
 * SleepLogClock records each sleep's duration and moves the clock on at
 * once, except sleeps of an hour or more (the prober's interval in these
 * tests), which last until aborted: the test reads the refill's waits.
 */
export class SleepLogClock implements Clock {
  private mono = 1000;
  readonly waits: number[] = [];
  /** If set, runs inside each recorded wait (as the prober would). */
  during: (() => void) | undefined;

  now(): number {
    return this.mono;
  }

  wallMs(): number {
    return EXAMPLE_WALL + this.mono;
  }

  sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    if (ms >= 3_600_000) {
      return new Promise((resolve) => {
        if (signal.aborted) resolve(false);
        signal.addEventListener("abort", () => resolve(false), { once: true });
      });
    }
    this.waits.push(ms);
    this.during?.();
    this.mono += ms;
    return Promise.resolve(!signal.aborted);
  }
}

/** A handler of a fake server. */
export type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

/** The count of a mint request (-1 without one). */
export function countOf(req: http.IncomingMessage): number {
  const u = new URL(req.url ?? "/", "http://x");
  const c = u.searchParams.get("count");
  return c === null ? -1 : Number(c);
}

/** The batch body of ids, as the server writes it. */
export function batchBody(ids: bigint[]): string {
  return `{"ids":[${ids.map((id) => `"${id}"`).join(",")}]}`;
}

/** Answers a mint request with n IDs from next (a counter shared by servers). */
export function writeBatch(res: http.ServerResponse, next: { v: bigint }, n: number): bigint[] {
  const ids: bigint[] = [];
  for (let i = 0; i < n; i++) ids.push(++next.v);
  res.writeHead(200, { "Content-Type": "application/json" });
  res.end(batchBody(ids));
  return ids;
}

/** Answers with the server's error body. */
export function writeError(res: http.ServerResponse, status: number, retryAfter: string, code: string): void {
  const h: Record<string, string> = { "Content-Type": "application/json" };
  if (retryAfter !== "") h["Retry-After"] = retryAfter;
  res.writeHead(status, h);
  res.end(JSON.stringify({ error: { code, message: "test refusal", reason: "test" } }));
}

/** Starts an HTTP server on a free loopback port. */
export async function listen(handler: Handler): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  return { server, url: `http://127.0.0.1:${port}` };
}

/** Closes a server and its connections. */
export async function shut(server: http.Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
}

/**
 * Scripted is a fake server whose mint answers follow a script: each
 * request takes the next handler (the last repeats). /healthz answers
 * `health`. It records the query of each mint request.
 */
export class Scripted {
  served = 0;
  health = 200;
  healthN = 0;
  readonly next = { v: 0n };
  readonly queries: string[] = [];
  url = "";
  server: http.Server | undefined;
  private readonly script: Handler[];
  private watchers: Array<() => void> = [];

  /** @param script the answers in turn; none: a batch of the count asked for, always. */
  constructor(...script: Handler[]) {
    this.script = script.length > 0 ? script : [this.ok];
  }

  async start(): Promise<this> {
    const { server, url } = await listen((req, res) => this.serve(req, res));
    this.server = server;
    this.url = url;
    return this;
  }

  private serve(req: http.IncomingMessage, res: http.ServerResponse): void {
    req.resume();
    if (req.url === "/healthz") {
      this.healthN++;
      res.writeHead(this.health);
      res.end();
      return;
    }
    const f = this.script[Math.min(this.served, this.script.length - 1)]!;
    this.served++;
    this.queries.push(new URL(req.url ?? "/", "http://x").search.slice(1));
    for (const w of this.watchers.splice(0)) w();
    f(req, res);
  }

  /** Answers with a batch of the count asked for. */
  ok: Handler = (req, res) => {
    writeBatch(res, this.next, countOf(req));
  };

  /** Resolves once the server has seen n mint requests. */
  async requests(n: number): Promise<void> {
    while (this.served < n) await new Promise<void>((r) => this.watchers.push(r));
  }

  async stop(): Promise<void> {
    if (this.server !== undefined) await shut(this.server);
  }
}

/** The URL of a server that is gone: connections are refused. */
export async function deadURL(): Promise<string> {
  const { server, url } = await listen((_q, r) => r.end());
  await shut(server);
  return url;
}

/** The client's hidden jitter, which tests replace. */
export function setJitter(c: Client, f: (d: number) => number): void {
  (c as unknown as { jitter: (d: number) => number }).jitter = f;
}

/** A client on cfg; the caller closes it. */
export function newClient(cfg: Config): Client {
  return new Client(cfg);
}
