/**
 * The client: a buffer of IDs kept filled from the servers, handed out by
 * next() and nextN() (a port of the Go client's client.go and refill.go).
 *
 * @module
 */
import type { Clock } from "./clock.js";
import type { Config, Logger, Settings } from "./config.js";
import { checkConfig } from "./config.js";
import { IdBuffer } from "./buffer.js";
import { Endpoints } from "./endpoints.js";
import { ClosedError, InvalidCountError, ServerError, UnavailableError } from "./errors.js";
import { MAX_BATCH, parseBatch, idAt } from "./parse.js";
import { BadResponseError } from "./errors.js";
import { Marks } from "./repeat.js";
import { Transport } from "./transport.js";

/** A snapshot of a client's counters. */
export interface Stats {
  /** IDs in the buffer (expired ones not yet dropped included). */
  buffered: number;
  /** IDs returned by next, tryNext and nextN. */
  handedOut: number;
  /** IDs of every 200 taken into the buffer. */
  received: number;
  /** IDs dropped for age (in the buffer, or held by a nextN waiting for a refill). */
  expired: number;
  /** IDs dropped by close() or by a nextN that failed. */
  discarded: number;
  /** Mint requests that brought IDs. */
  requests: number;
  /** Mint requests that did not. */
  failures: number;
  /** The index in Config.endpoints of the endpoint requests go to now (the first in service), -1 when none is. */
  endpoint: number;
  /** Per endpoint, whether it is in service. */
  inService: boolean[];
}

/** A caller waiting for IDs: next() (single) or nextN(n). */
interface Waiter {
  n: number;
  ids: bigint[];
  /** The earliest deadline of the chunks ids came from. */
  deadline: number;
  single: boolean;
  resolve: (v: never) => void;
  reject: (e: Error) => void;
}

/**
 * Client hands out IDs from a buffer it keeps filled from the servers of
 * Config.endpoints, in the background, retrying and failing over. Create it
 * with `new Client(config)`, take IDs with `await client.next()` (or
 * `client.tryNext()` in hot loops) and `await client.nextN(n)`, and
 * `await client.close()` when done.
 *
 * JavaScript runs one thing at a time, so a Client needs no locks: any
 * number of callers may wait on it at once, each a pending promise, and they
 * are served in the order they called when IDs arrive. Each caller's IDs
 * increase while one server answers.
 */
export class Client {
  private readonly s: Settings;
  private readonly clock: Clock;
  private readonly log: Logger;
  private readonly buf: IdBuffer;
  private readonly eps: Endpoints;
  private readonly transport: Transport;
  private readonly marks: Marks | undefined;
  /** Parsed IDs of one answer, low and high halves. */
  private readonly scratch = new Uint32Array(2 * MAX_BATCH);
  /** Returns a random number of ms in [0, d]; tests replace it. */
  private jitter: (d: number) => number = (d) => (d <= 0 ? 0 : Math.random() * d);
  /** Aborted by close(): ends the waits of the refill and the probes. */
  private readonly stop = new AbortController();

  private waiters: Waiter[] = [];
  /** True from the moment a refill is asked for until it ends: at most one runs. */
  private refilling = false;
  private refillDone: Promise<void> = Promise.resolve();
  /** tryNext started a refill: the next next() yields once (see next). */
  private kicked = false;
  private probing = false;
  private probeDone: Promise<void> = Promise.resolve();
  private closed = false;
  // Refill planning: the current size and low-water mark, and the clock
  // and handedOut at the last plan.
  private size: number;
  private low: number;
  private planned = false;
  private planAt = 0;
  private takenAtPlan = 0;
  private handedOut = 0;
  private received = 0;
  private discarded = 0;
  private requests = 0;
  private failures = 0;

  /**
   * Checks config and returns a client with an empty buffer; the first
   * next() fills it. It sends no request. Throws InvalidConfigError.
   */
  constructor(config: Config) {
    const s = checkConfig(config);
    this.s = s;
    this.clock = s.clock;
    this.log = s.logger;
    this.buf = new IdBuffer(s.maxBuffer);
    this.eps = new Endpoints(s.endpoints, s.failureThreshold, s.recoveryProbes, s.logger);
    this.eps.onOut = () => this.startProbes();
    this.transport = new Transport(s);
    this.marks = s.schedule !== undefined ? new Marks(s.schedule) : undefined;
    this.size = s.minRefill;
    this.low = s.lowWater !== 0 ? s.lowWater : Math.trunc(this.size / 2);
  }

