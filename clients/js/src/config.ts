/**
 * The client's configuration, its defaults (the Go client's, client/config.go)
 * and its checks.
 *
 * @module
 */
import type { Clock } from "./clock.js";
import { systemClock } from "./clock.js";
import { InvalidConfigError, InvalidScheduleError } from "./errors.js";
import { Schedule } from "./decode.js";

/** How long a buffered ID may wait to be handed out, from when its request was sent: 1 s. */
export const DEFAULT_MAX_AGE_MS = 1000;
/** The smallest refill: 8 IDs. */
export const DEFAULT_MIN_REFILL = 8;
/** The most IDs a client holds: 65,536. */
export const DEFAULT_MAX_BUFFER = 65536;
/** The bound on one request, its body included: 2 s. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 2000;
/** How many requests one refill sends before it gives up: 8. */
export const DEFAULT_MAX_ATTEMPTS = 8;
/** The first wait after a failed attempt (jittered, doubling): 50 ms. */
export const DEFAULT_BASE_BACKOFF_MS = 50;
/** The longest wait after a failed attempt: 2 s. */
export const DEFAULT_MAX_BACKOFF_MS = 2000;
/** The longest Retry-After honoured; a longer one is cut to it: 10 s. */
export const DEFAULT_MAX_RETRY_AFTER_MS = 10000;
/** Consecutive failed requests that take an endpoint out of service: 3. */
export const DEFAULT_FAILURE_THRESHOLD = 3;
/** Consecutive healthy probes that put an endpoint back in service: 3. */
export const DEFAULT_RECOVERY_PROBES = 3;
/** How often an endpoint out of service is probed: 1 s. */
export const DEFAULT_PROBE_INTERVAL_MS = 1000;

/**
 * TLS settings of the client's own https Agent: for mutual TLS give `ca`
 * (the servers' CA) and `cert` + `key` (the client certificate), PEM text or
 * Buffers, as node:tls takes them.
 */
export interface TlsOptions {
  /** The CA certificates the servers' certificates must chain to (PEM). Absent: Node's default roots. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** The client certificate chain (PEM), sent when a server asks for one. */
  cert?: string | Buffer | Array<string | Buffer>;
  /** The client certificate's private key (PEM). */
  key?: string | Buffer | Array<string | Buffer>;
  /** The passphrase of key, if it is encrypted. */
  passphrase?: string;
  /** The server name to verify (SNI), when it is not the endpoint's host. */
  servername?: string;
}

/** A sink for the client's few log lines (endpoints taken out and back, refills that failed); `console` fits. */
export interface Logger {
  /** Something went wrong and the client copes. */
  warn(message: string, fields?: Record<string, unknown>): void;
  /** Something went back to normal. */
  info(message: string, fields?: Record<string, unknown>): void;
}

/**
 * Configures a {@link Client}. Every field but `endpoints` may be left out
 * (or 0): each says what that means. Negative numbers are refused.
 * Durations are in milliseconds.
 */
export interface Config {
  /**
   * The base URLs of the servers, in order of preference: the local region
   * first, backups after ("https://ids.eu-west.corp", "https://ids.us-east.corp").
   * Requests go to the first endpoint in service. Required; each must be an
   * absolute http or https URL without a query or fragment; a trailing
   * slash is ignored.
   */
  endpoints: readonly string[];
  /**
   * The URLs probed for each endpoint, in the order of endpoints. Absent
   * means each endpoint's /healthz. Set them when /healthz is served on a
   * separate admin listener.
   */
  healthUrls?: readonly string[];
  /** TLS of the https Agent (mutual TLS: ca, cert, key). */
  tls?: TlsOptions;
  /** Bounds one request, its body included; the request is destroyed at it. 0: 2,000 ms. Measured by real timers, not by clock. */
  requestTimeoutMs?: number;
  /**
   * How long a buffered ID may wait: an ID is handed out only while less
   * than maxAgeMs has passed since the request that fetched it was sent;
   * older IDs are dropped, never handed out. 0: 1,000 ms. An ID handed out
   * from the buffer is up to this much older than the moment next() returned
   * it, which is what a caller that reads time from IDs or sorts by them
   * sees; uniqueness does not depend on it.
   */
  maxAgeMs?: number;
  /**
   * The time one refill should last at the caller's observed rate: each
   * refill asks for about rate × refillPeriodMs IDs, at most twice and at
   * least half the previous refill, within minRefill and the room in the
   * buffer. 0: maxAgeMs / 4. It must be less than maxAgeMs.
   */
  refillPeriodMs?: number;
  /** The smallest refill. 0: 8. */
  minRefill?: number;
  /** The most IDs the client holds. 0: 65,536. At least minRefill, at most 2^26. */
  maxBuffer?: number;
  /**
   * The number of buffered IDs at or below which next() starts a refill in
   * the background. 0: half the current refill size. Less than maxBuffer.
   */
  lowWater?: number;
  /** How many requests a refill sends (retries and failovers included) before it gives up with UnavailableError. 0: 8. */
  maxAttempts?: number;
  /**
   * The wait after a failed attempt is between half and all of
   * baseBackoffMs·2^k, at most maxBackoffMs, where k counts the refill's
   * failures since it last failed over from an endpoint it had not failed
   * over from before. 0: 50 ms and 2,000 ms.
   */
  baseBackoffMs?: number;
  /** The longest wait after a failed attempt (see baseBackoffMs). 0: 2,000 ms. At least baseBackoffMs. */
  maxBackoffMs?: number;
  /** Caps the Retry-After honoured after a 503 or 429. 0: 10,000 ms. */
  maxRetryAfterMs?: number;
  /** Consecutive failed requests (5xx, connection errors, timeouts, malformed answers; not 429) that take an endpoint out of service. 0: 3. */
  failureThreshold?: number;
  /** Consecutive 200s from an endpoint's health URL that put it back in service. 0: 3. */
  recoveryProbes?: number;
  /** How often endpoints out of service are probed. 0: 1,000 ms. */
  probeIntervalMs?: number;
  /**
   * The servers' layout schedule (text such as "v1", or a {@link Schedule}):
   * with it the client refuses an answer that repeats IDs received before
   * (a replayed response). It remembers the last ID received from each
   * (layout, region, machine) and refuses an answer that does not start
   * above it, which never refuses a sound answer (see the Go client's
   * Config.Schedule). Absent: no such check; the client then trusts the
   * servers, and whatever stands between, never to answer with IDs they
   * answered before.
   */
  schedule?: string | Schedule;
  /** Receives the client's few log lines. Absent: none. */
  logger?: Logger;
  /** The clock for the age of buffered IDs, the rate, backoff and probing. Absent: the system's. */
  clock?: Clock;
}

