package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.http.HttpClient;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The transport on the caller's own HttpClient: the same rules (whole answers within the timeout, no redirects). */
@Timeout(60)
class HttpTransportTest {
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    private static HttpClient http(HttpClient.Redirect redirect) {
        return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).followRedirects(redirect).build();
    }

    @Test
    void idsThroughTheCallersClient() throws Exception {
        try (FakeServer s = FakeServer.start(); SnowfenceClient c = ClientTest.builder(s).httpClient(http(HttpClient.Redirect.NEVER))
                .build()) {
            long last = 0;
            for (int i = 0; i < 3000; i++) {
                long id = c.next();
                assertTrue(id > last);
                last = id;
            }
        }
    }

    @Test
    void truncatedAndStalledBodies() throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n{\"ids\"");
            return false;
        }, (h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n{\"ids\"");
            out.flush();
            ClientTest.await(done);
            return false;
        })) {
            HttpTransport t = new HttpTransport(http(HttpClient.Redirect.NEVER));
            assertThrows(java.io.IOException.class, () -> t.post(s.url + "/x", SECOND));
            long t0 = System.nanoTime();
            assertThrows(HttpTimeoutException.class, () -> t.post(s.url + "/x", SECOND / 5));
            assertTrue(System.nanoTime() - t0 < 5 * SECOND);
            done.countDown();
        }
    }

    /** IDs from an answer that came after a redirect the caller's client followed are refused. */
    @Test
    void redirectedAnswerRefused() throws Exception {
        try (FakeServer target = FakeServer.start(); FakeServer s = FakeServer.start((ex, srv) -> {
            ex.getResponseHeaders().set("Location", target.url + "/v1/ids:batch?count=" + FakeServer.count(ex));
            ex.sendResponseHeaders(307, -1);
        }); SnowfenceClient c = ClientTest.builder(s).httpClient(http(HttpClient.Redirect.ALWAYS)).maxAttempts(1).build()) {
            UnavailableException e = assertThrows(UnavailableException.class, c::next);
            assertInstanceOf(BadResponseException.class, e.getCause());
            assertEquals(0, c.stats().received());
        }
        // The client's own transport never follows one: the 307 is the failed answer.
        try (FakeServer s = FakeServer.start((ex, srv) -> {
            ex.getResponseHeaders().set("Location", "http://127.0.0.1:1/");
            ex.sendResponseHeaders(307, -1);
        }); SnowfenceClient c = ClientTest.builder(s).maxAttempts(1).requestTimeout(Duration.ofSeconds(5)).build()) {
            UnavailableException e = assertThrows(UnavailableException.class, c::next);
            assertEquals(307, assertInstanceOf(RefusedException.class, e.getCause()).status());
        }
    }
}
