package io.github.snowfence.client;

/**
 * A 200 whose body is not exactly a batch of the count asked for, in
 * strictly increasing order, or (with a repeat-check schedule) one that
 * repeats IDs received before. It yields no IDs and counts as a failure of
 * the endpoint; it reaches callers as the cause of an {@link UnavailableException}.
 */
public final class BadResponseException extends SnowfenceException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param endpoint the base URL that answered
     * @param what     what is wrong with the answer
     */
    public BadResponseException(String endpoint, String what) {
        super("snowfence client: malformed response from " + endpoint + ": " + what, null);
    }
}
