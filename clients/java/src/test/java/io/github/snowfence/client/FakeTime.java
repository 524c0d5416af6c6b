package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A time source that moves only when the test says so: sleep blocks until
 * {@link #advance} has moved the clock past its end (the Go tests'
 * fakeclock). Tests wait for a sleeper with {@link #awaitWaiters}, never
 * with a real sleep.
 */
final class FakeTime implements TimeSource {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final long start = 5_000_000_000L;
    private long now = start;
    /** The ends of the sleeps in progress; a sleep whose end the clock reached counts no more, at once. */
    private final java.util.List<Long> sleeps = new java.util.ArrayList<>();

    @Override
    public long nanoTime() {
        lock.lock();
        try {
            return now;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public long currentTimeMillis() {
        return 1_800_000_000_000L + (nanoTime() - start) / 1_000_000;
    }

    @Override
    public void sleep(long nanos) throws InterruptedException {
        lock.lock();
        try {
            Long until = now + nanos;
            sleeps.add(until);
            changed.signalAll();
            try {
                while (now - until < 0) {
                    changed.await();
                }
            } finally {
                sleeps.remove(until);
                changed.signalAll();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Moves the clock on, waking the sleepers whose end it reaches. */
    void advance(Duration d) {
        lock.lock();
        try {
            now += d.toNanos();
            changed.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Returns how many threads sleep on the clock now: whose sleep's end the
     * clock has not reached (one that {@link #advance} just ended no longer
     * counts, even before its thread runs).
     */
    int waiters() {
        lock.lock();
        try {
            return waitersLocked();
        } finally {
            lock.unlock();
        }
    }

    private int waitersLocked() {
        int n = 0;
        for (long until : sleeps) {
            if (now - until < 0) {
                n++;
            }
        }
        return n;
    }

    /** Waits (up to 30 s of real time, then fails) until n threads sleep on the clock. */
    void awaitWaiters(int n) throws InterruptedException {
        lock.lock();
        try {
            long left = TimeUnit.SECONDS.toNanos(30);
            while (waitersLocked() < n) {
                if (left <= 0) {
                    fail("no " + n + " sleepers on the fake clock within 30 s (" + waitersLocked() + ")");
                }
                left = changed.awaitNanos(left);
            }
        } finally {
            lock.unlock();
        }
    }
}
