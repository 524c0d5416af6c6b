/**
 * The errors of the client, one class per kind, all extending
 * {@link SnowfenceError}: test them with `instanceof`. Each message says what
 * went wrong and what to do about it.
 *
 * @module
 */

/** The base class of every error this package throws or rejects with. */
export class SnowfenceError extends Error {
  /** @param message what went wrong and what to do. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A {@link Config} that the client cannot use; thrown by the constructor. */
export class InvalidConfigError extends SnowfenceError {}

/** `nextN` was asked for fewer than 1 or more than 1,000 IDs. */
export class InvalidCountError extends SnowfenceError {
  /** The count asked for. */
  readonly count: number;
  /** @param count the count asked for. */
  /** @param maxBuffer the client's maxBuffer, when count is above it. */
  constructor(count: number, maxBuffer?: number) {
    super(
      maxBuffer === undefined
        ? `snowfence client: invalid count ${count}; ask for 1 to 1000 IDs`
        : `snowfence client: invalid count ${count}: more than the buffer holds (maxBuffer ${maxBuffer}); ask for at most maxBuffer IDs at once, or raise maxBuffer`,
    );
    this.count = count;
  }
}

/** Text (or a number) that is not an ID: IDs are 0 to 2^63 − 1 in canonical decimal. */
export class InvalidIdError extends SnowfenceError {
  /** The input, cut to 40 characters. */
  readonly input: string;
  /** Why it is not an ID. */
  readonly reason: string;
  /**
   * @param input the text refused.
   * @param reason why it is not an ID.
   */
  constructor(input: string, reason: string) {
    const shown = input.length > 40 ? input.slice(0, 40) + "…" : input;
    super(`snowfence: invalid ID ${JSON.stringify(shown)}: ${reason}`);
    this.input = shown;
    this.reason = reason;
  }
}

/** A layout schedule text that is not one (`v1`, `v2`, `v1,v2@2027-01-01T00:00:00Z`). */
export class InvalidScheduleError extends SnowfenceError {}

/** A call on a closed client, or a call that was waiting when `close()` was called. */
export class ClosedError extends SnowfenceError {
  constructor() {
    super("snowfence client: closed; create a new Client to take more IDs");
  }
}

/**
 * A request that got no answer: the connection was refused or reset, TLS
 * failed, or the request timed out (`timedOut`). Retried; found in
 * {@link UnavailableError.last} when every attempt failed.
 */
export class TransportError extends SnowfenceError {
  /** The endpoint's base URL. */
  readonly endpoint: string;
  /** Whether the request ran past Config.requestTimeoutMs. */
  readonly timedOut: boolean;
  /**
   * @param endpoint the endpoint's base URL.
   * @param message what failed.
   * @param timedOut whether the request timed out.
   */
  constructor(endpoint: string, message: string, timedOut: boolean, options?: { cause?: unknown }) {
    super(`snowfence client: ${endpoint}: ${message}`, options);
    this.endpoint = endpoint;
    this.timedOut = timedOut;
  }
}

/**
 * A 200 whose body is not exactly the batch asked for (or, with
 * Config.schedule, one that repeats IDs received before): it yields no IDs
 * and counts as a failure of the endpoint. Retried.
 */
export class BadResponseError extends SnowfenceError {
  /** The endpoint's base URL. */
  readonly endpoint: string;
  /**
   * @param endpoint the endpoint's base URL.
   * @param what what is wrong with the answer.
   */
  constructor(endpoint: string, what: string) {
    super(`snowfence client: malformed response from ${endpoint}: ${what}`);
    this.endpoint = endpoint;
  }
}

/**
 * A non-200 answer from an endpoint. It is one of {@link RefusedError} (5xx
 * and anything else but 4xx), {@link RateLimitedError} (429) and
 * {@link RejectedError} (another 4xx).
 */
export class ServerError extends SnowfenceError {
  /** The endpoint's base URL. */
  readonly endpoint: string;
  /** The HTTP status. */
  readonly status: number;
  /** The error body's `code` ("" when the body was not the server's JSON error, e.g. from a proxy). */
  readonly code: string;
  /** The error body's `message` ("" without one). */
  readonly detail: string;
  /** The error body's `reason` ("" without one). */
  readonly reason: string;
  /** The Retry-After header in milliseconds, 0 without one. */
  readonly retryAfterMs: number;
  /** @param f the answer's parts. */
  constructor(f: { endpoint: string; status: number; code: string; detail: string; reason: string; retryAfterMs: number }, advice: string) {
    let s = `snowfence client: ${f.endpoint} answered ${f.status}`;
    if (f.code !== "") s += ` (${f.code}${f.reason !== "" ? ", " + f.reason : ""})`;
    if (f.detail !== "") s += `: ${f.detail}`;
    super(s + "; " + advice);
    this.endpoint = f.endpoint;
    this.status = f.status;
    this.code = f.code;
    this.detail = f.detail;
    this.reason = f.reason;
    this.retryAfterMs = f.retryAfterMs;
  }

  /** Whether another attempt may succeed: not after a 4xx other than 429 and 408. */
  retryable(): boolean {
    return this.status >= 500 || this.status === 429 || this.status === 408 || this.status < 400;
  }
}

/** A 503 (or another 5xx): the server is up but not issuing (fenced, clock trouble, draining). Retried. */
export class RefusedError extends ServerError {}

/** A 429: this caller is over its quota. Retried after Retry-After, on the same endpoint. */
export class RateLimitedError extends ServerError {}

/**
 * Any other 4xx: the server will not take the request as sent (a wrong URL,
 * a missing permission). Not retried: next() and nextN() reject with it.
 */
export class RejectedError extends ServerError {}

/** Builds the {@link ServerError} subclass of a status. */
export function serverError(f: { endpoint: string; status: number; code: string; detail: string; reason: string; retryAfterMs: number }): ServerError {
  if (f.status === 429) {
    return new RateLimitedError(f, "over quota: the client waits as told and retries");
  }
  if (f.status >= 400 && f.status < 500) {
    return new RejectedError(f, "the server will not take the request: check the endpoint URL and this client's permissions");
  }
  return new RefusedError(f, "the server is not issuing now: the client retries and fails over");
}

/**
 * A refill gave up: Config.maxAttempts requests, across every endpoint,
 * brought no IDs. `last` is the last failure (a {@link ServerError},
 * {@link TransportError} or {@link BadResponseError}).
 */
export class UnavailableError extends SnowfenceError {
  /** How many requests the refill sent. */
  readonly attempts: number;
  /** The last attempt's failure. */
  readonly last: Error;
  /**
   * @param attempts how many requests the refill sent.
   * @param last the last attempt's failure.
   */
  constructor(attempts: number, last: Error) {
    super(
      `snowfence client: no endpoint issued IDs after ${attempts} attempts; check that a server in Config.endpoints is reachable and issuing (GET /healthz): last failure: ${last.message}`,
      { cause: last },
    );
    this.attempts = attempts;
    this.last = last;
  }
}
