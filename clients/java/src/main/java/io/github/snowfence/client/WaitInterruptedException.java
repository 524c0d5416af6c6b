package io.github.snowfence.client;

/**
 * A thread waiting in {@code next()} or {@code nextN()} for a refill was
 * interrupted. The thread's interrupt status is set again before this is
 * thrown; IDs the call had taken are discarded, never handed out.
 */
public final class WaitInterruptedException extends SnowfenceException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param cause the interruption
     */
    public WaitInterruptedException(InterruptedException cause) {
        super("snowfence client: interrupted while waiting for IDs", cause);
    }
}
