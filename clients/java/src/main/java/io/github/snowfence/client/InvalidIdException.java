package io.github.snowfence.client;

/** Text that is not an ID in canonical decimal, or a negative ID given to decode. */
public final class InvalidIdException extends SnowfenceException {
    private static final long serialVersionUID = 1L;
    /** The text refused, cut to 40 characters. */
    private final String input;

    /**
     * Creates the exception.
     *
     * @param input  the text refused (cut to 40 characters)
     * @param reason why it is not an ID
     */
    public InvalidIdException(String input, String reason) {
        super("invalid ID \"" + input + "\": " + reason, null);
        this.input = input;
    }

    /**
     * Returns the text refused, cut to 40 characters.
     *
     * @return the text refused, cut to 40 characters
     */
    public String input() {
        return input;
    }
}