  /**
   * Returns the next ID from the buffer at once, or undefined when the
   * buffer has none that has not expired (then `await next()` waits for
   * one). It never waits and allocates nothing but the bigint. It reads the
   * monotonic clock once per call, because that is the only way to be sure
   * no ID is handed out past maxAgeMs (a timer that dropped chunks would
   * fire late under load); it is compared with the oldest chunk's deadline,
   * with no timestamp per ID. Like next(), it starts a refill in the
   * background when it leaves the buffer at or below the low-water mark
   * (or finds it empty). After close() it returns undefined.
   */
  tryNext(): bigint | undefined {
    const id = this.buf.take(this.clock.now());
    if (id === undefined) {
      if (!this.refilling && !this.closed) this.startRefill();
      return undefined;
    }
    this.handedOut++;
    if (this.buf.length <= this.low && !this.refilling) {
      this.startRefill();
      this.kicked = true;
    }
    return id;
  }

  /**
   * Resolves the next ID. From a buffer with IDs it is served from memory
   * (tryNext, then an already-resolved promise); when the buffer is empty it
   * waits for the refill in flight (or starts one), behind the callers
   * already waiting. It rejects with ClosedError, or with the error of the
   * refill it waited for: UnavailableError (every attempt failed),
   * RejectedError (a 4xx other than 429).
   */
  next(): Promise<bigint> {
    const id = this.tryNext();
    if (id !== undefined) {
      if (this.kicked) {
        // This call started a refill: resolve on process.nextTick, after
        // the tick on which Node writes the refill's request to its socket
        // (see serve), so that a caller looping on `await next()` does not
        // hold the request back until it has drained the buffer.
        this.kicked = false;
        return new Promise((resolve) => process.nextTick(resolve, id));
      }
      return Promise.resolve(id);
    }
    return this.wait(1, [], Infinity, true) as Promise<bigint>;
  }

  /**
   * Resolves n IDs (1 ≤ n ≤ 1000) in the order the buffer holds them. On
   * error it rejects and returns no IDs; any it had taken are discarded,
   * never handed out. When the buffer holds fewer than n it takes what is
   * there and waits for a refill; if the oldest IDs it holds reach maxAgeMs
   * meanwhile it drops them all (counted as expired) and takes again, so no
   * ID it returns has reached maxAgeMs when it resolves.
   */
  nextN(n: number): Promise<bigint[]> {
    if (!Number.isSafeInteger(n) || n < 1 || n > MAX_BATCH) return Promise.reject(new InvalidCountError(n));
    // More than the buffer holds would be gathered over several refills,
    // the first IDs ageing past maxAgeMs while the last arrive, dropped and
    // gathered again without end (as the Go client, found by an attack).
    if (n > this.s.maxBuffer) return Promise.reject(new InvalidCountError(n, this.s.maxBuffer));
    const ids: bigint[] = [];
    if (this.waiters.length === 0) {
      const now = this.clock.now();
      const got = this.buf.takeN(ids, n, now);
      this.handedOut += got;
      if (this.buf.length <= this.low && !this.refilling && !this.closed) this.startRefill();
      if (got === n) return Promise.resolve(ids);
      return this.wait(n, ids, this.buf.takenDeadline, false) as Promise<bigint[]>;
    }
    return this.wait(n, ids, Infinity, false) as Promise<bigint[]>;
  }

  /** Queues a caller behind those already waiting. */
  private wait(n: number, ids: bigint[], deadline: number, single: boolean): Promise<bigint | bigint[]> {
    if (this.closed) {
      this.abandon(ids);
      return Promise.reject(new ClosedError());
    }
    return new Promise((resolve, reject) => {
      this.waiters.push({ n, ids, deadline, single, resolve: resolve as (v: never) => void, reject });
      if (!this.refilling) this.startRefill();
    });
  }

  /** Discards the IDs a failed call had taken. */
  private abandon(ids: bigint[]): void {
    this.discarded += ids.length;
    this.handedOut -= ids.length;
  }

  /**
   * Serves the waiting callers, oldest first, from the buffer. A caller
   * holding IDs whose oldest has reached maxAgeMs drops them all and takes
   * again. Promises are resolved on process.nextTick: a caller looping on
   * `await next()` runs in microtasks, which would otherwise run before the
   * request that the refill has just queued is written to its socket (Node
   * writes it on a nextTick), and the server would get it only once the
   * caller had drained the buffer.
   */
  private serve(): void {
    while (this.waiters.length > 0) {
      const w = this.waiters[0]!;
      const now = this.clock.now();
      const got = this.buf.takeN(w.ids, w.n - w.ids.length, now);
      this.handedOut += got;
      if (got > 0 && this.buf.takenDeadline < w.deadline) w.deadline = this.buf.takenDeadline;
      if (now >= w.deadline) {
        // Held past maxAgeMs while waiting for a refill: drop them all
        // (IDs come out oldest first, so the rest are the newest) and take
        // again from what the refill brought.
        this.buf.expired += w.ids.length;
        this.handedOut -= w.ids.length;
        w.ids.length = 0;
        w.deadline = Infinity;
        continue;
      }
      if (w.ids.length < w.n) break;
      this.waiters.shift();
      process.nextTick(w.resolve as (v: unknown) => void, w.single ? w.ids[0] : w.ids);
    }
    if (this.buf.length <= this.low && !this.refilling && !this.closed) this.startRefill();
  }

