package io.github.snowfence.client;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.List;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.Flow;

/**
 * The transport on a {@link java.net.http.HttpClient} the caller gave
 * ({@link SnowfenceClient.Builder#httpClient}), used as it is configured (a
 * proxy, its own TLS, its redirect policy: IDs from an answer that came
 * after a redirect are refused by the fetch). Each request runs under a
 * timeout that covers the whole answer, body included: the JDK's own
 * request timeout stops at the headers, and an answer stalled mid-body must
 * be abandoned as well. Abandoning cancels the exchange, which closes its
 * connection, so a late answer is never read. Without a client of the
 * caller's, the client uses {@link SocketTransport}.
 */
final class HttpTransport implements Transport {
    private final HttpClient http;

    /** Sends with the caller's client, as given. */
    HttpTransport(HttpClient given) {
        http = given;
    }

    @Override
    public Answer post(String url, long timeoutNanos) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        HttpRequest req = HttpRequest.newBuilder(URI.create(url))
                .POST(HttpRequest.BodyPublishers.noBody())
                .header("Accept", "application/json")
                .header("User-Agent", "snowfence-client")
                .timeout(Duration.ofNanos(timeoutNanos))
                .build();
        HttpResponse<Body> resp = send(req, info -> Limited.of(info, deadline, true), timeoutNanos);
        Body body = resp.body();
        var h = resp.headers();
        return new Answer(resp.statusCode(), h.firstValue("content-type").orElse(""),
                h.firstValueAsLong("content-length").orElse(-1), h.firstValue("retry-after").orElse(""),
                body.bytes, body.length, resp.uri().toString());
    }

    @Override
    public int get(String url, long timeoutNanos) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + timeoutNanos;
        HttpRequest req = HttpRequest.newBuilder(URI.create(url)).GET().header("User-Agent", "snowfence-client")
                .timeout(Duration.ofNanos(timeoutNanos)).build();
        return send(req, info -> Limited.of(info, deadline, false), timeoutNanos).statusCode();
    }

    /**
     * Sends req and waits for the whole answer. {@link HttpClient#send} rather
     * than sendAsync and a timed get: the asynchronous call completes its
     * future on another pool, one more thread hand-off per request. The
     * request's own timeout bounds the wait for the headers; the body
     * subscriber bounds the rest (see {@link Limited}); an interrupt (the
     * client closing) cancels the exchange.
     */
    private <T> HttpResponse<T> send(HttpRequest req, HttpResponse.BodyHandler<T> handler, long timeoutNanos)
            throws IOException, InterruptedException {
        try {
            return http.send(req, handler);
        } catch (HttpTimeoutException e) {
            throw timeout(req, timeoutNanos);
        } catch (IOException e) {
            if (e.getCause() instanceof TimeoutException) {
                throw timeout(req, timeoutNanos);
            }
            // The JDK's exceptions often carry no message (a ConnectException
            // says nothing of where): name the request.
            throw new IOException(req.method() + " " + req.uri() + ": " + e, e);
        }
    }

    private static HttpTimeoutException timeout(HttpRequest req, long timeoutNanos) {
        return new HttpTimeoutException(req.method() + " " + req.uri() + ": no complete answer within "
                + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms (the request timeout)");
    }

    @Override
    public void close() {
        // HttpClient has no close before Java 21; its selector thread ends
        // once the client is unreachable. Nothing else is held.
    }

    /** A body read into one array. */
    record Body(byte[] bytes, int length) {
    }

    /**
     * Collects a body into one array sized by Content-Length, without the
     * list of buffers and the copy the JDK's byte-array handler makes. Over
     * the limit, a 200 fails (no IDs are taken from a body over the size of
     * a batch) and another status is cut.
     */
    private static final class Limited implements HttpResponse.BodySubscriber<Body> {
        private final int limit;
        private final boolean strict;
        private final CompletableFuture<Body> done = new CompletableFuture<>();
        private Flow.Subscription sub;
        private boolean cancelled;
        private byte[] buf;
        private int len;

        Limited(int limit, long contentLength, boolean strict) {
            this.limit = limit;
            this.strict = strict;
            buf = new byte[contentLength >= 0 && contentLength <= limit ? (int) contentLength : 1024];
        }

        /**
         * Returns the subscriber of an answer: a 200's body (when strict),
         * whole, at most MAX_BATCH_BODY bytes; another status's first
         * MAX_ERROR_BODY bytes; failing at the deadline (a System.nanoTime reading).
         */
        static Limited of(HttpResponse.ResponseInfo info, long deadline, boolean strict) {
            long cl = info.headers().firstValueAsLong("content-length").orElse(-1);
            Limited l = info.statusCode() == 200 && strict ? new Limited(MAX_BATCH_BODY, cl, true) : new Limited(MAX_ERROR_BODY, cl, false);
            l.done.orTimeout(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS).whenComplete((b, t) -> {
                if (t != null) {
                    l.cancel();
                }
            });
            return l;
        }

        private synchronized void cancel() {
            if (sub != null) {
                sub.cancel();
            }
            cancelled = true;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            synchronized (this) {
                sub = s;
                if (cancelled) {
                    s.cancel();
                    return;
                }
            }
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            if (done.isDone()) {
                return;
            }
            for (ByteBuffer bb : items) {
                int r = bb.remaining();
                if (len + r > limit) {
                    if (strict) {
                        sub.cancel();
                        done.completeExceptionally(new IOException("the body is over " + limit + " bytes, more than a batch takes"));
                        return;
                    }
                    r = limit - len;
                }
                if (len + r > buf.length) {
                    buf = Arrays.copyOf(buf, Math.min(limit, Math.max(buf.length * 2, len + r)));
                }
                bb.get(buf, len, r);
                len += r;
            }
        }

        @Override
        public void onError(Throwable t) {
            done.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            done.complete(new Body(buf, len));
        }

        @Override
        public CompletionStage<Body> getBody() {
            return done;
        }
    }
}
