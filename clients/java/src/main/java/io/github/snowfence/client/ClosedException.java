package io.github.snowfence.client;

/** A call on a closed client, or a call that was waiting when the client was closed. */
public final class ClosedException extends SnowfenceException {
    private static final long serialVersionUID = 1L;

    /** Creates the exception. */
    public ClosedException() {
        super("snowfence client: closed", null);
    }

    @Override
    SnowfenceException rethrown() {
        return new ClosedException();
    }
}
