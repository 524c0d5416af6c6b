package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The client's own HTTP/1.1 transport against a server that writes raw bytes. */
@Timeout(60)
class SocketTransportTest {
    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);
    private static final String OK = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"ids\":[\"1\"]}\n";

    private static String body(Transport.Answer a) {
        return new String(a.body(), 0, a.bodyLength(), StandardCharsets.UTF_8);
    }

    @Test
    void keepAliveOneConnection() throws Exception {
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, OK);
            return true;
        })) {
            SocketTransport t = new SocketTransport(null);
            for (int i = 0; i < 5; i++) {
                Transport.Answer a = t.post(s.url + "/v1/ids:batch?count=1", SECOND);
                assertEquals(200, a.status());
                assertEquals("{\"ids\":[\"1\"]}\n", body(a));
                assertEquals("application/json", a.contentType());
            }
            assertEquals(1, s.connections.get());
            String head = s.heads.take();
            assertTrue(head.startsWith("POST /v1/ids:batch?count=1 HTTP/1.1\r\n"), head);
            assertTrue(head.contains("\r\nContent-Length: 0\r\n") && head.contains("\r\nHost: 127.0.0.1:"), head);
            t.close();
        }
    }

    @Test
    void chunked() throws Exception {
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + "5\r\n{\"ids\r\n8;ext=1\r\n\":[\"1\",\"\r\n4\r\n2\"]}\r\n0\r\nTrailer: x\r\n\r\n");
            return true;
        })) {
            SocketTransport t = new SocketTransport(null);
            assertEquals("{\"ids\":[\"1\",\"2\"]}", body(t.post(s.url + "/x", SECOND)));
            assertEquals("{\"ids\":[\"1\",\"2\"]}", body(t.post(s.url + "/x", SECOND)));
            assertEquals(1, s.connections.get());
        }
    }

    /** A kept-alive connection the server closed is replaced once, at once. */
    @Test
    void staleConnectionRetriedOnce() throws Exception {
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, OK);
            return false; // closes without saying so
        })) {
            SocketTransport t = new SocketTransport(null);
            for (int i = 0; i < 3; i++) {
                assertEquals(200, t.post(s.url + "/x", SECOND).status());
            }
            assertEquals(3, s.requests.get());
        }
    }

    /** No retry when the connection was new, or the answer had begun. */
    @Test
    void noRetryOnAFreshConnectionOrABegunAnswer() throws Exception {
        try (RawServer s = new RawServer((h, out, sock) -> false)) {
            SocketTransport t = new SocketTransport(null);
            assertThrows(IOException.class, () -> t.post(s.url + "/x", SECOND));
            assertEquals(1, s.requests.get());
        }
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, OK);
            return true;
        }, (h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n{\"ids\"");
            return false;
        })) {
            SocketTransport t = new SocketTransport(null);
            t.post(s.url + "/x", SECOND);
            assertThrows(IOException.class, () -> t.post(s.url + "/x", SECOND));
            assertEquals(2, s.requests.get());
        }
    }

    @Test
    void connectionCloseAndInterimAnswers() throws Exception {
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n"
                    + "Connection: close\r\nContent-Length: 2\r\n\r\n{}");
            return false;
        })) {
            SocketTransport t = new SocketTransport(null);
            for (int i = 0; i < 2; i++) {
                Transport.Answer a = t.post(s.url + "/x", SECOND);
                assertEquals(503, a.status());
                assertEquals("7", a.retryAfter());
            }
            assertEquals(2, s.connections.get());
        }
    }

    @Test
    void bodyToTheEndOfTheConnection() throws Exception {
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"ids\":[\"1\"]}");
            return false;
        })) {
            assertEquals("{\"ids\":[\"1\"]}", body(new SocketTransport(null).post(s.url + "/x", SECOND)));
        }
    }

    @Test
    void malformedAnswersRefused() throws Exception {
        String[] answers = {
            "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 2\r\n\r\n{}", // obs-fold
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}", // two lengths
            "HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n{}",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "SPDY/3 200 OK\r\n\r\n",
            "HTTP/1.1 2x0 OK\r\n\r\n",
        };
        for (String a : answers) {
            try (RawServer s = new RawServer((h, out, sock) -> {
                RawServer.write(out, a);
                return false;
            })) {
                assertThrows(IOException.class, () -> new SocketTransport(null).post(s.url + "/x", SECOND), a);
            }
        }
    }

    /** A 200 body over 64 KiB is not read: by its length (refused by the fetch), or when chunked, as an error. */
    @Test
    void oversizedBodies() throws Exception {
        String big = "x".repeat(70_000);
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 200 OK\r\nContent-Length: " + big.length() + "\r\n\r\n" + big);
            return true;
        })) {
            Transport.Answer a = new SocketTransport(null).post(s.url + "/x", SECOND);
            assertEquals(70_000, a.contentLength());
            assertEquals(0, a.bodyLength());
        }
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + Integer.toHexString(big.length()) + "\r\n"
                    + big + "\r\n0\r\n\r\n");
            return true;
        })) {
            assertThrows(IOException.class, () -> new SocketTransport(null).post(s.url + "/x", SECOND));
        }
        // An error body is cut to its first 4 KiB.
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 503 Service Unavailable\r\nContent-Length: " + big.length() + "\r\n\r\n" + big);
            return true;
        })) {
            Transport.Answer a = new SocketTransport(null).post(s.url + "/x", SECOND);
            assertEquals(503, a.status());
            assertEquals(Transport.MAX_ERROR_BODY, a.bodyLength());
        }
    }

    /** The deadline covers the body: an answer stalled midway ends at the request timeout. */
    @Test
    void deadlineCoversTheBody() throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        try (RawServer s = new RawServer((h, out, sock) -> {
            RawServer.write(out, "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n{\"ids\"");
            out.flush();
            ClientTest.await(done);
            return false;
        })) {
            long t0 = System.nanoTime();
            assertThrows(HttpTimeoutException.class, () -> new SocketTransport(null).post(s.url + "/x", SECOND / 5));
            long took = System.nanoTime() - t0;
            assertTrue(took >= SECOND / 5 && took < 5 * SECOND, "took " + took / 1_000_000 + " ms");
            done.countDown();
        }
    }

    /** Closing the transport ends a read in progress. */
    @Test
    void closeEndsARead() throws Exception {
        CountDownLatch done = new CountDownLatch(1);
        try (RawServer s = new RawServer((h, out, sock) -> {
            ClientTest.await(done);
            return false;
        })) {
            SocketTransport t = new SocketTransport(null);
            CompletableFuture<Transport.Answer> got = ClientTest.async(() -> t.post(s.url + "/x", 60 * SECOND));
            s.heads.take();
            t.close();
            assertTrue(ClientTest.failure(got) instanceof IOException);
            assertThrows(IOException.class, () -> t.post(s.url + "/x", SECOND));
            done.countDown();
        }
    }
}
