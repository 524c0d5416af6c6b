package io.github.snowfence.client;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.http.HttpClient;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import javax.net.ssl.SSLContext;

/**
 * A builder's settings checked and with their defaults filled in (the Go
 * client's check in config.go, rule for rule). Durations are in nanoseconds.
 */
final class Settings {
    /** The largest buffer: one that large holds more than maxAge lets a caller use. */
    static final int MAX_MAX_BUFFER = 1 << 26;

    final List<String> endpoints = new ArrayList<>(), mintUrls = new ArrayList<>(), healthUrls = new ArrayList<>();
    long requestTimeout, maxAge, refillPeriod, baseBackoff, maxBackoff, maxRetryAfter, probeInterval;
    int minRefill, maxBuffer, lowWater, maxAttempts, failureThreshold, recoveryProbes;
    Schedule repeatCheck;
    System.Logger logger;
    TimeSource time;
    HttpClient httpClient;
    SSLContext sslContext;

    private static InvalidConfigException invalid(String message) {
        return new InvalidConfigException(message, null);
    }

    static Settings check(SnowfenceClient.Builder b) {
        Settings s = new Settings();
        if (b.endpoints == null || b.endpoints.isEmpty()) {
            throw invalid("endpoints is empty; give the base URL of at least one server, the local region first");
        }
        if (b.healthUrls != null && b.healthUrls.size() != b.endpoints.size()) {
            throw invalid("healthUrls has " + b.healthUrls.size() + " URLs for " + b.endpoints.size()
                    + " endpoints; give one per endpoint, or none for each endpoint's /healthz");
        }
        for (int i = 0; i < b.endpoints.size(); i++) {
            String e = b.endpoints.get(i);
            String base;
            try {
                base = baseUrl(e);
            } catch (IllegalArgumentException x) {
                throw invalid("endpoints[" + i + "] \"" + e + "\": " + x.getMessage());
            }
            s.endpoints.add(base);
            s.mintUrls.add(base + "/v1/ids:batch?count=");
            String h = base + "/healthz";
            if (b.healthUrls != null) {
                h = b.healthUrls.get(i);
                try {
                    absUrl(h);
                } catch (IllegalArgumentException x) {
                    throw invalid("healthUrls[" + i + "] \"" + h + "\": " + x.getMessage());
                }
            }
            s.healthUrls.add(h);
        }
        if (b.httpClient != null && (b.sslContext != null || b.caFile != null)) {
            throw invalid("both httpClient and TLS settings are given; set the TLS of your own HttpClient, or leave httpClient unset");
        }
        if (b.sslContext != null && b.caFile != null) {
            throw invalid("both sslContext and tls(files) are given; give one");
        }
        s.requestTimeout = duration("requestTimeout", b.requestTimeout, Defaults.REQUEST_TIMEOUT);
        s.maxAge = duration("maxAge", b.maxAge, Defaults.MAX_AGE);
        s.baseBackoff = duration("baseBackoff", b.baseBackoff, Defaults.BASE_BACKOFF);
        s.maxBackoff = duration("maxBackoff", b.maxBackoff, Defaults.MAX_BACKOFF);
        s.maxRetryAfter = duration("maxRetryAfter", b.maxRetryAfter, Defaults.MAX_RETRY_AFTER);
        s.probeInterval = duration("probeInterval", b.probeInterval, Defaults.PROBE_INTERVAL);
        s.refillPeriod = duration("refillPeriod", b.refillPeriod, Duration.ZERO);
        if (s.refillPeriod == 0) {
            s.refillPeriod = s.maxAge / 4;
        }
        if (s.refillPeriod >= s.maxAge) {
            throw invalid("refillPeriod (" + Duration.ofNanos(s.refillPeriod) + ") is not less than maxAge ("
                    + Duration.ofNanos(s.maxAge) + "); IDs would expire before a refill is used up");
        }
        if (s.maxBackoff < s.baseBackoff) {
            throw invalid("maxBackoff (" + Duration.ofNanos(s.maxBackoff) + ") is less than baseBackoff ("
                    + Duration.ofNanos(s.baseBackoff) + ")");
        }
        s.minRefill = count("minRefill", b.minRefill, Defaults.MIN_REFILL);
        s.maxBuffer = count("maxBuffer", b.maxBuffer, Defaults.MAX_BUFFER);
        s.lowWater = count("lowWater", b.lowWater, 0);
        s.maxAttempts = count("maxAttempts", b.maxAttempts, Defaults.MAX_ATTEMPTS);
        s.failureThreshold = count("failureThreshold", b.failureThreshold, Defaults.FAILURE_THRESHOLD);
        s.recoveryProbes = count("recoveryProbes", b.recoveryProbes, Defaults.RECOVERY_PROBES);
        if (s.maxBuffer < s.minRefill) {
            throw invalid("maxBuffer (" + s.maxBuffer + ") is less than minRefill (" + s.minRefill + ")");
        }
        if (s.maxBuffer > MAX_MAX_BUFFER) {
            throw invalid("maxBuffer (" + s.maxBuffer + ") is over " + MAX_MAX_BUFFER
                    + "; a buffer that large holds more than maxAge lets a caller use");
        }
        if (s.lowWater >= s.maxBuffer) {
            throw invalid("lowWater (" + s.lowWater + ") is not less than maxBuffer (" + s.maxBuffer
                    + "); the client would refill without end");
        }
        s.repeatCheck = b.repeatCheck;
        s.logger = b.logger != null ? b.logger : System.getLogger("io.github.snowfence.client");
        s.time = b.time != null ? b.time : TimeSource.system();
        s.httpClient = b.httpClient;
        s.sslContext = b.sslContext;
        if (b.caFile != null) {
            try {
                s.sslContext = Pem.sslContext(b.caFile, b.certFile, b.keyFile);
            } catch (IOException | GeneralSecurityException | RuntimeException x) {
                throw new InvalidConfigException("tls: cannot use CA " + b.caFile + ", certificate " + b.certFile + ", key "
                        + b.keyFile + ": " + x.getMessage(), x);
            }
        }
        return s;
    }

    private static long duration(String name, Duration d, Duration def) {
        if (d == null || d.isZero()) {
            return def.toNanos();
        }
        if (d.isNegative()) {
            throw invalid(name + " is " + d + "; use a positive duration, or zero for the default");
        }
        try {
            return d.toNanos();
        } catch (ArithmeticException x) {
            throw invalid(name + " is " + d + ", more than 292 years; use a shorter duration");
        }
    }

    private static int count(String name, int v, int def) {
        if (v < 0) {
            throw invalid(name + " is " + v + "; use a positive number, or zero for the default");
        }
        return v == 0 ? def : v;
    }

    /** Checks an endpoint and returns it without a trailing slash. */
    static String baseUrl(String e) {
        URI u = absUrl(e);
        if (u.getRawQuery() != null || u.getRawFragment() != null) {
            throw new IllegalArgumentException("a base URL takes no query or fragment");
        }
        int end = e.length();
        while (end > 0 && e.charAt(end - 1) == '/') {
            end--;
        }
        return e.substring(0, end);
    }

    static URI absUrl(String s) {
        URI u;
        try {
            u = new URI(s);
        } catch (URISyntaxException x) {
            throw new IllegalArgumentException(x.getMessage());
        }
        String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https") || u.getRawAuthority() == null || u.getRawAuthority().isEmpty()) {
            throw new IllegalArgumentException("not an absolute http or https URL (such as https://ids.example:8080)");
        }
        return u;
    }
}
