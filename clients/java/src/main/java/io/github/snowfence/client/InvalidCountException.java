package io.github.snowfence.client;

/** {@link SnowfenceClient#nextN(int)} was asked for fewer than 1 or more than 1,000 IDs. */
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
}
