package io.github.snowfence.client;

/**
 * The clocks and sleep the client uses: the monotonic clock for the age of
 * buffered IDs, the consumption rate, backoff and probing; the wall clock
 * only for a Retry-After given as an HTTP date. The default is
 * {@link #system()}. Tests give a fake one so that no test sleeps stand in
 * for synchronisation (the Go client's Config.Clock).
 *
 * <p>The request timeout is not measured by it: it guards against real
 * network stalls and uses the JDK's timers.
 */
public interface TimeSource {
    /**
     * Returns the monotonic clock in nanoseconds, as {@link System#nanoTime()}:
     * only differences mean anything.
     *
     * @return the reading
     */
    long nanoTime();

    /**
     * Returns the wall clock in Unix milliseconds.
     *
     * @return the reading
     */
    long currentTimeMillis();

    /**
     * Waits until {@link #nanoTime()} has advanced by at least nanos.
     *
     * @param nanos how long to wait
     * @throws InterruptedException if the thread is interrupted (the client
     *         interrupts its threads when it closes)
     */
    void sleep(long nanos) throws InterruptedException;

    /**
     * Returns the system's clocks: {@link System#nanoTime()},
     * {@link System#currentTimeMillis()} and {@link Thread#sleep(long, int)}.
     *
     * @return the system time source
     */
    static TimeSource system() {
        return SystemTime.INSTANCE;
    }

}
