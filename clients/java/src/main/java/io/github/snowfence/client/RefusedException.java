package io.github.snowfence.client;

import java.time.Duration;

/** A 503 (or another 5xx, or an unexpected status such as a redirect): the server is up but not issuing (fenced, clock trouble, draining). Retried, and counted as a failure of the endpoint. */
public final class RefusedException extends ServerException {
    private static final long serialVersionUID = 1L;

    RefusedException(String endpoint, int status, String code, String message, String reason, Duration retryAfter) {
        super(endpoint, status, code, message, reason, retryAfter);
    }

    @Override
    SnowfenceException rethrown() {
        return new RefusedException(endpoint(), status(), code(), serverMessage(), reason(), retryAfter());
    }
}
