package io.github.snowfence.client;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.Arrays;

/**
 * The benchmark of {@link SnowfenceClient#next()} (JMH is not available
 * offline: Debian does not package it). A timed loop: warm-up rounds, then
 * timed rounds, each its own figure, and the median printed.
 *
 * <ul>
 * <li>{@code warm}: next from a full buffer, the per-ID cost once the IDs are
 * in hand (goal ≤ 100 ns/ID, 0 bytes allocated): the buffer (2^20 IDs, fed by
 * an in-memory transport, never expiring) is filled untimed, then emptied
 * but one with next, timed.</li>
 * <li>{@code steady}: next with the refills running beside it through the
 * in-memory transport and the batch parser: the client's whole cost per ID
 * but the network.</li>
 * <li>{@code nextN}: nextN(dst, 0, 100) from a full buffer, per ID.</li>
 * </ul>
 *
 * <pre>{@code
 * clients/java/build.sh
 * java -cp clients/java/target/build/snowfence-client.jar:clients/java/target/build/tools \
 *     io.github.snowfence.client.NextBenchmark [rounds]
 * }</pre>
 */
public final class NextBenchmark {
    private NextBenchmark() {
    }

    private static final int BUFFER = 1 << 20;

    /**
     * Runs the benchmark.
     *
     * @param args the number of timed rounds (default 10)
     * @throws Exception on any failure
     */
    public static void main(String[] args) throws Exception {
        int rounds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long self = Thread.currentThread().getId();
        try (SnowfenceClient c = SnowfenceClient.builder().endpoints("http://ids.invalid").maxAge(Duration.ofHours(1))
                .minRefill(BUFFER).maxBuffer(BUFFER).lowWater(1).transport(new MemTransport()).build()) {
            double[] ns = new double[rounds];
            double[] bytes = new double[rounds];
            for (int r = -5; r < rounds; r++) { // five warm-up rounds
                int n = c.refillAndWait() - 1; // leave one: the refill starts at one
                long a0 = mx.getThreadAllocatedBytes(self);
                long t0 = System.nanoTime();
                long sink = 0;
                for (int i = 0; i < n; i++) {
                    sink += c.next();
                }
                long t1 = System.nanoTime();
                long a1 = mx.getThreadAllocatedBytes(self);
                if (sink == 42) {
                    System.out.println();
                }
                if (r >= 0) {
                    ns[r] = (double) (t1 - t0) / n;
                    bytes[r] = (double) (a1 - a0) / n;
                }
            }
            report("warm next", ns, bytes);

            for (int r = -5; r < rounds; r++) {
                int n = c.refillAndWait() - 1;
                long[] dst = new long[100];
                long t0 = System.nanoTime();
                long a0 = mx.getThreadAllocatedBytes(self);
                for (int i = 0; i + 100 <= n; i += 100) {
                    c.nextN(dst, 0, 100);
                }
                long a1 = mx.getThreadAllocatedBytes(self);
                long t1 = System.nanoTime();
                if (r >= 0) {
                    ns[r] = (double) (t1 - t0) / (n / 100 * 100);
                    bytes[r] = (double) (a1 - a0) / (n / 100 * 100);
                }
            }
            report("warm nextN(100), per ID", ns, bytes);
        }
        try (SnowfenceClient c = SnowfenceClient.builder().endpoints("http://ids.invalid").maxAge(Duration.ofHours(1))
                .transport(new MemTransport()).build()) {
            double[] ns = new double[rounds];
            double[] bytes = new double[rounds];
            int n = 5_000_000;
            for (int r = -3; r < rounds; r++) {
                long a0 = mx.getThreadAllocatedBytes(self);
                long t0 = System.nanoTime();
                long sink = 0;
                for (int i = 0; i < n; i++) {
                    sink += c.next();
                }
                long t1 = System.nanoTime();
                long a1 = mx.getThreadAllocatedBytes(self);
                if (sink == 42) {
                    System.out.println();
                }
                if (r >= 0) {
                    ns[r] = (double) (t1 - t0) / n;
                    bytes[r] = (double) (a1 - a0) / n;
                }
            }
            report("steady next (refills and parsing beside it, in memory)", ns, bytes);
        }
    }

    private static void report(String what, double[] ns, double[] bytes) {
        StringBuilder runs = new StringBuilder();
        for (double v : ns) {
            runs.append(String.format(" %.1f", v));
        }
        double[] s = ns.clone();
        Arrays.sort(s);
        double[] b = bytes.clone();
        Arrays.sort(b);
        System.out.printf("%-55s median %6.1f ns/ID  (runs:%s)  caller allocates %.3f B/ID%n", what, s[s.length / 2], runs,
                b[b.length / 2]);
    }
}
