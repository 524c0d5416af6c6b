package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Failover across endpoints, recovery by probes, and the backoff across failovers (the Go client's failover_test.go). */
@Timeout(60)
class FailoverTest {
    /** A fake region that can be taken down (mint 503, healthz 503) and brought back, logging what it answered. */
    static final class Region implements AutoCloseable {
        record Event(boolean health, boolean ok) {
        }

        final FakeServer server;
        private volatile boolean up = true;
        private final List<Event> log = new ArrayList<>();

        Region(AtomicLong next) throws IOException {
            server = new FakeServer(next, null, false, (ex, s) -> {
                boolean isUp = up;
                record(false, isUp);
                if (isUp) {
                    FakeServer.ok(ex, s);
                } else {
                    FakeServer.error(503, "1", "fenced").handle(ex, s);
                }
            });
            server.health = (ex, s) -> {
                boolean isUp = up;
                record(true, isUp);
                FakeServer.reply(ex, isUp ? 200 : 503, "application/json", "{}", null);
            };
        }

        private synchronized void record(boolean health, boolean ok) {
            log.add(new Event(health, ok));
        }

        synchronized List<Event> events() {
            return new ArrayList<>(log);
        }

        void set(boolean isUp) {
            up = isUp;
        }

        @Override
        public void close() {
            server.close();
        }
    }

    /**
     * The primary fails, the client moves to the backup after
     * failureThreshold failures, and returns to the primary only after
     * recoveryProbes consecutive healthy probes.
     */
    @Test
    void failoverAndBack() throws Exception {
        AtomicLong next = new AtomicLong();
        try (Region primary = new Region(next); Region backup = new Region(next);
                SnowfenceClient c = SnowfenceClient.builder().endpoints(primary.server.url, backup.server.url)
                        .logger(QuietLogger.INSTANCE).minRefill(4).maxBuffer(8).baseBackoff(Duration.ofNanos(1000))
                        .maxBackoff(Duration.ofNanos(1000)).maxRetryAfter(Duration.ofNanos(1000))
                        .probeInterval(Duration.ofMillis(1)).build()) {
            Set<Long> seen = new HashSet<>();
            Runnable take = () -> {
                for (long id : c.nextN(4)) {
                    assertTrue(seen.add(id), "ID " + id + " handed out twice");
                }
            };
            take.run();
            primary.set(false);
            while (c.stats().endpoint() != 1) {
                take.run();
            }
            long failedMints = primary.events().stream().filter(e -> !e.health() && !e.ok()).count();
            assertEquals(3, failedMints, "the primary was taken out after " + failedMints + " failed requests");
            assertTrue(!backup.events().isEmpty(), "no request went to the backup while the primary was out");
            int mark = primary.events().size();
            primary.set(true);
            // Take IDs until the primary answers a mint again.
            for (boolean again = false; !again;) {
                take.run();
                List<Region.Event> ev = primary.events();
                again = ev.subList(mark, ev.size()).stream().anyMatch(e -> !e.health() && e.ok());
            }
            // After its failures: probes, and at least three healthy ones in a
            // row right before the first mint it answers again.
            List<Region.Event> ev = primary.events();
            int first = -1;
            for (int i = 0; i < ev.size(); i++) {
                if (i > 0 && !ev.get(i).health() && ev.get(i).ok() && !ev.get(i - 1).ok()) {
                    fail("a mint went to the primary right after a failure: " + ev);
                }
                if (!ev.get(i).health() && ev.get(i).ok() && i >= mark) {
                    first = i;
                    break;
                }
            }
            assertTrue(first >= 0, "no mint went back to the primary: " + ev);
            for (Region.Event e : ev.subList(first - 3, first)) {
                assertTrue(e.health() && e.ok(), "the client returned to the primary without 3 healthy probes first: " + ev);
            }
        }
    }

    /**
     * A time source whose sleep records its duration and moves the clock on
     * at once, except the prober's interval (an hour here), which blocks:
     * the tests read the refill's waits, not the prober's.
     */
    static final class SleepLog implements TimeSource {
        final FakeTime time = new FakeTime();
        private final List<Long> waits = new ArrayList<>();
        /** Runs inside each recorded wait (as the prober would), if set. */
        volatile Runnable during;

        @Override
        public long nanoTime() {
            return time.nanoTime();
        }

        @Override
        public long currentTimeMillis() {
            return time.currentTimeMillis();
        }

        @Override
        public void sleep(long nanos) throws InterruptedException {
            if (nanos >= Duration.ofHours(1).toNanos()) {
                time.sleep(nanos);
                return;
            }
            synchronized (this) {
                waits.add(nanos / 1_000_000);
            }
            Runnable d = during;
            if (d != null) {
                d.run();
            }
            time.advance(Duration.ofNanos(nanos));
        }

        synchronized List<Long> taken() {
            return new ArrayList<>(waits);
        }
    }

    private static SnowfenceClient.Builder backoffConfig(SleepLog clk) {
        return SnowfenceClient.builder().logger(QuietLogger.INSTANCE).timeSource(clk).baseBackoff(Duration.ofMillis(100))
                .maxBackoff(Duration.ofSeconds(2)).probeInterval(Duration.ofHours(1)).maxAttempts(16);
    }

    /**
     * With a region's three endpoints dead, the waits start small again on
     * each endpoint the client fails over to, so the live endpoint behind
     * them is reached after 3 × (100 + 200) ms, not after waits grown to
     * maxBackoff; once every endpoint is out of service the waits grow
     * again, so a fleet that is down entirely is still backed off from.
     */
    @Test
    void backoffRestartsOnFailover() throws Exception {
        try (Region live = new Region(new AtomicLong())) {
            SleepLog clk = new SleepLog();
            try (SnowfenceClient c = backoffConfig(clk).endpoints(FakeServer.deadUrl(), FakeServer.deadUrl(), FakeServer.deadUrl(),
                    live.server.url).build()) {
                c.jitter = d -> d;
                c.next();
                assertEquals(List.of(100L, 200L, 100L, 200L, 100L, 200L), clk.taken(), "waits before the live endpoint answered");
                assertEquals(3, c.stats().endpoint());
            }
        }
        SleepLog clk = new SleepLog();
        try (SnowfenceClient c = backoffConfig(clk).endpoints(FakeServer.deadUrl(), FakeServer.deadUrl(), FakeServer.deadUrl())
                .build()) {
            c.jitter = d -> d;
            assertThrows(UnavailableException.class, c::next);
            // Two waits on each endpoint before it is taken out; the last
            // one's third failure finds none in service, and from there the
            // waits double up to maxBackoff. No wait follows the last attempt.
            assertEquals(List.of(100L, 200L, 100L, 200L, 100L, 200L, 400L, 800L, 1600L, 2000L, 2000L, 2000L, 2000L), clk.taken(),
                    "waits with every endpoint dead");
        }
    }

    /**
     * Endpoints that pass their health probes but fail every request are
     * put back in service during each wait (here by hand, as the prober
     * would with recoveryProbes 1) and taken out again by the next failure:
     * only the first failover from each endpoint restarts the exponent, so
     * the waits still double to maxBackoff.
     */
    @Test
    void flappingFleetBackoff() throws Exception {
        SleepLog clk = new SleepLog();
        try (SnowfenceClient c = backoffConfig(clk).endpoints(FakeServer.deadUrl(), FakeServer.deadUrl()).failureThreshold(1)
                .recoveryProbes(1).maxAttempts(12).build()) {
            c.jitter = d -> d;
            clk.during = () -> {
                for (int i = 0; i < 2; i++) {
                    c.eps.probed(i, true);
                }
            };
            assertThrows(UnavailableException.class, c::next);
            assertEquals(List.of(100L, 200L, 400L, 800L, 1600L), clk.taken(), "waits with the endpoints flapping");
        }
    }

    /** A dead first endpoint is failed over from; with failureThreshold 1 at once, with no wait. */
    @Test
    void deadPortFirst() throws Exception {
        SleepLog clk = new SleepLog();
        try (FakeServer s = FakeServer.start(); SnowfenceClient c = backoffConfig(clk).endpoints(FakeServer.deadUrl(), s.url)
                .failureThreshold(1).build()) {
            assertEquals(1, c.next());
            assertEquals(List.of(), clk.taken());
            Stats st = c.stats();
            assertEquals(1, st.endpoint());
            assertEquals(List.of(false, true), st.inService());
        }
    }

    /** A 429 is not a failure of the endpoint: the client waits and asks the same endpoint again, never the next one. */
    @Test
    void rateLimitedStaysOnTheEndpoint() throws Exception {
        FakeTime time = new FakeTime();
        FakeServer.Handler limited = FakeServer.error(429, "1", "rate_limited");
        try (FakeServer a = FakeServer.start(limited, limited, FakeServer::ok); FakeServer b = FakeServer.start();
                SnowfenceClient c = SnowfenceClient.builder().endpoints(a.url, b.url).logger(QuietLogger.INSTANCE).timeSource(time)
                        .failureThreshold(1).build()) {
            var got = ClientTest.async(c::next);
            for (int i = 0; i < 2; i++) {
                a.request();
                time.awaitWaiters(1);
                time.advance(Duration.ofMillis(1100));
            }
            assertEquals(1, ClientTest.value(got));
            assertEquals(3, a.mints());
            assertEquals(0, b.mints());
            assertEquals(List.of(true, true), c.stats().inService());
        }
    }

    /** With no endpoint in service, requests go to each in turn, and the first that answers is back in service. */
    @Test
    void noneInServiceEachInTurn() throws Exception {
        FakeServer.Handler refused = FakeServer.error(503, null, "fenced");
        try (FakeServer a = FakeServer.start(refused); FakeServer b = FakeServer.start(refused, refused, FakeServer::ok);
                SnowfenceClient c = SnowfenceClient.builder().endpoints(a.url, b.url).logger(QuietLogger.INSTANCE)
                        .failureThreshold(1).probeInterval(Duration.ofHours(1)).baseBackoff(Duration.ofNanos(1000))
                        .maxBackoff(Duration.ofNanos(1000)).build()) {
            assertEquals(1, c.next());
            // a, then b (failed over), then none in service: a, b, a, b (answers).
            assertEquals(3, a.mints());
            assertEquals(3, b.mints());
            Stats st = c.stats();
            assertEquals(1, st.endpoint());
            assertEquals(List.of(false, true), st.inService());
        }
    }

    /** Every endpoint refusing connections: next fails with UnavailableException whose last failure is the connection error. */
    @Test
    void allDead() throws Exception {
        try (SnowfenceClient c = SnowfenceClient.builder().endpoints(FakeServer.deadUrl(), FakeServer.deadUrl())
                .logger(QuietLogger.INSTANCE).maxAttempts(4).baseBackoff(Duration.ofMillis(1)).maxBackoff(Duration.ofMillis(2))
                .build()) {
            UnavailableException e = assertThrows(UnavailableException.class, c::next);
            assertInstanceOf(IOException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("127.0.0.1"), e.getCause().getMessage());
            assertThrows(UnavailableException.class, c::next);
        }
    }
}
