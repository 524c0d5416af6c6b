package io.github.snowfence.client;

/**
 * The base of every exception the client throws. It is unchecked: an ID is
 * taken where a row is about to be written, and the only useful answer to
 * "no server issued IDs" there is to fail that request, as with a database
 * that is down; a checked exception would make every call site wrap or
 * redeclare it. Catch a subclass to tell the cases apart:
 * {@link UnavailableException} (a refill gave up), {@link RejectedException}
 * (a 4xx, not retried), {@link ClosedException}, {@link InvalidConfigException},
 * {@link InvalidCountException}, {@link InvalidIdException},
 * {@link InvalidScheduleException}, {@link WaitInterruptedException}; and,
 * as the last failure inside an {@code UnavailableException},
 * {@link RefusedException}, {@link RateLimitedException} and
 * {@link BadResponseException}.
 */
public class SnowfenceException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates an exception.
     *
     * @param message what went wrong and what to do
     * @param cause   the underlying failure, or null
     */
    public SnowfenceException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * Returns the exception to throw to one more caller waiting on the same
     * refill: a fresh instance of the same type and content, so that each
     * caller's exception carries its own stack trace and suppressed list.
     * The refill's failure is shared by every caller that waited on it.
     */
    SnowfenceException rethrown() {
        return new SnowfenceException(getMessage(), getCause());
    }
}