  /** Ends every waiting caller with err. */
  private failWaiters(err: Error): void {
    const ws = this.waiters;
    this.waiters = [];
    for (const w of ws) {
      this.abandon(w.ids);
      process.nextTick(w.reject, err);
    }
  }

  /** Starts a refill in the background. */
  private startRefill(): void {
    this.refilling = true;
    this.refillDone = this.refill().then(
      () => this.refillEnded(undefined),
      (err: Error) => this.refillEnded(err),
    );
  }

  private refillEnded(err: Error | undefined): void {
    this.refilling = false;
    if (this.closed) return;
    if (err !== undefined) {
      this.log.warn("refill failed", { error: err.message });
      // The callers that waited for it get its error, if the buffer has
      // nothing for them (it has not: they would have taken it).
      if (this.buf.length === 0) this.failWaiters(err);
    }
    // Callers still waiting (the refill was cut to the room in the
    // buffer, or the IDs expired) start another.
    if (this.waiters.length > 0) {
      this.serve();
      if (this.waiters.length > 0 && !this.refilling) this.startRefill();
    }
  }

  /**
   * Sizes the next refill from the rate at which IDs were handed out since
   * the last one: about rate × refillPeriodMs, at most twice and at least
   * half the last size, at least minRefill and what waiting callers need,
   * and no more than the buffer has room for. It also sets the low-water
   * mark to half the size when Config.lowWater is 0.
   */
  private plan(): number {
    const now = this.clock.now();
    this.buf.dropExpired(now);
    let size = this.size;
    if (this.planned) {
      const elapsed = now - this.planAt;
      if (elapsed > 0) {
        const rate = (this.handedOut - this.takenAtPlan) / elapsed;
        const want = Math.trunc(Math.min(rate * this.s.refillPeriodMs, this.s.maxBuffer));
        size = Math.min(Math.max(want, Math.trunc(size / 2)), size * 2);
      }
    }
    this.size = Math.min(Math.max(size, this.s.minRefill), this.s.maxBuffer);
    this.planned = true;
    this.planAt = now;
    this.takenAtPlan = this.handedOut;
    if (this.s.lowWater === 0) this.low = Math.trunc(this.size / 2);
    let demand = 0;
    for (const w of this.waiters) demand += w.n - w.ids.length;
    return Math.min(Math.max(this.size, demand), this.s.maxBuffer - this.buf.length);
  }

  /** One refill: requests of at most 1,000 IDs, one after another, each answer's IDs buffered as it arrives. */
  private async refill(): Promise<void> {
    // Off the caller's stack: the refill starts after the call that asked
    // for it returns.
    await undefined;
    if (this.closed) throw new ClosedError();
    const size = this.plan();
    for (let got = 0; got < size; ) {
      const n = Math.min(size - got, MAX_BATCH);
      const sent = await this.fetch(n);
      if (this.closed) {
        this.discarded += n;
        throw new ClosedError();
      }
      // Age counts from the moment the request was sent: the server
      // minted the IDs after it.
      this.buf.push(this.scratch, n, sent + this.s.maxAgeMs);
      this.received += n;
      got += n;
      this.serve();
    }
  }

