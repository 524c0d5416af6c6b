package io.github.snowfence.client;

import java.time.DateTimeException;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A layout schedule: which layout IDs are minted with from which instant
 * on, as the server's {@code --schedule} and {@code snowfence decode
 * --schedule} take it. The text is {@code v1}, or {@code v1,v2@2027-01-01T00:00:00Z}:
 * preset layout names separated by commas, each after the first with the
 * RFC 3339 instant it takes effect. Every layout keeps its timestamp in the
 * same bits, so an ID's timestamp picks the layout to decode it with.
 * Immutable and safe for concurrent use.
 *
 * <pre>{@code
 * Decoded d = Schedule.parse("v1").decode(id);
 * System.out.println(d.toJson());
 * }</pre>
 */
public final class Schedule {
    private final String text;
    private final Layout[] layouts;
    /** fromTick[i] is the first timestamp tick of layouts[i]; fromTick[0] is 0. */
    private final long[] fromTick;

    private Schedule(String text, Layout[] layouts, long[] fromTick) {
        this.text = text;
        this.layouts = layouts;
        this.fromTick = fromTick;
    }

    /** The default schedule: v1 from the epoch on. */
    public static final Schedule V1 = new Schedule("v1", new Layout[] {Layout.V1}, new long[] {0});

    // RFC 3339 as Go's time.Parse(time.RFC3339Nano, …) takes it.
    private static final Pattern INSTANT = Pattern.compile(
            "(\\d{4})-(\\d{2})-(\\d{2})T(\\d{2}):(\\d{2}):(\\d{2})(?:\\.(\\d+))?(?:Z|([+-])(\\d{2}):(\\d{2}))");

    /**
     * Reads a schedule text as {@code snowfence decode --schedule} does. The
     * empty (or blank) text is the default schedule, v1.
     *
     * @param text the schedule, e.g. {@code v1,v2@2027-01-01T00:00:00Z}
     * @return the schedule
     * @throws InvalidScheduleException for an unknown layout, a missing or
     *         extra {@code @instant}, an instant that is not RFC 3339, a
     *         cutover at or before the epoch, off a millisecond, out of order,
     *         or to the layout already in force
     */
    public static Schedule parse(String text) {
        if (text.strip().isEmpty()) {
            return V1;
        }
        String[] parts = text.split(",", -1);
        List<Layout> layouts = new ArrayList<>();
        long[] fromTick = new long[parts.length];
        String[] at = new String[parts.length];
        long[] fromMs = new long[parts.length];
        boolean[] wholeMs = new boolean[parts.length];
        // Each part is read in full (name, '@', instant) before the next,
        // and every part before the steps are checked, as the server's
        // ParseSchedule and NewSchedule do.
        for (int i = 0; i < parts.length; i++) {
            String part = parts[i].strip();
            int k = part.indexOf('@');
            String name = k < 0 ? part : part.substring(0, k);
            Layout l = Layout.byName(name);
            if (l == null) {
                throw new InvalidScheduleException("unknown layout \"" + name + "\" (known: v1, v2)");
            }
            if ((k >= 0) != (i > 0)) {
                throw new InvalidScheduleException("in \"" + text
                        + "\", every layout but the first needs @<RFC 3339 instant> and the first takes none");
            }
            layouts.add(l);
            if (k < 0) {
                continue;
            }
            at[i] = part.substring(k + 1);
            Matcher m = INSTANT.matcher(at[i]);
            long[] ms = m.matches() ? instantMs(m) : null;
            if (ms == null) {
                throw new InvalidScheduleException("cutover \"" + at[i]
                        + "\" is not an RFC 3339 instant such as 2028-01-01T00:00:00Z");
            }
            fromMs[i] = ms[0];
            wholeMs[i] = ms[1] == 0;
        }
        for (int i = 1; i < parts.length; i++) {
            Layout l = layouts.get(i);
            if (l.describe().equals(layouts.get(i - 1).describe())) {
                throw new InvalidScheduleException("layout " + l.name() + " at " + at[i]
                        + " repeats the layout in force before it; leave the step out");
            }
            long d = fromMs[i] - Layout.EPOCH_MS;
            if (d <= 0 || !wholeMs[i]) {
                throw new InvalidScheduleException("cutover to " + l.name() + " at " + at[i]
                        + " must be after the epoch and on a 1ms boundary");
            }
            fromTick[i] = d;
            if (fromTick[i] <= fromTick[i - 1]) {
                throw new InvalidScheduleException("cutovers must be in increasing order (" + l.name() + " at " + at[i] + ")");
            }
        }
        return new Schedule(text, layouts.toArray(new Layout[0]), fromTick);
    }

    /**
     * Returns {Unix milliseconds, nanoseconds beyond the millisecond} of a
     * matched instant, or null for fields out of range as Go's time.Parse
     * finds them (a 30 February, hour 24, second 60; an offset over 24 hours
     * or 60 minutes). Fraction digits beyond nine are ignored, as Go does.
     */
    private static long[] instantMs(Matcher m) {
        int hour = Integer.parseInt(m.group(4)), min = Integer.parseInt(m.group(5)), sec = Integer.parseInt(m.group(6));
        if (hour > 23 || min > 59 || sec > 59) {
            return null;
        }
        LocalDate date;
        try {
            date = LocalDate.of(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)), Integer.parseInt(m.group(3)));
        } catch (DateTimeException e) {
            return null;
        }
        long offsetS = 0;
        if (m.group(8) != null) {
            int oh = Integer.parseInt(m.group(9)), om = Integer.parseInt(m.group(10));
            if (oh > 24 || om > 60) {
                return null;
            }
            offsetS = (oh * 3600L + om * 60L) * (m.group(8).equals("-") ? -1 : 1);
        }
        long nanos = 0;
        if (m.group(7) != null) {
            String f = (m.group(7) + "00000000").substring(0, 9);
            nanos = Long.parseLong(f);
        }
        long seconds = date.toEpochDay() * 86400L + hour * 3600L + min * 60L + sec - offsetS;
        return new long[] {seconds * 1000 + nanos / 1_000_000, nanos % 1_000_000};
    }

    /**
     * Takes an ID apart, picking the layout by the ID's timestamp, as
     * {@code snowfence decode --json --schedule S ID} does without a lease
     * store (so {@code region} is the region number in decimal).
     *
     * @param id the ID
     * @return its fields
     * @throws InvalidIdException for a negative ID
     */
    public Decoded decode(long id) {
        if (id < 0) {
            throw new InvalidIdException(Long.toString(id), "IDs are never negative");
        }
        Layout l = layoutOf(id);
        long tick = l.tick(id);
        int region = l.region(id);
        return new Decoded(id, l.name(), java.time.Instant.ofEpochMilli(Layout.EPOCH_MS + tick), Integer.toString(region),
                region, l.machine(id), l.sequence(id));
    }

    /** Returns the layout in force at a non-negative ID's timestamp. */
    Layout layoutOf(long id) {
        long tick = id >>> (63 - layouts[0].timeBits());
        int i = layouts.length - 1;
        while (fromTick[i] > tick) {
            i--;
        }
        return layouts[i];
    }

    /** Returns the text the schedule was read from. */
    @Override
    public String toString() {
        return text;
    }
}
