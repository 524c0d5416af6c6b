package io.github.snowfence.client;

/**
 * A refill gave up: {@code maxAttempts} requests, across every endpoint,
 * brought no IDs. {@link #getCause()} is the last attempt's failure: a
 * {@link ServerException} ({@link RefusedException}, {@link RateLimitedException}),
 * a {@link BadResponseException}, or an {@link java.io.IOException} (connection
 * refused, a timeout, a body cut short).
 */
public final class UnavailableException extends SnowfenceException {
    private static final long serialVersionUID = 1L;
    /** How many requests the refill sent. */
    private final int attempts;

    /**
     * Creates the exception.
     *
     * @param attempts how many requests the refill sent
     * @param last     the last attempt's failure
     */
    public UnavailableException(int attempts, Throwable last) {
        super("snowfence client: no endpoint issued IDs after " + attempts
                + " attempts; check that a server in endpoints is reachable and issuing (GET /healthz): last failure: "
                + last, last);
        this.attempts = attempts;
    }

    /**
     * Returns how many requests the refill sent.
     *
     * @return how many requests the refill sent
     */
    public int attempts() {
        return attempts;
    }

    @Override
    SnowfenceException rethrown() {
        return new UnavailableException(attempts, getCause());
    }
}
