package io.github.snowfence.client;

/** The client refused its configuration at {@link SnowfenceClient.Builder#build()}. */
public final class InvalidConfigException extends SnowfenceException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param message which setting is wrong and how to fix it
     * @param cause   the underlying failure (e.g. a PEM file that cannot be read), or null
     */
    public InvalidConfigException(String message, Throwable cause) {
        super("invalid configuration: snowfence client: " + message, cause);
    }
}
