package io.github.snowfence.client;

/**
 * How a 64-bit ID is cut into fields: bit 63 is zero, then from the top the
 * timestamp (milliseconds since 2026-01-01T00:00:00Z), region, machine and
 * sequence. The two presets are the server's {@code v1} and {@code v2}
 * (layout.go at the repository root).
 */
record Layout(String name, int timeBits, int regionBits, int machineBits, int sequenceBits) {
    /** The epoch of v1 and v2, 2026-01-01T00:00:00Z, in Unix milliseconds. */
    static final long EPOCH_MS = 1_767_225_600_000L;

    /** v1: 41 bits of milliseconds, 10 of machine, 12 of sequence. */
    static final Layout V1 = new Layout("v1", 41, 0, 10, 12);
    /** v2: 41 bits of milliseconds, 3 of region, 9 of machine, 10 of sequence. */
    static final Layout V2 = new Layout("v2", 41, 3, 9, 10);

    /** Returns a preset by name, or null. */
    static Layout byName(String name) {
        return switch (name) {
            case "v1" -> V1;
            case "v2" -> V2;
            default -> null;
        };
    }

    /** Returns the timestamp tick of an ID. */
    long tick(long id) {
        return id >>> (regionBits + machineBits + sequenceBits);
    }

    int region(long id) {
        return (int) (id >>> (machineBits + sequenceBits) & ((1L << regionBits) - 1));
    }

    int machine(long id) {
        return (int) (id >>> sequenceBits & ((1L << machineBits) - 1));
    }

    int sequence(long id) {
        return (int) (id & ((1L << sequenceBits) - 1));
    }

    /** Returns the text the server's Layout.String gives, used to tell two layouts apart. */
    String describe() {
        return name + " (" + timeBits + "/" + regionBits + "/" + machineBits + "/" + sequenceBits + " bits, 1ms since 2026-01-01T00:00:00.000Z)";
    }
}