/** A checked Config with its defaults filled in and its endpoints parsed. */
export interface Settings {
  endpoints: EndpointURL[];
  tls: TlsOptions | undefined;
  requestTimeoutMs: number;
  maxAgeMs: number;
  refillPeriodMs: number;
  minRefill: number;
  maxBuffer: number;
  lowWater: number;
  maxAttempts: number;
  baseBackoffMs: number;
  maxBackoffMs: number;
  maxRetryAfterMs: number;
  failureThreshold: number;
  recoveryProbes: number;
  probeIntervalMs: number;
  schedule: Schedule | undefined;
  logger: Logger;
  clock: Clock;
}

/** An endpoint's parsed URLs. */
export interface EndpointURL {
  /** The base URL, without a trailing slash. */
  base: string;
  /** The base URL parsed. */
  url: URL;
  /** The mint path: the base's path + "/v1/ids:batch?count=". */
  mintPath: string;
  /** The health URL, parsed. */
  health: URL;
}

const silent: Logger = { warn() {}, info() {} };

function invalid(what: string): InvalidConfigError {
  return new InvalidConfigError(`snowfence client: invalid config: ${what}`);
}

/** Checks cfg and fills in its defaults; throws InvalidConfigError. */
export function checkConfig(cfg: Config): Settings {
  if (cfg === null || typeof cfg !== "object") throw invalid("the config is not an object; give at least { endpoints: [\"http://…\"] }");
  if (!Array.isArray(cfg.endpoints) || cfg.endpoints.length === 0) {
    throw invalid("Config.endpoints is empty; give the base URL of at least one server, the local region first");
  }
  if (cfg.healthUrls !== undefined && (!Array.isArray(cfg.healthUrls) || cfg.healthUrls.length !== cfg.endpoints.length)) {
    throw invalid(
      `Config.healthUrls has ${Array.isArray(cfg.healthUrls) ? cfg.healthUrls.length : "no"} URLs for ${cfg.endpoints.length} endpoints; give one per endpoint, or none for each endpoint's /healthz`,
    );
  }
  const endpoints: EndpointURL[] = cfg.endpoints.map((e, i) => {
    const url = absURL(e, `Config.endpoints[${i}]`);
    if (url.search !== "" || url.hash !== "" || e.includes("?") || e.includes("#")) {
      throw invalid(`Config.endpoints[${i}] ${JSON.stringify(e)}: a base URL takes no query or fragment`);
    }
    const base = e.replace(/\/+$/, "");
    const path = url.pathname.replace(/\/+$/, "");
    let health = new URL(base + "/healthz");
    if (cfg.healthUrls !== undefined) health = absURL(cfg.healthUrls[i]!, `Config.healthUrls[${i}]`);
    return { base, url, mintPath: path + "/v1/ids:batch?count=", health };
  });
  const s: Settings = {
    endpoints,
    tls: cfg.tls,
    requestTimeoutMs: duration(cfg.requestTimeoutMs, "requestTimeoutMs", DEFAULT_REQUEST_TIMEOUT_MS),
    maxAgeMs: duration(cfg.maxAgeMs, "maxAgeMs", DEFAULT_MAX_AGE_MS),
    baseBackoffMs: duration(cfg.baseBackoffMs, "baseBackoffMs", DEFAULT_BASE_BACKOFF_MS),
    maxBackoffMs: duration(cfg.maxBackoffMs, "maxBackoffMs", DEFAULT_MAX_BACKOFF_MS),
    maxRetryAfterMs: duration(cfg.maxRetryAfterMs, "maxRetryAfterMs", DEFAULT_MAX_RETRY_AFTER_MS),
    probeIntervalMs: duration(cfg.probeIntervalMs, "probeIntervalMs", DEFAULT_PROBE_INTERVAL_MS),
    refillPeriodMs: duration(cfg.refillPeriodMs, "refillPeriodMs", 0),
    minRefill: count(cfg.minRefill, "minRefill", DEFAULT_MIN_REFILL),
    maxBuffer: count(cfg.maxBuffer, "maxBuffer", DEFAULT_MAX_BUFFER),
    lowWater: count(cfg.lowWater, "lowWater", 0),
    maxAttempts: count(cfg.maxAttempts, "maxAttempts", DEFAULT_MAX_ATTEMPTS),
    failureThreshold: count(cfg.failureThreshold, "failureThreshold", DEFAULT_FAILURE_THRESHOLD),
    recoveryProbes: count(cfg.recoveryProbes, "recoveryProbes", DEFAULT_RECOVERY_PROBES),
    schedule: undefined,
    logger: cfg.logger ?? silent,
    clock: cfg.clock ?? systemClock,
  };
  if (s.refillPeriodMs === 0) s.refillPeriodMs = s.maxAgeMs / 4;
  if (s.refillPeriodMs >= s.maxAgeMs) {
    throw invalid(`Config.refillPeriodMs (${s.refillPeriodMs}) is not less than maxAgeMs (${s.maxAgeMs}); IDs would expire before a refill is used up`);
  }
  if (s.maxBackoffMs < s.baseBackoffMs) {
    throw invalid(`Config.maxBackoffMs (${s.maxBackoffMs}) is less than baseBackoffMs (${s.baseBackoffMs})`);
  }
  if (s.maxBuffer < s.minRefill) throw invalid(`Config.maxBuffer (${s.maxBuffer}) is less than minRefill (${s.minRefill})`);
  if (s.maxBuffer > 1 << 26) {
    throw invalid(`Config.maxBuffer (${s.maxBuffer}) is over ${1 << 26}; a buffer that large holds more than maxAgeMs lets a caller use`);
  }
  if (s.lowWater >= s.maxBuffer) {
    throw invalid(`Config.lowWater (${s.lowWater}) is not less than maxBuffer (${s.maxBuffer}); the client would refill without end`);
  }
  if (cfg.schedule !== undefined) {
    if (cfg.schedule instanceof Schedule) {
      s.schedule = cfg.schedule;
    } else if (typeof cfg.schedule === "string") {
      try {
        s.schedule = Schedule.parse(cfg.schedule);
      } catch (e) {
        if (e instanceof InvalidScheduleError) throw invalid(`Config.schedule: ${e.message}`);
        throw e;
      }
    } else {
      throw invalid("Config.schedule is neither schedule text (such as \"v1\") nor a Schedule");
    }
  }
  if (cfg.tls !== undefined && (cfg.tls === null || typeof cfg.tls !== "object")) throw invalid("Config.tls is not an object");
  if (cfg.clock !== undefined && (typeof cfg.clock?.now !== "function" || typeof cfg.clock.sleep !== "function")) {
    throw invalid("Config.clock is not a Clock (now, wallMs, sleep)");
  }
  return s;
}

