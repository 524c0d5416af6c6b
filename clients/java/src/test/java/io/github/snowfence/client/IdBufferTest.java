package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class IdBufferTest {
    private static long[] ids(long from, int n) {
        long[] a = new long[n];
        for (int i = 0; i < n; i++) {
            a[i] = from + i;
        }
        return a;
    }

    @Test
    void oldestFirstAcrossTheRingsEnd() {
        IdBuffer b = new IdBuffer(8);
        long next = 1, want = 1;
        // Push and take past the end of the ring (8) many times, chunks of 3 and 5.
        for (int round = 0; round < 50; round++) {
            int n = round % 2 == 0 ? 3 : 5;
            b.push(ids(next, n), n, 1_000);
            next += n;
            for (int i = 0; i < n; i++) {
                assertEquals(want++, b.take(0));
            }
            assertEquals(0, b.len());
        }
        assertEquals(0, b.take(0));
    }

    @Test
    void expiredChunksAreDroppedNeverHandedOut() {
        IdBuffer b = new IdBuffer(16);
        b.push(ids(1, 4), 4, 100);
        b.push(ids(5, 4), 4, 200);
        assertEquals(1, b.take(99));
        assertEquals(5, b.take(100)); // 2..4 expired at 100
        assertEquals(3, b.expired);
        b.dropExpired(200);
        assertEquals(0, b.len());
        assertEquals(6, b.expired);
        assertEquals(0, b.take(0));
    }

    @Test
    void takeNAcrossChunksAndTheRingsEnd() {
        IdBuffer b = new IdBuffer(8);
        b.push(ids(1, 6), 6, 300);
        long[] dst = new long[10];
        assertEquals(5, b.takeN(dst, 0, 5, 0));
        b.push(ids(7, 3), 3, 200); // wraps
        b.push(ids(10, 2), 2, 400);
        assertEquals(6, b.takeN(dst, 0, 10, 0));
        assertArrayEquals(new long[] {6, 7, 8, 9, 10, 11}, java.util.Arrays.copyOf(dst, 6));
        assertEquals(200, b.takenDeadline); // the earliest of the chunks taken from
    }

    @Test
    void manyChunksGrowTheChunkRing() {
        IdBuffer b = new IdBuffer(1024);
        for (int i = 0; i < 100; i++) {
            b.push(new long[] {i + 1}, 1, 1_000 + i);
        }
        for (int i = 0; i < 100; i++) {
            assertEquals(i + 1, b.take(1_000 + i - 1));
        }
        assertEquals(100, b.clear() + 100);
    }

    @Test
    void deadlinesAcrossTheClocksWrap() {
        // nanoTime readings compare by difference: a deadline past
        // Long.MAX_VALUE wraps negative and is still after now.
        IdBuffer b = new IdBuffer(4);
        long now = Long.MAX_VALUE - 10;
        b.push(ids(1, 2), 2, now + 100);
        assertEquals(1, b.take(now));
        assertEquals(2, b.take(now + 99));
        b.push(ids(3, 1), 1, now + 100);
        assertEquals(0, b.take(now + 100));
    }
}
