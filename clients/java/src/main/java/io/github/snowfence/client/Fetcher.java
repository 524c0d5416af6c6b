package io.github.snowfence.client;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.Map;

/**
 * Fetches one batch of IDs, retrying and failing over (the Go client's
 * fetch, retry, backoff and attempt in refill.go, rule for rule). Owned by
 * the refill thread: one request at a time.
 */
final class Fetcher {
    private final SnowfenceClient c;
    private final Settings s;
    private final Transport transport;
    private final Endpoints eps;
    private final RepeatCheck repeats;
    /** The IDs of the last successful fetch, ids[0..n). */
    final long[] ids = new long[SnowfenceClient.MAX_BATCH];
    /** The clock's reading when the last successful fetch's request was sent. */
    long sent;

    Fetcher(SnowfenceClient c, Settings s, Transport transport, Endpoints eps) {
        this.c = c;
        this.s = s;
        this.transport = transport;
        this.eps = eps;
        this.repeats = s.repeatCheck == null ? null : new RepeatCheck(s.repeatCheck);
    }

    /**
     * Gets n IDs into {@link #ids}: up to maxAttempts requests, with a
     * jittered exponential wait after each failure (at least the Retry-After
     * of a 503 or 429, up to maxRetryAfter), and none after a failure that
     * took an endpoint out of service while another is in service. The
     * wait's exponent restarts the first time the fetch fails over from each
     * endpoint: a failure says how the endpoint it came from is doing, not
     * the next one, so a region with several dead endpoints does not leave
     * the last of them (and the healthy region behind it) to be tried only
     * after waits grown to seconds. Otherwise it grows, so a fleet that is
     * down entirely, or flapping in and out of service, is still backed off
     * from. A 4xx other than 429 is thrown at once.
     *
     * @throws ClosedException      once the client closes
     * @throws RejectedException    for a 4xx other than 429 (and 408)
     * @throws UnavailableException after maxAttempts failed requests
     */
    void fetch(int n) {
        Exception last = null;
        int step = 0; // failures since the exponent last restarted
        boolean[] left = null; // endpoints this fetch has failed over from
        for (int a = 0; a < s.maxAttempts; a++) {
            Endpoints.Pick p = eps.pick();
            Exception err;
            try {
                attempt(p, n);
                c.requests.incrementAndGet();
                eps.succeeded(p.index());
                return;
            } catch (InterruptedException e) {
                throw new ClosedException();
            } catch (IOException | SnowfenceException e) {
                err = e;
            }
            if (c.closing) {
                throw new ClosedException();
            }
            c.failures.incrementAndGet();
            last = err;
            ServerException se = err instanceof ServerException x ? x : null;
            if (se != null && !se.retryable()) {
                throw se;
            }
            // Over quota is not ill health: the endpoint stays in service and
            // the client waits as it was told.
            boolean failover = false;
            if (se == null || se.status() != 429) {
                failover = eps.failed(p.index(), err);
            }
            if (failover) {
                // Not again from the same endpoint: one that answers
                // /healthz but fails every mint is put back by the prober
                // and taken out again, and must not keep a fleet that
                // issues nothing at baseBackoff.
                if (left == null) {
                    left = new boolean[eps.size()];
                }
                if (!left[p.index()]) {
                    step = 0;
                }
                left[p.index()] = true;
                continue;
            }
            if (a == s.maxAttempts - 1) {
                continue;
            }
            long retryAfter = se != null ? se.retryAfter().toNanos() : 0;
            try {
                c.time.sleep(backoff(step, retryAfter));
            } catch (InterruptedException e) {
                throw new ClosedException();
            }
            step++;
        }
        throw new UnavailableException(s.maxAttempts, last);
    }

