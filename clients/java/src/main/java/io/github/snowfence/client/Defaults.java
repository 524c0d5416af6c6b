package io.github.snowfence.client;

import java.time.Duration;

/** The defaults of the settings left unset (or zero), the Go client's constants. */
public final class Defaults {
    private Defaults() {
    }

    /**
     * How long a buffered ID may wait to be handed out, counted from the
     * moment the request that fetched it was sent: one second, the
     * resolution people read timestamps in logs at (see
     * {@link SnowfenceClient.Builder#maxAge(Duration)}).
     */
    public static final Duration MAX_AGE = Duration.ofSeconds(1);
    /** The smallest refill: a caller taking one ID now and then gets a few more with it. */
    public static final int MIN_REFILL = 8;
    /** The most IDs a client holds: 512 KiB of longs, a quarter second at one server's v1 rate. */
    public static final int MAX_BUFFER = 1 << 16;
    /** The bound on one request to an endpoint, its body included. */
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(2);
    /** How many requests one refill sends before it gives up with {@link UnavailableException}. */
    public static final int MAX_ATTEMPTS = 8;
    /** The smallest bound of the jittered exponential wait between attempts. */
    public static final Duration BASE_BACKOFF = Duration.ofMillis(50);
    /** The largest wait between attempts (a Retry-After may be longer, up to {@link #MAX_RETRY_AFTER}). */
    public static final Duration MAX_BACKOFF = Duration.ofSeconds(2);
    /** The longest Retry-After honoured; a longer one is cut to it. */
    public static final Duration MAX_RETRY_AFTER = Duration.ofSeconds(10);
    /** How many consecutive failed requests take an endpoint out of service. */
    public static final int FAILURE_THRESHOLD = 3;
    /** How many consecutive healthy probes put an endpoint back in service. */
    public static final int RECOVERY_PROBES = 3;
    /** How often an endpoint out of service is probed. */
    public static final Duration PROBE_INTERVAL = Duration.ofSeconds(1);
}
