package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.junit.jupiter.api.Test;

/** The repeat check's marks per stream (layout, region, machine) (the Go client's repeat_test.go). */
class RepeatCheckTest {
    /** An ID of v1 at tick t, machine m, sequence q. */
    private static long v1(long t, int m, int q) {
        return t << 22 | (long) m << 12 | q;
    }

    @Test
    void oneStream() {
        RepeatCheck r = new RepeatCheck(Schedule.V1);
        assertNull(r.check(new long[] {v1(10, 1, 0), v1(10, 1, 1)}, 2));
        assertNotNull(r.check(new long[] {v1(10, 1, 1), v1(10, 1, 2)}, 2), "starts at the last one received");
        assertNotNull(r.check(new long[] {v1(9, 1, 5)}, 1), "below the mark");
        assertNull(r.check(new long[] {v1(10, 1, 2)}, 1), "a refused answer leaves the mark as it was");
    }

    @Test
    void streamsApart() {
        RepeatCheck r = new RepeatCheck(Schedule.V1);
        assertNull(r.check(new long[] {v1(10, 2, 0)}, 1));
        // Machine 1's IDs are below machine 2's last, and are their own stream.
        assertNull(r.check(new long[] {v1(10, 1, 0)}, 1));
        // A batch across two machines is checked per run: machine 1 again from its sequence 0 is a repeat.
        assertNotNull(r.check(new long[] {v1(10, 1, 0), v1(10, 2, 7)}, 2));
        assertNull(r.check(new long[] {v1(10, 1, 1), v1(10, 2, 7)}, 2));
        assertNull(r.check(new long[] {v1(11, 2, 0)}, 1));
        assertNotNull(r.check(new long[] {v1(11, 2, 0)}, 1));
    }
}
