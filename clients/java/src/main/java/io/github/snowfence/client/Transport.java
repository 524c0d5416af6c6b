package io.github.snowfence.client;

import java.io.IOException;

/**
 * Sends the client's two kinds of request: a mint ({@code POST}, no body) and
 * a health probe ({@code GET}). The real one is {@link HttpTransport}; tests
 * and the benchmark give one in memory (the Go client's Config.HTTPClient
 * transport seam).
 */
interface Transport {
    /** The most of a 200 body read: 1,000 IDs of 19 digits in quotes take 22,010 bytes; the rest is room for white space. */
    int MAX_BATCH_BODY = 64 << 10;
    /** How much of an error body is read; the rest is discarded. */
    int MAX_ERROR_BODY = 4 << 10;

    /**
     * An answer: its status, the headers the client reads, and its body (of
     * a 200, all of it, at most {@link #MAX_BATCH_BODY} bytes; of another
     * status, its first {@link #MAX_ERROR_BODY} bytes).
     *
     * @param finalUrl the URL that answered (another than the one asked for
     *                 only after a redirect followed by an HTTP client given
     *                 by the caller)
     */
    record Answer(int status, String contentType, long contentLength, String retryAfter, byte[] body, int bodyLength,
            String finalUrl) {
    }

    /**
     * POSTs to url with no body and reads the answer whole, within timeoutNanos.
     *
     * @throws IOException for a connection error, a timeout, a body cut
     *         short or a 200 body over {@link #MAX_BATCH_BODY}: no IDs may be
     *         taken from such an answer
     */
    Answer post(String url, long timeoutNanos) throws IOException, InterruptedException;

    /** GETs url within timeoutNanos, discards the body, and returns the status. */
    int get(String url, long timeoutNanos) throws IOException, InterruptedException;

    /** Releases what the transport holds of its own (threads, connections). */
    void close();
}