  /**
   * Gets n IDs into scratch, retrying and failing over: up to maxAttempts
   * requests, with a jittered exponential wait after each failure (at least
   * the Retry-After of a 503 or 429, up to maxRetryAfterMs), and none after a
   * failure that took an endpoint out of service when another is in
   * service. The wait's exponent restarts the first time the fetch fails
   * over from each endpoint: a failure says how the endpoint it came from is
   * doing, not the next one, so a region with several dead endpoints does
   * not leave the healthy one behind them to be tried only after waits grown
   * to seconds; otherwise it grows, so a fleet that is down entirely, or
   * flapping in and out of service, is still backed off from. A 4xx other
   * than 429 is thrown at once. Resolves the clock's reading when the
   * request that brought the IDs was sent.
   */
  private async fetch(n: number): Promise<number> {
    let last: Error | undefined;
    let step = 0; // failures since the exponent last restarted
    let left: boolean[] | undefined; // endpoints this fetch has failed over from
    for (let a = 0; a < this.s.maxAttempts; a++) {
      const i = this.eps.pick();
      let sent = 0;
      let err: Error | undefined;
      try {
        sent = await this.attempt(i, n);
      } catch (e) {
        err = e as Error;
      }
      if (err === undefined) {
        this.requests++;
        this.eps.succeeded(i);
        return sent;
      }
      if (this.closed) throw new ClosedError();
      this.failures++;
      last = err;
      const se = err instanceof ServerError ? err : undefined;
      if (se !== undefined && !se.retryable()) throw err;
      // Over quota is not ill health: the endpoint stays in service and
      // the client waits as it was told.
      let failover = false;
      if (se === undefined || se.status !== 429) failover = this.eps.failed(i, err);
      if (failover) {
        // Not again from the same endpoint: one that answers /healthz but
        // fails every mint is put back by the prober and taken out again,
        // and must not keep a fleet that issues nothing at baseBackoffMs.
        left ??= new Array<boolean>(this.s.endpoints.length).fill(false);
        if (!left[i]) step = 0;
        left[i] = true;
        continue;
      }
      if (a === this.s.maxAttempts - 1) continue;
      const retryAfter = se !== undefined ? se.retryAfterMs : 0;
      if (!(await this.clock.sleep(this.backoff(step, retryAfter), this.stop.signal, true))) throw new ClosedError();
      step++;
    }
    throw new UnavailableError(this.s.maxAttempts, last!);
  }

  /**
   * The wait after the a-th failure (from 0) since the exponent last
   * restarted: between half and all of baseBackoffMs·2^a, at most
   * maxBackoffMs; and at least retryAfter (cut to maxRetryAfterMs) plus up
   * to a tenth more, so that callers told the same Retry-After do not all
   * come back in the same instant.
   */
  private backoff(a: number, retryAfterMs: number): number {
    let d = this.s.maxBackoffMs;
    if (a < 30) d = Math.min(this.s.baseBackoffMs * 2 ** a, this.s.maxBackoffMs);
    let w = d / 2 + this.jitter(d / 2);
    if (retryAfterMs > 0) {
      const r = Math.min(retryAfterMs, this.s.maxRetryAfterMs);
      w = Math.max(w, r + this.jitter(r / 10));
    }
    return w;
  }

  /**
   * Sends one request for n IDs to endpoint i. Only a complete 200 whose
   * body parses as exactly n strictly increasing IDs (and, with
   * Config.schedule, repeats none received before) yields IDs, in scratch;
   * a body cut short yields none, whatever part of it came. Resolves when
   * the request was sent, by the clock.
   */
  private async attempt(i: number, n: number): Promise<number> {
    const ep = this.eps.url(i);
    const sent = this.clock.now();
    const len = await this.transport.mint(ep, n);
    const why = parseBatch(this.transport.body, len, n, this.scratch);
    if (why !== "") throw new BadResponseError(ep.base, why);
    if (this.marks !== undefined) {
      const repeat = this.marks.check(n, (k) => idAt(this.scratch, k));
      if (repeat !== "") throw new BadResponseError(ep.base, repeat);
    }
    return sent;
  }

  /** Starts probing the endpoints out of service, unless it runs already. */
  private startProbes(): void {
    if (this.probing || this.closed) return;
    this.probing = true;
    this.probeDone = this.probeLoop()
      .catch((e: unknown) => this.log.warn("health probes stopped", { error: String(e) }))
      .finally(() => {
        this.probing = false;
      });
  }

  /**
   * Probes the endpoints out of service every probeIntervalMs until none is
   * out. Its waits and requests do not keep the process alive.
   */
  private async probeLoop(): Promise<void> {
    for (let out = this.eps.out(); out.length > 0; out = this.eps.out()) {
      if (!(await this.clock.sleep(this.s.probeIntervalMs, this.stop.signal, false))) return;
      for (const i of out) {
        const ok = await this.transport.probe(this.eps.url(i).health);
        if (this.closed) return;
        this.eps.probed(i, ok);
      }
    }
  }

  /**
   * Stops the client: a request in flight is abandoned (its IDs never
   * handed out), the buffer is dropped, every waiting and later call fails
   * with ClosedError, the timers stop and the connections close. It resolves
   * once the refill and the probes have ended. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.discarded += this.buf.clear();
      this.failWaiters(new ClosedError());
      this.stop.abort();
      this.transport.close();
    }
    await Promise.all([this.refillDone, this.probeDone]);
  }

  /** The client's counters. */
  stats(): Stats {
    return {
      buffered: this.buf.length,
      handedOut: this.handedOut,
      received: this.received,
      expired: this.buf.expired,
      discarded: this.discarded,
      requests: this.requests,
      failures: this.failures,
      endpoint: this.eps.first(),
      inService: this.eps.inService(),
    };
  }
}
