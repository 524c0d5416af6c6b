package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/**
 * Decode and schedule parsing against {@code snowfence decode}: the expected
 * answers are the CLI's own, printed by
 * {@code go run ./cmd/snowfence decode --json --schedule S ID} for each case
 * (and its exit status 2, "invalid layout", for each refused schedule).
 * The conformance driver compares the same live (scenario "decode").
 */
class ScheduleTest {
    private static final String[][] CLI = {
        {"v1", "0", "{\"id\":\"0\",\"layout\":\"v1\",\"created_at\":\"2026-01-01T00:00:00.000Z\",\"region\":\"0\",\"region_number\":0,\"machine\":0,\"sequence\":0}"},
        {"v1", "1", "{\"id\":\"1\",\"layout\":\"v1\",\"created_at\":\"2026-01-01T00:00:00.000Z\",\"region\":\"0\",\"region_number\":0,\"machine\":0,\"sequence\":1}"},
        {"v1", "4194304", "{\"id\":\"4194304\",\"layout\":\"v1\",\"created_at\":\"2026-01-01T00:00:00.001Z\",\"region\":\"0\",\"region_number\":0,\"machine\":0,\"sequence\":0}"},
        {"v1", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v1\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"0\",\"region_number\":0,\"machine\":298,\"sequence\":2051}"},
        {"v1", "9223372036854775807", "{\"id\":\"9223372036854775807\",\"layout\":\"v1\",\"created_at\":\"2095-09-07T15:47:35.551Z\",\"region\":\"0\",\"region_number\":0,\"machine\":1023,\"sequence\":4095}"},
        {"v1", "122737757115260928", "{\"id\":\"122737757115260928\",\"layout\":\"v1\",\"created_at\":\"2026-12-05T16:36:01.653Z\",\"region\":\"0\",\"region_number\":0,\"machine\":546,\"sequence\":0}"},
        {"v2", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
        {"v2", "9223372036854775807", "{\"id\":\"9223372036854775807\",\"layout\":\"v2\",\"created_at\":\"2095-09-07T15:47:35.551Z\",\"region\":\"7\",\"region_number\":7,\"machine\":511,\"sequence\":1023}"},
        {"v2", "122737757115260928", "{\"id\":\"122737757115260928\",\"layout\":\"v2\",\"created_at\":\"2026-12-05T16:36:01.653Z\",\"region\":\"4\",\"region_number\":4,\"machine\":136,\"sequence\":0}"},
        {"v1,v2@2027-01-01T00:00:00Z", "4194304", "{\"id\":\"4194304\",\"layout\":\"v1\",\"created_at\":\"2026-01-01T00:00:00.001Z\",\"region\":\"0\",\"region_number\":0,\"machine\":0,\"sequence\":0}"},
        {"v1,v2@2027-01-01T00:00:00Z", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
        {"v1,v2@2027-01-01T00:00:00Z", "122737757115260928", "{\"id\":\"122737757115260928\",\"layout\":\"v1\",\"created_at\":\"2026-12-05T16:36:01.653Z\",\"region\":\"0\",\"region_number\":0,\"machine\":546,\"sequence\":0}"},
        {"v1,v2@2027-01-01T00:00:00Z", "4611686018427387904", "{\"id\":\"4611686018427387904\",\"layout\":\"v2\",\"created_at\":\"2060-11-03T19:53:47.776Z\",\"region\":\"0\",\"region_number\":0,\"machine\":0,\"sequence\":0}"},
        {"v2,v1@2030-06-15T12:34:56.789+02:00", "122737757115260928", "{\"id\":\"122737757115260928\",\"layout\":\"v2\",\"created_at\":\"2026-12-05T16:36:01.653Z\",\"region\":\"4\",\"region_number\":4,\"machine\":136,\"sequence\":0}"},
        {"v2,v1@2030-06-15T12:34:56.789+02:00", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v1\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"0\",\"region_number\":0,\"machine\":298,\"sequence\":2051}"},
        // The first ID of the cutover's millisecond, and the last before it.
        {"v2,v1@2030-06-15T12:34:56.789+02:00", "589402458980089856", "{\"id\":\"589402458980089856\",\"layout\":\"v1\",\"created_at\":\"2030-06-15T10:34:56.789Z\",\"region\":\"0\",\"region_number\":0,\"machine\":0,\"sequence\":0}"},
        {"v2,v1@2030-06-15T12:34:56.789+02:00", "589402458980089855", "{\"id\":\"589402458980089855\",\"layout\":\"v2\",\"created_at\":\"2030-06-15T10:34:56.788Z\",\"region\":\"7\",\"region_number\":7,\"machine\":511,\"sequence\":1023}"},
        // Schedules the CLI takes in forms beyond the plain one.
        {" v1 , v2@2027-01-01T00:00:00Z ", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
        {"", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v1\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"0\",\"region_number\":0,\"machine\":298,\"sequence\":2051}"},
        {"v1,v2@2027-01-01T00:00:00+24:00", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
        {"v1,v2@2027-01-01T00:00:00+23:60", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
        {"v1,v2@2027-01-01T00:00:00.000000000000Z", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
        {"v1,v2@2026-01-01T00:00:00.001Z", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
        {"v1,v2@2027-01-01T00:00:00-00:00", "683244571854022659", "{\"id\":\"683244571854022659\",\"layout\":\"v2\",\"created_at\":\"2031-03-01T09:30:00.000Z\",\"region\":\"2\",\"region_number\":2,\"machine\":170,\"sequence\":3}"},
    };

    /** Schedules the CLI refuses ("invalid layout", exit status 2). */
    private static final String[] REFUSED = {
        "v9", "V1", "v1,,v2", "v1@2027-01-01T00:00:00Z", " v1@2027-01-01T00:00:00Z", "v1,v2",
        "v1,v1@2027-01-01T00:00:00Z", "v1,v2@2025-01-01T00:00:00Z", "v1,v2@2026-01-01T00:00:00Z",
        "v1,v2@2027-01-01T00:00:00Z,v1@2026-06-01T00:00:00Z",
        "v1,v2@2027-01-01T00:00:00.1234567891Z", "v1,v2@2027-01-01T00:00:00.000100Z",
        "v1,v2@2027-01-01T00:00:00,5Z", "v1,v2@2027-01-01t00:00:00Z", "v1,v2@2027-01-01T00:00:00z",
        "v1,v2@2027-02-30T00:00:00Z", "v1,v2@2027-01-01T24:00:00Z", "v1,v2@2027-01-01T00:00:60Z",
        "v1,v2@2027-01-01T00:00:00+99:00", "v1,v2@2027-01-01T00:00:00+00:99", "v1,v2@2027-01-01T00:00:00+0100",
        "v1,v2@2027-01-01T00:00:00+01", "v1,v2@2027-01-01T00:00:00", "v1,v2@2027-1-01T00:00:00Z",
        "v1,v2@2027-01-01T00:00:00.Z", "v1,v2@+2027-01-01T00:00:00Z", "v1,v2@0000-01-01T00:00:00Z",
    };

    @Test
    void decodeMatchesTheCli() {
        for (String[] c : CLI) {
            Decoded d = Schedule.parse(c[0]).decode(Ids.parse(c[1]));
            assertEquals(c[2], d.toJson(), "decode --schedule '" + c[0] + "' " + c[1]);
        }
    }

    @Test
    void refusedSchedules() {
        for (String s : REFUSED) {
            assertThrows(InvalidScheduleException.class, () -> Schedule.parse(s), s);
        }
    }

    @Test
    void negativeIdRefused() {
        assertThrows(InvalidIdException.class, () -> Schedule.V1.decode(-1));
    }

    @Test
    void decodedFields() {
        Decoded d = Schedule.parse("v2").decode(683244571854022659L);
        assertEquals("v2", d.layout());
        assertEquals(2, d.regionNumber());
        assertEquals("2", d.region());
        assertEquals(170, d.machine());
        assertEquals(3, d.sequence());
        assertEquals("2031-03-01T09:30:00.000Z", d.createdAtText());
        assertEquals(1930123800000L, d.createdAt().toEpochMilli()); // 2031-03-01T09:30:00Z
    }
}
