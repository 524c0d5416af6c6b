package io.github.snowfence.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Remembers, per stream (layout, region number, machine number), the last
 * ID the client received, and refuses a batch that does not start above it:
 * the check {@link SnowfenceClient.Builder#repeatCheck(Schedule)} turns on
 * (the Go client's Config.Schedule, repeat.go). The IDs of one stream
 * strictly increase over time, across holders of the number, and one
 * client sends one request at a time, so a sound answer always starts above
 * the mark; a replayed or duplicated answer does not. A batch's first and
 * last IDs are decoded; only when they are of different streams (a batch
 * minted across a change of layout or machine number) is every ID decoded.
 * Owned by the refill thread.
 */
final class RepeatCheck {
    private record Stream(String layout, int region, int machine) {
    }

    private static final class Run {
        final Stream key;
        final long first;
        long last;

        Run(Stream key, long first, long last) {
            this.key = key;
            this.first = first;
            this.last = last;
        }
    }

    private final Schedule schedule;
    private final Map<Stream, Long> last = new HashMap<>();
    private final List<Run> runs = new ArrayList<>();

    RepeatCheck(Schedule schedule) {
        this.schedule = schedule;
    }

    private Stream key(long id) {
        Layout l = schedule.layoutOf(id);
        return new Stream(l.name(), l.region(id), l.machine(id));
    }

    /**
     * Takes the IDs ids[0..n) of one answer, strictly increasing and
     * positive, and returns why some may have been received before (null if
     * none can have been), remembering their marks only if none can.
     */
    String check(long[] ids, int n) {
        long first = ids[0], lastId = ids[n - 1];
        runs.clear();
        Stream k0 = key(first);
        runs.add(new Run(k0, first, lastId));
        if (!key(lastId).equals(k0)) {
            runs.clear();
            for (int i = 0; i < n; i++) {
                Stream k = key(ids[i]);
                if (!runs.isEmpty() && runs.get(runs.size() - 1).key.equals(k)) {
                    runs.get(runs.size() - 1).last = ids[i];
                    continue;
                }
                runs.add(new Run(k, ids[i], ids[i]));
            }
        }
        // A stream's later runs in the batch start above its earlier ones'
        // ends (the batch increases), so checking each against the mark from
        // before the batch is enough.
        for (Run r : runs) {
            Long prev = last.get(r.key);
            if (prev != null && r.first <= prev) {
                return "ID " + r.first + " is not above ID " + prev + ", the last received before from machine "
                        + r.key.machine() + " of region " + r.key.region() + " (layout " + r.key.layout()
                        + "), whose IDs only increase: the answer repeats IDs (a replayed or duplicated response)";
            }
        }
        for (Run r : runs) {
            last.put(r.key, r.last);
        }
        return null;
    }
}