    /**
     * Returns the wait after the a-th failure (from 0) since the exponent
     * last restarted: between half and all of baseBackoff·2^a, at most
     * maxBackoff; and at least retryAfter (cut to maxRetryAfter) plus up to
     * a tenth more, so that callers told the same Retry-After do not all
     * come back in the same instant.
     */
    long backoff(int a, long retryAfter) {
        long d = s.maxBackoff;
        if (a < 30 && s.baseBackoff <= s.maxBackoff >> a) {
            d = Math.min(s.baseBackoff << a, s.maxBackoff);
        }
        long w = d / 2 + c.jitter.applyAsLong(d / 2);
        if (retryAfter > 0) {
            long r = Math.min(retryAfter, s.maxRetryAfter);
            w = Math.max(w, r + c.jitter.applyAsLong(r / 10));
        }
        return w;
    }

    /**
     * Sends one request for n IDs. Only a complete 200 whose body parses as
     * exactly n strictly increasing IDs yields IDs; a body cut short (a
     * dropped connection, a timeout) yields none, whatever part of it came.
     */
    private void attempt(Endpoints.Pick p, int n) throws IOException, InterruptedException {
        String url = p.mint() + n;
        long sentAt = c.time.nanoTime();
        Transport.Answer ans = transport.post(url, s.requestTimeout);
        if (!ans.finalUrl().equals(url)) {
            throw new BadResponseException(p.base(), "the answer came from " + ans.finalUrl() + ", after a redirect");
        }
        if (ans.status() != 200) {
            throw serverError(p.base(), ans);
        }
        if (!isJson(ans.contentType())) {
            throw new BadResponseException(p.base(), "Content-Type \"" + ans.contentType() + "\" is not application/json");
        }
        if (ans.contentLength() > Transport.MAX_BATCH_BODY) {
            throw new BadResponseException(p.base(), "a body of " + ans.contentLength() + " bytes, more than a batch takes");
        }
        String bad = BatchParser.parse(ans.body(), ans.bodyLength(), n, ids);
        if (bad != null) {
            throw new BadResponseException(p.base(), bad);
        }
        if (repeats != null) {
            String why = repeats.check(ids, n);
            if (why != null) {
                throw new BadResponseException(p.base(), why);
            }
        }
        sent = sentAt;
    }

    /** Reports whether a Content-Type is application/json (any parameters, any case). */
    static boolean isJson(String ct) {
        int semi = ct.indexOf(';');
        String mt = (semi < 0 ? ct : ct.substring(0, semi)).strip();
        return mt.equalsIgnoreCase("application/json");
    }

    /** Reads a non-200 answer. */
    private ServerException serverError(String base, Transport.Answer ans) {
        String code = "", message = "", reason = "";
        try {
            Object v = Json.parse(new String(ans.body(), 0, ans.bodyLength(), StandardCharsets.UTF_8));
            if (v instanceof Map<?, ?> m && m.get("error") instanceof Map<?, ?> e) {
                code = e.get("code") instanceof String x ? x : "";
                message = e.get("message") instanceof String x ? x : "";
                reason = e.get("reason") instanceof String x ? x : "";
            }
        } catch (IllegalArgumentException notJson) {
            // a proxy's body: no fields
        }
        return ServerException.of(base, ans.status(), code, message, reason, retryAfter(ans.retryAfter()));
    }

    /**
     * Reads a Retry-After header: whole seconds, or an HTTP date (measured
     * against the time source's wall clock). Anything else is zero.
     */
    Duration retryAfter(String h) {
        if (h.isEmpty()) {
            return Duration.ZERO;
        }
        if (h.chars().allMatch(ch -> ch >= '0' && ch <= '9') && h.length() <= 10) {
            long sec = Long.parseLong(h);
            if (sec <= 0xFFFF_FFFFL) {
                return Duration.ofSeconds(sec);
            }
            return Duration.ZERO;
        }
        try {
            long at = ZonedDateTime.parse(h, DateTimeFormatter.RFC_1123_DATE_TIME.withLocale(Locale.ROOT)).toInstant().toEpochMilli();
            long d = at - c.time.currentTimeMillis();
            return d > 0 ? Duration.ofMillis(d) : Duration.ZERO;
        } catch (DateTimeParseException e) {
            return Duration.ZERO;
        }
    }
}
