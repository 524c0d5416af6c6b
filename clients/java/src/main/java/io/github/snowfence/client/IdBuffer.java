package io.github.snowfence.client;

/**
 * The IDs received and not yet handed out, oldest first, in a ring of
 * {@code long}, with one chunk record per response: where its IDs end and
 * when they expire (the Go client's buffer.go). The hand-out is written by
 * hand, on primitive arrays, because it is the whole cost of a warm
 * {@code next()}: a queue of boxed {@code Long}s would allocate per ID and
 * chase a pointer per ID, and a deadline per chunk makes the age check one
 * comparison per call instead of a timestamp per ID. Deadlines are
 * {@link TimeSource#nanoTime()} readings, compared by difference so that the
 * clock's wrap-around does not matter. The client's lock guards a buffer.
 */
final class IdBuffer {
    private final long[] ids; // a power of two long
    private final int mask;
    /** Positions since the start: ids[(int) p & mask]. */
    private long head, tail;
    /** The chunks still buffered, oldest first: a ring of end positions and deadlines. */
    private long[] chunkEnd = new long[16], chunkDeadline = new long[16];
    private int first, count;
    /** IDs dropped for age. */
    long expired;
    /** The earliest deadline of the chunks the last {@link #takeN} took IDs from. */
    long takenDeadline;

    IdBuffer(int capacity) {
        int n = 1;
        while (n < capacity) {
            n <<= 1;
        }
        ids = new long[n];
        mask = n - 1;
    }

    /** Returns the number of IDs buffered, expired ones not yet dropped included. */
    int len() {
        return (int) (tail - head);
    }

    /**
     * Hands out the oldest ID that has not expired at now, dropping the
     * expired ones before it, or returns 0 when there is none (an ID is
     * never 0: the parser refuses it).
     */
    long take(long now) {
        while (count > 0) {
            int c = first;
            long end = chunkEnd[c];
            if (now - chunkDeadline[c] < 0) {
                long id = ids[(int) head & mask];
                if (++head == end) {
                    pop();
                }
                return id;
            }
            expired += end - head;
            head = end;
            pop();
        }
        return 0;
    }

    /**
     * Copies up to n IDs that have not expired at now into dst from off, as
     * {@link #take}, and sets {@link #takenDeadline} to the earliest deadline
     * of the chunks it took from. Returns how many it copied.
     */
    int takeN(long[] dst, int off, int n, long now) {
        int got = 0;
        boolean any = false;
        while (got < n && count > 0) {
            int c = first;
            long end = chunkEnd[c], deadline = chunkDeadline[c];
            if (now - deadline >= 0) {
                expired += end - head;
                head = end;
                pop();
                continue;
            }
            if (!any || deadline - takenDeadline < 0) {
                takenDeadline = deadline;
                any = true;
            }
            int k = (int) Math.min(n - got, end - head);
            int at = (int) head & mask;
            int first = Math.min(k, ids.length - at);
            System.arraycopy(ids, at, dst, off + got, first);
            System.arraycopy(ids, 0, dst, off + got + first, k - first);
            head += k;
            got += k;
            if (head == end) {
                pop();
            }
        }
        return got;
    }

    /** Drops the chunks expired at now. */
    void dropExpired(long now) {
        while (count > 0 && now - chunkDeadline[first] >= 0) {
            long end = chunkEnd[first];
            expired += end - head;
            head = end;
            pop();
        }
    }

    private void pop() {
        first = (first + 1) & (chunkEnd.length - 1);
        count--;
    }

    /** Adds the IDs src[0..n) of one response, which must fit, expiring at deadline. */
    void push(long[] src, int n, long deadline) {
        if (n == 0) {
            return;
        }
        int at = (int) tail & mask;
        int first = Math.min(n, ids.length - at);
        System.arraycopy(src, 0, ids, at, first);
        System.arraycopy(src, first, ids, 0, n - first);
        tail += n;
        if (count == chunkEnd.length) {
            grow();
        }
        int c = (this.first + count) & (chunkEnd.length - 1);
        chunkEnd[c] = tail;
        chunkDeadline[c] = deadline;
        count++;
    }

    private void grow() {
        long[] e = new long[chunkEnd.length * 2], d = new long[chunkEnd.length * 2];
        for (int i = 0; i < count; i++) {
            int c = (first + i) & (chunkEnd.length - 1);
            e[i] = chunkEnd[c];
            d[i] = chunkDeadline[c];
        }
        chunkEnd = e;
        chunkDeadline = d;
        first = 0;
    }

    /** Drops every ID and returns how many there were. */
    int clear() {
        int n = len();
        head = tail;
        first = 0;
        count = 0;
        return n;
    }
}
