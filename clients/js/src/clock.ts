/**
 * The clock seam: the client reads time and sleeps only through a
 * {@link Clock}, so tests move time by hand (as the Go client's Config.Clock).
 *
 * @module
 */

/**
 * What the client reads time from and sleeps on. The default,
 * {@link systemClock}, uses performance.now() and timers; tests inject a
 * clock they advance by hand.
 */
export interface Clock {
  /** The monotonic clock in milliseconds (fractions allowed), from any origin. */
  now(): number;
  /** The wall clock in Unix milliseconds (for Retry-After given as an HTTP date). */
  wallMs(): number;
  /**
   * Resolves true after ms milliseconds, or false as soon as signal is
   * aborted (at once if it already is). keepAlive false means the wait must
   * not keep the process alive (the health probes' waits): the system
   * clock unref()s its timer then.
   */
  sleep(ms: number, signal: AbortSignal, keepAlive: boolean): Promise<boolean>;
}

/** The system's clocks: performance.now(), Date.now() and setTimeout. */
export const systemClock: Clock = {
  now: () => performance.now(),
  wallMs: () => Date.now(),
  sleep(ms: number, signal: AbortSignal, keepAlive: boolean): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve(false);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener("abort", onAbort);
        resolve(true);
      }, ms);
      if (!keepAlive) timer.unref();
      signal.addEventListener("abort", onAbort, { once: true });
    });
  },
};
