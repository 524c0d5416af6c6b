package io.github.snowfence.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLContext;

/**
 * A fake snowfence server on loopback (the JDK's own HTTP server): mint
 * requests are answered by a script of handlers, one per request in order
 * (the last repeats); {@code /healthz} by {@link #health}. It logs every
 * request, and the IDs it sent in each 200.
 */
final class FakeServer implements AutoCloseable {
    /** Answers one request. */
    interface Handler {
        void handle(HttpExchange ex, FakeServer s) throws IOException;
    }

    static {
        // The JDK's server writes headers and body apart; without TCP_NODELAY
        // each answer waits out a delayed ACK (about 40 ms).
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    private final HttpServer http;
    private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-server");
        t.setDaemon(true);
        return t;
    });
    final String url;
    private final List<Handler> script;
    private int served;
    /** Every request: "POST count=8" for a mint, "GET /healthz" for a probe. */
    final BlockingQueue<String> requests = new LinkedBlockingQueue<>();
    /** The IDs of every 200 batch sent (the whole batch, even if the client never read it). */
    final List<Long> sent = new ArrayList<>();
    /** The next ID to send is next + 1: shared by servers that play one ID space. */
    final AtomicLong next;
    /** Answers /healthz: 200 unless set otherwise. */
    volatile Handler health = (ex, s) -> reply(ex, 200, "application/json", "{\"status\":\"ok\"}", null);

    FakeServer(AtomicLong next, SSLContext tls, boolean needClientAuth, Handler... script) throws IOException {
        this("127.0.0.1", next, tls, needClientAuth, script);
    }

    /** A server listening on host, a loopback address. */
    FakeServer(String host, AtomicLong next, SSLContext tls, boolean needClientAuth, Handler... script) throws IOException {
        this.next = next;
        this.script = List.of(script.length == 0 ? new Handler[] {FakeServer::ok} : script);
        if (tls != null) {
            HttpsServer s = HttpsServer.create(new InetSocketAddress(host, 0), 0);
            s.setHttpsConfigurator(new HttpsConfigurator(tls) {
                @Override
                public void configure(HttpsParameters p) {
                    javax.net.ssl.SSLParameters sp = getSSLContext().getDefaultSSLParameters();
                    sp.setNeedClientAuth(needClientAuth);
                    p.setSSLParameters(sp);
                }
            });
            http = s;
        } else {
            http = HttpServer.create(new InetSocketAddress(host, 0), 0);
        }
        http.setExecutor(pool);
        http.createContext("/", this::serve);
        http.start();
        url = (tls != null ? "https" : "http") + "://" + host + ":" + http.getAddress().getPort();
    }

    /** A plain HTTP server answering with the script (IDs counted from 0). */
    static FakeServer start(Handler... script) throws IOException {
        return new FakeServer(new AtomicLong(), null, false, script);
    }

    private void serve(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            if (path.equals("/healthz")) {
                requests.add("GET /healthz");
                health.handle(ex, this);
                return;
            }
            Handler h;
            synchronized (this) {
                h = script.get(Math.min(served++, script.size() - 1));
            }
            requests.add(ex.getRequestMethod() + " " + ex.getRequestURI().getRawQuery()); // after the count: mints() includes it

            h.handle(ex, this);
        }
    }

    /** Returns the number of mint requests served (or being served). */
    synchronized int mints() {
        return served;
    }

    /** Returns the IDs sent in 200 batches so far. */
    synchronized List<Long> sentIds() {
        return new ArrayList<>(sent);
    }

    /** The count a mint request asks for. */
    static int count(HttpExchange ex) {
        String q = ex.getRequestURI().getRawQuery();
        return Integer.parseInt(q.substring(q.indexOf("count=") + 6));
    }

    /** Answers a mint with a sound batch of the next IDs. */
    static void ok(HttpExchange ex, FakeServer s) throws IOException {
        reply(ex, 200, "application/json", s.batch(count(ex)), null);
    }

    /** Returns the body of a sound batch of n IDs, recording them as sent. */
    String batch(int n) {
        StringBuilder b = new StringBuilder("{\"ids\":[");
        synchronized (this) {
            for (int i = 0; i < n; i++) {
                long id = next.incrementAndGet();
                sent.add(id);
                b.append(i > 0 ? "," : "").append('"').append(id).append('"');
            }
        }
        return b.append("]}").toString();
    }

    /** Returns a handler answering status with the server's JSON error body and a Retry-After (null for none). */
    static Handler error(int status, String retryAfter, String code) {
        return (ex, s) -> reply(ex, status, "application/json",
                "{\"error\":{\"code\":\"" + code + "\",\"message\":\"a test's " + status + "\",\"reason\":\"test\"}}", retryAfter);
    }

    /** Returns a handler answering a 200 with this body. */
    static Handler body(String body) {
        return (ex, s) -> reply(ex, 200, "application/json", body, null);
    }

    static void reply(HttpExchange ex, int status, String contentType, String body, String retryAfter) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        if (contentType != null) {
            ex.getResponseHeaders().set("Content-Type", contentType);
        }
        if (retryAfter != null) {
            ex.getResponseHeaders().set("Retry-After", retryAfter);
        }
        ex.sendResponseHeaders(status, b.length == 0 ? -1 : b.length);
        try (OutputStream out = ex.getResponseBody()) {
            out.write(b);
        }
    }

    /** Takes the next logged request, failing after 30 s. */
    String request() throws InterruptedException {
        String r = requests.poll(30, TimeUnit.SECONDS);
        if (r == null) {
            throw new AssertionError("no request within 30 s");
        }
        return r;
    }

    @Override
    public void close() {
        http.stop(0);
        pool.shutdownNow();
    }

    /** Returns the URL of a loopback port nothing listens on: connections are refused. */
    static String deadUrl() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return "http://127.0.0.1:" + s.getLocalPort();
        }
    }
}
