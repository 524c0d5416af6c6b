package io.github.snowfence.client;

import java.nio.charset.StandardCharsets;

/**
 * An in-memory transport that answers every mint request with a batch of
 * increasing IDs, cheaply: each ID is a 16-digit batch number followed by
 * three digits of position, so a body is made by writing the batch number
 * into a fixed template (the Go client's memTransport). Health probes get 200.
 */
final class MemTransport implements Transport {
    private long batch = 1_000_000_000_000_000L;
    private final byte[] template;
    private final int[] pos;

    MemTransport() {
        StringBuilder b = new StringBuilder("{\"ids\":[");
        pos = new int[SnowfenceClient.MAX_BATCH];
        for (int i = 0; i < SnowfenceClient.MAX_BATCH; i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append('"');
            pos[i] = b.length();
            b.append(batch).append(String.format("%03d", i)).append('"');
        }
        template = b.append("]}").toString().getBytes(StandardCharsets.US_ASCII);
    }

    @Override
    public synchronized Answer post(String url, long timeoutNanos) {
        int n = Integer.parseInt(url.substring(url.lastIndexOf('=') + 1));
        batch++;
        byte[] digits = Long.toString(batch).getBytes(StandardCharsets.US_ASCII);
        int end = pos[n - 1] + 19 + 1;
        byte[] body = new byte[end + 2];
        System.arraycopy(template, 0, body, 0, end);
        for (int i = 0; i < n; i++) {
            System.arraycopy(digits, 0, body, pos[i], 16);
        }
        body[end] = ']';
        body[end + 1] = '}';
        return new Answer(200, "application/json", body.length, "", body, body.length, url);
    }

    @Override
    public int get(String url, long timeoutNanos) {
        return 200;
    }

    @Override
    public void close() {
    }
}
