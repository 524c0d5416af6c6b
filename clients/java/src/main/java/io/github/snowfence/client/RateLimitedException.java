package io.github.snowfence.client;

import java.time.Duration;

/** A 429: this caller is over its quota. Retried after Retry-After on the same endpoint; not a failure of the endpoint. */
public final class RateLimitedException extends ServerException {
    private static final long serialVersionUID = 1L;

    RateLimitedException(String endpoint, int status, String code, String message, String reason, Duration retryAfter) {
        super(endpoint, status, code, message, reason, retryAfter);
    }

    @Override
    SnowfenceException rethrown() {
        return new RateLimitedException(endpoint(), status(), code(), serverMessage(), reason(), retryAfter());
    }
}
