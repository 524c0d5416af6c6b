package io.github.snowfence.client;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * The client's own transport: HTTP/1.1 on blocking sockets (plain, or TLS
 * through {@link SSLSocket} with the host name checked), keep-alive
 * connections kept per origin. The refill thread itself writes the request
 * and reads the answer: no selector thread, no executor, no future. The
 * JDK's {@link java.net.http.HttpClient} hands each answer across two or
 * three threads and runs several times more code per request, which a
 * process on one core spends its first seconds compiling; measured against
 * one server core ({@code bench/load/clients.sh}), a fresh process reached
 * 0.58 of the batch endpoint's rate in 5 s on HttpClient and about 0.95
 * on this (both reach the server's pace once warm). HttpClient remains
 * available: give one with {@link SnowfenceClient.Builder#httpClient}.
 *
 * <p>What it reads: a status line and headers (no obs-fold), a body by
 * Content-Length, chunked, or to the end of the connection; 1xx answers are
 * skipped. Each request runs under one deadline (the request timeout) for
 * connect, TLS handshake, and every read, body included; on expiry the
 * connection is closed, so a late answer is never read. A request that
 * fails on a kept-alive connection before any byte of the answer came (the
 * server closed the idle connection) is sent once more on a new connection:
 * such a request minted nothing the client could have received, and if the
 * server did mint, those IDs are lost, never handed out. Idle connections
 * are dropped after 30 s (servers close theirs after 120 s). Closing the
 * transport closes every connection, which ends a read in progress.
 */
final class SocketTransport implements Transport {
    /** The longest a connection is kept idle. */
    private static final long MAX_IDLE_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int MAX_HEADER_BYTES = 64 << 10;

    private final SSLSocketFactory tls;
    private final Map<String, ArrayDeque<Conn>> idle = new HashMap<>();
    private final Set<Conn> open = new HashSet<>();
    /** Sockets still connecting or in their TLS handshake: close() closes them too. */
    private final Set<Socket> connecting = new HashSet<>();
    private boolean closed;

    SocketTransport(SSLContext sslContext) {
        this.tls = sslContext != null ? sslContext.getSocketFactory() : null;
    }

    /** One connection and its read buffer. */
    private static final class Conn {
        final String key;
        final Socket socket;
        final InputStream in;
        final OutputStream out;
        final byte[] buf = new byte[16 << 10];
        int pos, lim;
        long idleSince;
        boolean reused;
        /** Whether a byte of the current answer has been read. */
        boolean answered;

        Conn(String key, Socket socket) throws IOException {
            this.key = key;
            this.socket = socket;
            this.in = socket.getInputStream();
            this.out = socket.getOutputStream();
        }
    }

    /** Where a URL's request goes. */
    private record Target(String key, String host, int port, boolean https, String hostHeader, String path) {
        static Target of(String url) throws IOException {
            URI u;
            try {
                u = URI.create(url);
            } catch (IllegalArgumentException e) {
                throw new IOException("bad URL " + url + ": " + e.getMessage());
            }
            String scheme = u.getScheme() == null ? "" : u.getScheme().toLowerCase(Locale.ROOT);
            boolean https = scheme.equals("https");
            if (!https && !scheme.equals("http") || u.getHost() == null) {
                throw new IOException("not an http or https URL with a host: " + url);
            }
            int port = u.getPort() >= 0 ? u.getPort() : https ? 443 : 80;
            String host = u.getHost();
            String bare = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
            String hostHeader = u.getPort() >= 0 ? host + ":" + port : host;
            String path = (u.getRawPath() == null || u.getRawPath().isEmpty() ? "/" : u.getRawPath())
                    + (u.getRawQuery() != null ? "?" + u.getRawQuery() : "");
            return new Target(scheme + "://" + hostHeader, bare, port, https, hostHeader, path);
        }
    }

    @Override
    public Answer post(String url, long timeoutNanos) throws IOException {
        return exchange("POST", url, timeoutNanos, true);
    }

    @Override
    public int get(String url, long timeoutNanos) throws IOException {
        return exchange("GET", url, timeoutNanos, false).status();
    }

    private Answer exchange(String method, String url, long timeoutNanos, boolean batch) throws IOException {
        long deadline = System.nanoTime() + timeoutNanos;
        Target t = Target.of(url);
        byte[] request = (method + " " + t.path() + " HTTP/1.1\r\nHost: " + t.hostHeader()
                + "\r\nUser-Agent: snowfence-client\r\nAccept: application/json\r\n"
                + (method.equals("POST") ? "Content-Length: 0\r\n" : "") + "\r\n").getBytes(StandardCharsets.ISO_8859_1);
        for (int attempt = 0;; attempt++) {
            Conn c = null;
            try {
                c = acquire(t, deadline, timeoutNanos);
                c.answered = false;
                c.out.write(request);
                c.out.flush();
                return read(c, url, deadline, timeoutNanos, batch);
            } catch (IOException | RuntimeException e) {
                if (c != null) {
                    discard(c);
                }
                if (attempt == 0 && c != null && c.reused && !c.answered && !(e instanceof HttpTimeoutException) && !isClosed()) {
                    continue; // a kept-alive connection the server had closed: once more on a new one
                }
                if (isClosed()) {
                    throw new IOException("the transport is closed");
                }
                if (e instanceof HttpTimeoutException) {
                    throw new HttpTimeoutException(method + " " + url + ": " + e.getMessage());
                }
                // The JDK's exceptions often carry no message, or one that
                // names no address: name the request.
                throw new IOException(method + " " + url + ": " + e, e);
            }
        }
    }

    private synchronized boolean isClosed() {
        return closed;
    }

    /** Returns an idle connection to t's origin, or a new one. */
    private Conn acquire(Target t, long deadline, long timeoutNanos) throws IOException {
        synchronized (this) {
            if (closed) {
                throw new IOException("the transport is closed");
            }
            ArrayDeque<Conn> q = idle.get(t.key());
            long now = System.nanoTime();
            while (q != null && !q.isEmpty()) {
                Conn c = q.pollLast();
                if (now - c.idleSince < MAX_IDLE_NANOS) {
                    c.reused = true;
                    return c;
                }
                closeQuietly(c);
            }
        }
        Socket s = new Socket();
        synchronized (this) {
            if (closed) {
                throw new IOException("the transport is closed");
            }
            connecting.add(s);
        }
        try {
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(t.host(), t.port()), timeoutMillis(deadline, timeoutNanos));
            Socket use = s;
            if (t.https()) {
                SSLSocketFactory f = tls != null ? tls : (SSLSocketFactory) SSLSocketFactory.getDefault();
                SSLSocket ssl = (SSLSocket) f.createSocket(s, t.host(), t.port(), true);
                SSLParameters p = ssl.getSSLParameters();
                p.setEndpointIdentificationAlgorithm("HTTPS");
                ssl.setSSLParameters(p);
                ssl.setSoTimeout(timeoutMillis(deadline, timeoutNanos));
                ssl.startHandshake();
                use = ssl;
            }
            Conn c = new Conn(t.key(), use);
            synchronized (this) {
                connecting.remove(s);
                if (closed) {
                    use.close();
                    throw new IOException("the transport is closed");
                }
                open.add(c);
            }
            return c;
        } catch (java.net.SocketTimeoutException e) {
            abandon(s);
            throw timeout(timeoutNanos);
        } catch (IOException | RuntimeException e) {
            abandon(s);
            throw e;
        }
    }

    private synchronized void abandon(Socket s) throws IOException {
        connecting.remove(s);
        s.close();
    }

    /** Puts a connection whose answer was read whole back for reuse. */
    private synchronized void release(Conn c) {
        if (closed) {
            closeQuietly(c);
            return;
        }
        c.idleSince = System.nanoTime();
        idle.computeIfAbsent(c.key, k -> new ArrayDeque<>()).addLast(c);
    }

    private synchronized void discard(Conn c) {
        closeQuietly(c);
    }

    private void closeQuietly(Conn c) {
        open.remove(c);
        try {
            c.socket.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    @Override
    public synchronized void close() {
        closed = true;
        for (Conn c : open.toArray(new Conn[0])) {
            closeQuietly(c);
        }
        for (Socket s : connecting) {
            try {
                s.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
        connecting.clear();
        idle.clear();
    }

    private static int timeoutMillis(long deadline, long timeoutNanos) throws HttpTimeoutException {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw timeout(timeoutNanos);
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000));
    }

    private static HttpTimeoutException timeout(long timeoutNanos) {
        return new HttpTimeoutException("no complete answer within "
                + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms (the request timeout)");
    }

    /** Fills c's buffer with at least one more byte, within the deadline. */
    private static void fill(Conn c, long deadline, long timeoutNanos) throws IOException {
        c.socket.setSoTimeout(timeoutMillis(deadline, timeoutNanos));
        int k;
        try {
            k = c.in.read(c.buf, c.lim, c.buf.length - c.lim);
        } catch (java.net.SocketTimeoutException e) {
            throw timeout(timeoutNanos);
        }
        if (k < 0) {
            throw new EOFException("the server closed the connection" + (c.answered ? " in the middle of the answer" : " before answering"));
        }
        c.lim += k;
        c.answered = true;
    }

    /** Reads one line (up to LF, CR LF stripped) of a header section, counting it against budget[0]. */
    private static String line(Conn c, long deadline, long timeoutNanos, int[] budget) throws IOException {
        for (;;) {
            for (int i = c.pos; i < c.lim; i++) {
                if (c.buf[i] == '\n') {
                    int end = i > c.pos && c.buf[i - 1] == '\r' ? i - 1 : i;
                    String s = new String(c.buf, c.pos, end - c.pos, StandardCharsets.ISO_8859_1);
                    budget[0] -= i + 1 - c.pos;
                    if (budget[0] < 0) {
                        throw new IOException("the header section is over " + MAX_HEADER_BYTES + " bytes");
                    }
                    c.pos = i + 1;
                    return s;
                }
            }
            if (c.lim - c.pos >= c.buf.length / 2) {
                throw new IOException("a header line is over " + c.buf.length / 2 + " bytes");
            }
            if (c.lim == c.buf.length) {
                System.arraycopy(c.buf, c.pos, c.buf, 0, c.lim - c.pos);
                c.lim -= c.pos;
                c.pos = 0;
            }
            fill(c, deadline, timeoutNanos);
        }
    }

    /** Reads one answer. */
    private Answer read(Conn c, String url, long deadline, long timeoutNanos, boolean batch) throws IOException {
        int[] budget = {MAX_HEADER_BYTES};
        for (;;) {
            String status = line(c, deadline, timeoutNanos, budget);
            if (status.length() < 12 || !status.startsWith("HTTP/1.") || status.charAt(8) != ' ') {
                throw new IOException("not an HTTP/1.x status line: " + abbreviate(status));
            }
            boolean http11 = status.charAt(7) == '1';
            int code;
            try {
                code = Integer.parseInt(status.substring(9, 12));
            } catch (NumberFormatException e) {
                throw new IOException("not an HTTP/1.x status line: " + abbreviate(status));
            }
            String contentType = "", retryAfter = "", connection = "", transferEncoding = "";
            long contentLength = -1;
            for (String h; !(h = line(c, deadline, timeoutNanos, budget)).isEmpty();) {
                if (h.charAt(0) == ' ' || h.charAt(0) == '\t') {
                    throw new IOException("a folded header line");
                }
                int colon = h.indexOf(':');
                if (colon <= 0) {
                    throw new IOException("a header line without a name: " + abbreviate(h));
                }
                String name = h.substring(0, colon).toLowerCase(Locale.ROOT), value = h.substring(colon + 1).strip();
                switch (name) {
                    case "content-length" -> {
                        long v = parseLength(value);
                        if (contentLength >= 0 && v != contentLength) {
                            throw new IOException("two Content-Length headers that differ");
                        }
                        contentLength = v;
                    }
                    case "content-type" -> contentType = contentType.isEmpty() ? value : contentType;
                    case "retry-after" -> retryAfter = retryAfter.isEmpty() ? value : retryAfter;
                    case "connection" -> connection += "," + value.toLowerCase(Locale.ROOT);
                    case "transfer-encoding" -> transferEncoding += "," + value.toLowerCase(Locale.ROOT);
                    default -> {
                        // not read
                    }
                }
            }
            if (code >= 100 && code < 200 && code != 101) {
                continue; // an interim answer: the real one follows
            }
            boolean keepAlive = http11 ? !connection.contains("close") : connection.contains("keep-alive");
            boolean ok = code == 200 && batch;
            int limit = ok ? MAX_BATCH_BODY : MAX_ERROR_BODY;
            byte[] body;
            int[] len = {0};
            if (code == 204 || code == 304 || code == 101) {
                body = new byte[0];
            } else if (!transferEncoding.isEmpty()) {
                if (!transferEncoding.strip().endsWith("chunked")) {
                    throw new IOException("Transfer-Encoding " + transferEncoding.substring(1) + " is not chunked");
                }
                body = chunked(c, deadline, timeoutNanos, limit, ok, len);
                contentLength = -1;
            } else if (contentLength >= 0) {
                if (ok && contentLength > limit) {
                    // No IDs come of a body over the size of a batch (the
                    // caller refuses it by its length): not read, the
                    // connection dropped.
                    discard(c);
                    return new Answer(code, contentType, contentLength, retryAfter, new byte[0], 0, url);
                }
                body = fixed(c, deadline, timeoutNanos, contentLength, limit, len);
            } else {
                body = toEnd(c, deadline, timeoutNanos, limit, ok, len);
                keepAlive = false;
            }
            if (keepAlive && c.pos == c.lim) {
                c.pos = 0;
                c.lim = 0;
                release(c);
            } else {
                discard(c); // not reusable, or bytes beyond the answer
            }
            return new Answer(code, contentType, contentLength, retryAfter, body, len[0], url);
        }
    }

    private static long parseLength(String v) throws IOException {
        if (v.isEmpty() || v.length() > 18 || !v.chars().allMatch(ch -> ch >= '0' && ch <= '9')) {
            throw new IOException("Content-Length " + abbreviate(v) + " is not a length");
        }
        return Long.parseLong(v);
    }

    /** Reads a body of n bytes, keeping the first limit (the rest read and dropped). */
    private static byte[] fixed(Conn c, long deadline, long timeoutNanos, long n, int limit, int[] len) throws IOException {
        byte[] out = new byte[(int) Math.min(n, limit)];
        long left = n;
        int k = 0;
        while (left > 0) {
            if (c.pos == c.lim) {
                c.pos = c.lim = 0;
                fill(c, deadline, timeoutNanos);
            }
            int take = (int) Math.min(left, c.lim - c.pos);
            int keep = Math.min(take, out.length - k);
            System.arraycopy(c.buf, c.pos, out, k, keep);
            k += keep;
            c.pos += take;
            left -= take;
        }
        len[0] = k;
        return out;
    }

    /** Reads a body to the end of the connection. */
    private static byte[] toEnd(Conn c, long deadline, long timeoutNanos, int limit, boolean strict, int[] len) throws IOException {
        byte[] out = new byte[1024];
        int k = 0;
        for (;;) {
            if (c.pos == c.lim) {
                c.pos = c.lim = 0;
                try {
                    fill(c, deadline, timeoutNanos);
                } catch (EOFException end) {
                    len[0] = k;
                    return out;
                }
            }
            int take = c.lim - c.pos;
            if (k + take > limit) {
                if (strict) {
                    throw new IOException("the body is over " + limit + " bytes, more than a batch takes");
                }
                take = Math.max(0, limit - k);
            }
            if (k + take > out.length) {
                out = Arrays.copyOf(out, Math.min(limit, Math.max(out.length * 2, k + take)));
            }
            System.arraycopy(c.buf, c.pos, out, k, take);
            k += take;
            c.pos = c.lim;
        }
    }

    /** Reads a chunked body. */
    private static byte[] chunked(Conn c, long deadline, long timeoutNanos, int limit, boolean strict, int[] len) throws IOException {
        byte[] out = new byte[1024];
        int k = 0;
        int[] budget = {MAX_HEADER_BYTES};
        for (;;) {
            String sizeLine = line(c, deadline, timeoutNanos, budget);
            int semi = sizeLine.indexOf(';');
            String hex = (semi < 0 ? sizeLine : sizeLine.substring(0, semi)).strip();
            long size;
            try {
                size = hex.isEmpty() || hex.length() > 8 ? -1 : Long.parseLong(hex, 16);
            } catch (NumberFormatException e) {
                size = -1;
            }
            if (size < 0) {
                throw new IOException("a chunk size that is not hexadecimal: " + abbreviate(sizeLine));
            }
            if (size == 0) {
                while (!line(c, deadline, timeoutNanos, budget).isEmpty()) {
                    // trailers, not read
                }
                len[0] = k;
                return out;
            }
            if (strict && k + size > limit) {
                throw new IOException("the body is over " + limit + " bytes, more than a batch takes");
            }
            int[] got = {0};
            byte[] chunk = fixed(c, deadline, timeoutNanos, size, limit, got);
            int keep = Math.min(got[0], limit - k);
            if (k + keep > out.length) {
                out = Arrays.copyOf(out, Math.max(out.length * 2, k + keep));
            }
            System.arraycopy(chunk, 0, out, k, keep);
            k += keep;
            if (!line(c, deadline, timeoutNanos, budget).isEmpty()) {
                throw new IOException("a chunk not followed by CRLF");
            }
        }
    }

    private static String abbreviate(String s) {
        return Json.quote(s.length() > 80 ? s.substring(0, 80) + "…" : s);
    }
}
