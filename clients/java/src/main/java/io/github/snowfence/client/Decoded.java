package io.github.snowfence.client;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * An ID taken apart by {@link Schedule#decode(long)}: the fields of
 * {@code snowfence decode --json} without a lease store.
 *
 * @param id           the ID
 * @param layout       the name of the layout in force at the ID's timestamp ({@code v1}, {@code v2})
 * @param createdAt    the instant of the ID's timestamp (whole milliseconds)
 * @param region       the region number in decimal (this client knows no region names)
 * @param regionNumber the region number (0 in a layout without region bits)
 * @param machine      the machine number
 * @param sequence     the sequence number within the millisecond
 */
public record Decoded(long id, String layout, Instant createdAt, String region, int regionNumber, int machine, int sequence) {
    private static final DateTimeFormatter CREATED_AT =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    /**
     * Returns {@link #createdAt()} as {@code snowfence decode} prints it: UTC, three fraction digits.
     *
     * @return {@link #createdAt()} as {@code snowfence decode} prints it: UTC, three fraction digits
     */
    public String createdAtText() {
        return CREATED_AT.format(createdAt);
    }

    /**
     * Returns the JSON object {@code snowfence decode --json} prints, with
     * its fields in the same order, the ID as a string.
     *
     * @return the JSON text, one line
     */
    public String toJson() {
        return "{\"id\":\"" + id + "\",\"layout\":" + Json.quote(layout) + ",\"created_at\":\"" + createdAtText()
                + "\",\"region\":" + Json.quote(region) + ",\"region_number\":" + regionNumber + ",\"machine\":"
                + machine + ",\"sequence\":" + sequence + "}";
    }
}
