package io.github.snowfence.client;

import java.time.Duration;

/** A 4xx other than 429: the server will not take the request as sent (a wrong URL, a missing permission). Not retried: {@code next()} throws it at once. */
public final class RejectedException extends ServerException {
    private static final long serialVersionUID = 1L;

    RejectedException(String endpoint, int status, String code, String message, String reason, Duration retryAfter) {
        super(endpoint, status, code, message, reason, retryAfter);
    }

    @Override
    SnowfenceException rethrown() {
        return new RejectedException(endpoint(), status(), code(), serverMessage(), reason(), retryAfter());
    }
}
