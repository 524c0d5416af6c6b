/**
 * @snowfence/client — a client of the snowfence ID service for Node.js.
 *
 * It fetches 64-bit IDs in batches (POST /v1/ids:batch?count=N) into a
 * buffer ahead of need and hands them out one by one as `bigint`, retrying
 * and failing over across an ordered list of endpoints. See README.md.
 *
 * ```ts
 * import { Client } from "@snowfence/client";
 * const client = new Client({ endpoints: ["https://ids.eu-west.corp", "https://ids.us-east.corp"] });
 * const id: bigint = await client.next();
 * await client.close();
 * ```
 *
 * @module
 */
export { Client } from "./client.js";
export type { Stats } from "./client.js";
export type { Config, TlsOptions, Logger } from "./config.js";
export {
  DEFAULT_MAX_AGE_MS,
  DEFAULT_MIN_REFILL,
  DEFAULT_MAX_BUFFER,
  DEFAULT_REQUEST_TIMEOUT_MS,
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_BASE_BACKOFF_MS,
  DEFAULT_MAX_BACKOFF_MS,
  DEFAULT_MAX_RETRY_AFTER_MS,
  DEFAULT_FAILURE_THRESHOLD,
  DEFAULT_RECOVERY_PROBES,
  DEFAULT_PROBE_INTERVAL_MS,
} from "./config.js";
export type { Clock } from "./clock.js";
export { systemClock } from "./clock.js";
export { parseId, idToString, MAX_ID } from "./id.js";
export { MAX_BATCH } from "./parse.js";
export { Schedule, decode, V1, V2 } from "./decode.js";
export type { Decoded, Layout } from "./decode.js";
export {
  SnowfenceError,
  InvalidConfigError,
  InvalidCountError,
  InvalidIdError,
  InvalidScheduleError,
  ClosedError,
  TransportError,
  BadResponseError,
  ServerError,
  RefusedError,
  RateLimitedError,
  RejectedError,
  UnavailableError,
} from "./errors.js";
