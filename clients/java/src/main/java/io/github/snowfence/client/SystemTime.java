package io.github.snowfence.client;

/** The system's clocks. */
final class SystemTime implements TimeSource {
    static final SystemTime INSTANCE = new SystemTime();

    private SystemTime() {
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public long currentTimeMillis() {
        return System.currentTimeMillis();
    }

    @Override
    public void sleep(long nanos) throws InterruptedException {
        if (nanos > 0) {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        }
    }
}
