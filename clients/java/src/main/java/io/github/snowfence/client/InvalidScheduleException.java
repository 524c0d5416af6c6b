package io.github.snowfence.client;

/** A layout schedule text that {@link Schedule#parse(String)} refuses, as {@code snowfence decode --schedule} does. */
public final class InvalidScheduleException extends SnowfenceException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message what is wrong with the schedule
     */
    public InvalidScheduleException(String message) {
        super("invalid layout: " + message, null);
    }
}