function absURL(s: unknown, name: string): URL {
  let u: URL;
  try {
    if (typeof s !== "string") throw new TypeError("not a string");
    u = new URL(s);
  } catch {
    throw invalid(`${name} ${JSON.stringify(s)}: not an absolute http or https URL (such as https://ids.example:8080)`);
  }
  if ((u.protocol !== "http:" && u.protocol !== "https:") || u.hostname === "") {
    throw invalid(`${name} ${JSON.stringify(s)}: not an absolute http or https URL (such as https://ids.example:8080)`);
  }
  return u;
}

function duration(v: number | undefined, name: string, def: number): number {
  if (v === undefined || v === 0) return def;
  if (typeof v !== "number" || !Number.isFinite(v)) throw invalid(`Config.${name} is ${String(v)}; use a number of milliseconds, or 0 for the default`);
  if (v < 0) throw invalid(`Config.${name} is ${v}; use a positive number of milliseconds, or 0 for the default`);
  return v;
}

function count(v: number | undefined, name: string, def: number): number {
  if (v === undefined || v === 0) return def;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw invalid(`Config.${name} is ${String(v)}; use a whole number, or 0 for the default`);
  if (v < 0) throw invalid(`Config.${name} is ${v}; use a positive number, or 0 for the default`);
  return v;
}
