package io.github.snowfence.client;

/** {@link SnowfenceClient#nextN(int)} was asked for fewer than 1 or more than 1,000 IDs, or more than its buffer holds. */
public final class InvalidCountException extends SnowfenceException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param n the count asked for
     */
    public InvalidCountException(int n) {
        super("invalid count: " + n + "; ask for 1 to " + SnowfenceClient.MAX_BATCH + " IDs", null);
    }

    /**
     * Creates the exception for a count above the client's buffer.
     *
     * @param n the count asked for
     * @param maxBuffer the client's maxBuffer
     */
    public InvalidCountException(int n, int maxBuffer) {
        super("invalid count: " + n + " is more than the buffer holds (maxBuffer " + maxBuffer
                + "); ask for at most maxBuffer IDs at once, or raise maxBuffer", null);
    }
}
