package io.github.snowfence.client;

import java.time.Duration;

/**
 * A non-200 answer from an endpoint: {@link RateLimitedException} for 429,
 * {@link RejectedException} for another 4xx, {@link RefusedException}
 * otherwise (5xx, or an unexpected 1xx–3xx such as a redirect, which the
 * client never follows).
 */
public abstract sealed class ServerException extends SnowfenceException
        permits RefusedException, RateLimitedException, RejectedException {
    private static final long serialVersionUID = 1L;
    /** The base URL of the endpoint that answered. */
    private final String endpoint;
    /** The HTTP status. */
    private final int status;
    /** The error body's fields, empty when absent. */
    private final String code, serverMessage, reason;
    /** The Retry-After header, zero without one. */
    private final Duration retryAfter;

    ServerException(String endpoint, int status, String code, String serverMessage, String reason, Duration retryAfter) {
        super(describe(endpoint, status, code, serverMessage, reason), null);
        this.endpoint = endpoint;
        this.status = status;
        this.code = code;
        this.serverMessage = serverMessage;
        this.reason = reason;
        this.retryAfter = retryAfter;
    }

    /** Returns the exception for a status: 429, another 4xx, or anything else. */
    static ServerException of(String endpoint, int status, String code, String message, String reason, Duration retryAfter) {
        if (status == 429) {
            return new RateLimitedException(endpoint, status, code, message, reason, retryAfter);
        }
        if (status >= 400 && status < 500) {
            return new RejectedException(endpoint, status, code, message, reason, retryAfter);
        }
        return new RefusedException(endpoint, status, code, message, reason, retryAfter);
    }

    private static String describe(String endpoint, int status, String code, String message, String reason) {
        StringBuilder b = new StringBuilder("snowfence client: ").append(endpoint).append(" answered ").append(status);
        String text = HttpStatus.text(status);
        if (!text.isEmpty()) {
            b.append(' ').append(text);
        }
        if (!code.isEmpty()) {
            b.append(" (").append(code);
            if (!reason.isEmpty()) {
                b.append(", ").append(reason);
            }
            b.append(')');
        }
        if (!message.isEmpty()) {
            b.append(": ").append(message);
        }
        return b.toString();
    }

    /**
     * Returns the base URL of the endpoint that answered.
     *
     * @return the base URL of the endpoint that answered
     */
    public String endpoint() {
        return endpoint;
    }

    /**
     * Returns the HTTP status.
     *
     * @return the HTTP status
     */
    public int status() {
        return status;
    }

    /**
     * Returns the error body's {@code code}, empty when the body was not the server's JSON error (e.g. a proxy's).
     *
     * @return the error body's {@code code}, empty when the body was not the server's JSON error (e.g. a proxy's)
     */
    public String code() {
        return code;
    }

    /**
     * Returns the error body's {@code message}, or empty.
     *
     * @return the error body's {@code message}, or empty
     */
    public String serverMessage() {
        return serverMessage;
    }

    /**
     * Returns the error body's {@code reason}, or empty.
     *
     * @return the error body's {@code reason}, or empty
     */
    public String reason() {
        return reason;
    }

    /**
     * Returns the Retry-After header as a duration, {@link Duration#ZERO} without one.
     *
     * @return the Retry-After header as a duration, {@link Duration#ZERO} without one
     */
    public Duration retryAfter() {
        return retryAfter;
    }

    /** Reports whether another attempt may succeed: not for a 4xx other than 429 and 408. */
    boolean retryable() {
        return status >= 500 || status == 429 || status == 408 || status < 400;
    }
}
