package io.github.snowfence.client;

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The conformance runner (clients/conformance/PROTOCOL.md): reads one JSON
 * request a line from stdin and answers each with one JSON line on stdout,
 * translating it into one call on the library. It holds no logic of its own
 * beyond that translation; every check is the driver's. It lives in the
 * library's package only to reuse its JSON reader, and uses nothing else
 * that is not public. Not part of the shipped jar.
 */
public final class ConformanceRunner {
    private SnowfenceClient client;

    private ConformanceRunner() {
    }

    /**
     * Runs the runner until end of input, then closes any open client.
     *
     * @param args none
     * @throws IOException if stdin or stdout fails
     */
    public static void main(String[] args) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Writer out = new BufferedWriter(new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), StandardCharsets.UTF_8));
        ConformanceRunner r = new ConformanceRunner();
        for (String line; (line = in.readLine()) != null;) {
            if (line.isBlank()) {
                continue;
            }
            long t0 = System.nanoTime();
            StringBuilder b = new StringBuilder(64);
            try {
                r.handle(line, b);
            } catch (BadRequest e) {
                b.setLength(0);
                error(b, "bad_request", e.getMessage());
            } catch (RuntimeException e) {
                b.setLength(0);
                error(b, kind(e), String.valueOf(e.getMessage()));
            }
            double ms = (System.nanoTime() - t0) / 1e6;
            b.append(",\"elapsed_ms\":").append(ms).append("}\n");
            out.write(b.toString());
            out.flush();
        }
        if (r.client != null) {
            r.client.close();
        }
    }

    /** A request the runner could not understand. */
    private static final class BadRequest extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadRequest(String message) {
            super(message);
        }
    }

    /** The protocol's error kind of an exception of the library. */
    static String kind(Throwable e) {
        if (e instanceof UnavailableException) {
            return "unavailable";
        } else if (e instanceof RejectedException) {
            return "rejected";
        } else if (e instanceof ClosedException) {
            return "closed";
        } else if (e instanceof InvalidConfigException) {
            return "invalid_config";
        } else if (e instanceof InvalidCountException) {
            return "invalid_count";
        } else if (e instanceof InvalidScheduleException) {
            return "invalid_schedule";
        } else if (e instanceof InvalidIdException) {
            return "invalid_id";
        }
        return "other";
    }

    /** Writes an answer without its closing brace (elapsed_ms follows). */
    private static void error(StringBuilder b, String kind, String message) {
        b.append("{\"ok\":false,\"error\":{\"kind\":").append(Json.quote(kind)).append(",\"message\":")
                .append(Json.quote(message)).append('}');
    }

    private static void ids(StringBuilder b, long[] ids, int n) {
        b.append("\"ids\":[");
        for (int i = 0; i < n; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append('"').append(ids[i]).append('"');
        }
        b.append(']');
    }

    private void handle(String line, StringBuilder b) {
        Map<?, ?> req;
        try {
            req = Json.parse(line) instanceof Map<?, ?> m ? m : null;
        } catch (IllegalArgumentException e) {
            throw new BadRequest("not JSON: " + e.getMessage());
        }
        if (req == null || !(req.get("op") instanceof String op)) {
            throw new BadRequest("a request is a JSON object with an \"op\"");
        }
        switch (op) {
            case "open" -> {
                if (client != null) {
                    client.close();
                    client = null;
                }
                client = open(map(req, "config"));
                b.append("{\"ok\":true");
            }
            case "next" -> {
                SnowfenceClient c = client();
                int count = integer(req, "count");
                long[] got = new long[Math.max(count, 0)];
                int n = 0;
                try {
                    for (; n < count; n++) {
                        got[n] = c.next();
                    }
                } catch (RuntimeException e) {
                    error(b, kind(e), String.valueOf(e.getMessage()));
                    b.append(',');
                    ids(b, got, n);
                    return;
                }
                b.append("{\"ok\":true,");
                ids(b, got, n);
            }
            case "next_n" -> {
                long[] got = client().nextN(integer(req, "n"));
                b.append("{\"ok\":true,");
                ids(b, got, got.length);
            }
            case "next_concurrent" -> nextConcurrent(integer(req, "threads"), integer(req, "count"), b);
            case "run" -> run(integer(req, "ms"), b);
            case "decode" -> {
                long id = Ids.parse(string(req, "id"));
                Decoded d = Schedule.parse(string(req, "schedule")).decode(id);
                b.append("{\"ok\":true,\"decoded\":").append(d.toJson());
            }
            case "close" -> {
                client().close();
                b.append("{\"ok\":true");
            }
            default -> throw new BadRequest("unknown op " + Json.quote(op));
        }
    }

    private SnowfenceClient client() {
        if (client == null) {
            throw new BadRequest("no client is open; send an open request first");
        }
        return client;
    }

    private void nextConcurrent(int threads, int count, StringBuilder b) {
        long[][] got = new long[threads][count];
        RuntimeException[] err = new RuntimeException[threads];
        SnowfenceClient c = client();
        Thread[] ts = new Thread[threads];
        for (int t = 0; t < threads; t++) {
            final int k = t;
            ts[t] = new Thread(() -> {
                try {
                    for (int i = 0; i < count; i++) {
                        got[k][i] = c.next();
                    }
                } catch (RuntimeException e) {
                    err[k] = e;
                }
            });
            ts[t].start();
        }
        for (Thread t : ts) {
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        }
        for (RuntimeException e : err) {
            if (e != null) {
                throw e;
            }
        }
        b.append("{\"ok\":true,\"ids\":[");
        for (int t = 0; t < threads; t++) {
            for (int i = 0; i < count; i++) {
                if (t > 0 || i > 0) {
                    b.append(',');
                }
                b.append('"').append(got[t][i]).append('"');
            }
        }
        b.append(']');
    }

    private void run(int ms, StringBuilder b) {
        SnowfenceClient c = client();
        long start = System.nanoTime(), deadline = start + ms * 1_000_000L;
        long first = c.next(), last = first, count = 1, notIncreasing = 0;
        do {
            for (int k = 0; k < 1024; k++) {
                long id = c.next();
                if (id <= last) {
                    notIncreasing++;
                }
                last = id;
                count++;
            }
        } while (System.nanoTime() - deadline < 0);
        long elapsed = System.nanoTime() - start;
        b.append("{\"ok\":true,\"count\":").append(count).append(",\"first\":\"").append(first).append("\",\"last\":\"")
                .append(last).append("\",\"not_increasing\":").append(notIncreasing).append(",\"elapsed_ns\":").append(elapsed);
    }

    private static SnowfenceClient open(Map<?, ?> cfg) {
        Set<String> known = Set.of("endpoints", "health_urls", "request_timeout_ms", "max_age_ms", "refill_period_ms",
                "min_refill", "max_buffer", "low_water", "max_attempts", "base_backoff_ms", "max_backoff_ms",
                "max_retry_after_ms", "failure_threshold", "recovery_probes", "probe_interval_ms", "schedule", "tls");
        for (Object k : cfg.keySet()) {
            if (!known.contains(k)) {
                throw new BadRequest("unknown config key " + Json.quote(String.valueOf(k)));
            }
        }
        SnowfenceClient.Builder b = SnowfenceClient.builder();
        b.endpoints(strings(cfg, "endpoints"));
        if (cfg.containsKey("health_urls")) {
            b.healthUrls(strings(cfg, "health_urls"));
        }
        if (cfg.containsKey("request_timeout_ms")) {
            b.requestTimeout(Duration.ofMillis(integer(cfg, "request_timeout_ms")));
        }
        if (cfg.containsKey("max_age_ms")) {
            b.maxAge(Duration.ofMillis(integer(cfg, "max_age_ms")));
        }
        if (cfg.containsKey("refill_period_ms")) {
            b.refillPeriod(Duration.ofMillis(integer(cfg, "refill_period_ms")));
        }
        if (cfg.containsKey("base_backoff_ms")) {
            b.baseBackoff(Duration.ofMillis(integer(cfg, "base_backoff_ms")));
        }
        if (cfg.containsKey("max_backoff_ms")) {
            b.maxBackoff(Duration.ofMillis(integer(cfg, "max_backoff_ms")));
        }
        if (cfg.containsKey("max_retry_after_ms")) {
            b.maxRetryAfter(Duration.ofMillis(integer(cfg, "max_retry_after_ms")));
        }
        if (cfg.containsKey("probe_interval_ms")) {
            b.probeInterval(Duration.ofMillis(integer(cfg, "probe_interval_ms")));
        }
        b.minRefill(optInt(cfg, "min_refill"));
        b.maxBuffer(optInt(cfg, "max_buffer"));
        b.lowWater(optInt(cfg, "low_water"));
        b.maxAttempts(optInt(cfg, "max_attempts"));
        b.failureThreshold(optInt(cfg, "failure_threshold"));
        b.recoveryProbes(optInt(cfg, "recovery_probes"));
        if (cfg.containsKey("schedule")) {
            Schedule sch;
            try {
                sch = Schedule.parse(string(cfg, "schedule"));
            } catch (InvalidScheduleException e) {
                throw new InvalidConfigException("schedule: " + e.getMessage(), e);
            }
            b.repeatCheck(sch);
        }
        if (cfg.containsKey("tls")) {
            Map<?, ?> tls = map(cfg, "tls");
            b.tls(path(tls, "ca_file"), path(tls, "cert_file"), path(tls, "key_file"));
        }
        return b.build();
    }

    private static Path path(Map<?, ?> m, String key) {
        return m.get(key) == null ? null : Path.of(string(m, key));
    }

    private static int optInt(Map<?, ?> m, String key) {
        return m.containsKey(key) ? integer(m, key) : 0;
    }

    private static int integer(Map<?, ?> m, String key) {
        if (m.get(key) instanceof Long v && v >= Integer.MIN_VALUE && v <= Integer.MAX_VALUE) {
            return (int) (long) v;
        }
        throw new BadRequest("\"" + key + "\" is not an integer");
    }

    private static String string(Map<?, ?> m, String key) {
        if (m.get(key) instanceof String s) {
            return s;
        }
        throw new BadRequest("\"" + key + "\" is not a string");
    }

    private static Map<?, ?> map(Map<?, ?> m, String key) {
        if (m.get(key) instanceof Map<?, ?> v) {
            return v;
        }
        throw new BadRequest("\"" + key + "\" is not an object");
    }

    private static List<String> strings(Map<?, ?> m, String key) {
        if (!(m.get(key) instanceof List<?> l)) {
            throw new BadRequest("\"" + key + "\" is not a list of strings");
        }
        List<String> out = new ArrayList<>();
        for (Object o : l) {
            if (!(o instanceof String s)) {
                throw new BadRequest("\"" + key + "\" is not a list of strings");
            }
            out.add(s);
        }
        return out;
    }
}
