package io.github.snowfence.client;

/**
 * IDs in text. An ID is a Java {@code long}, never negative; in JSON, URLs
 * and logs it is written in canonical decimal, and read back only from that
 * form. Use these rather than {@link Long#parseLong(String)}, which also takes
 * signs and leading zeros, so that one ID has one spelling.
 */
public final class Ids {
    private Ids() {
    }

    /**
     * Returns an ID in canonical decimal.
     *
     * @param id the ID
     * @return its decimal text
     */
    public static String toString(long id) {
        return Long.toString(id);
    }

    /**
     * Reads an ID in canonical decimal: 1 to 19 digits, no sign, no leading
     * zero, at most 9223372036854775807 ({@link Long#MAX_VALUE}). It takes
     * what {@code snowfence decode} takes as a decimal ID.
     *
     * @param s the text
     * @return the ID
     * @throws InvalidIdException if s is not that form
     */
    public static long parse(String s) {
        if (s.isEmpty()) {
            throw fail(s, "empty; an ID is 1 to 19 decimal digits");
        }
        if (s.length() > 19) {
            throw fail(s, "more than 19 characters; the largest ID is 9223372036854775807");
        }
        if (s.length() > 1 && s.charAt(0) == '0') {
            throw fail(s, "leading zero; write the ID without one");
        }
        long v = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') {
                throw fail(s, "character '" + c + "' at offset " + i
                        + " is not a decimal digit (no signs, spaces or separators)");
            }
            v = v * 10 + (c - '0'); // 19 digits cannot overflow an unsigned 64-bit value
        }
        if (v < 0) { // above 2^63 − 1 as an unsigned value
            throw fail(s, "larger than 9223372036854775807, the largest ID");
        }
        return v;
    }

    private static InvalidIdException fail(String s, String reason) {
        String in = s.length() > 40 ? s.substring(0, 40) + "…" : s;
        return new InvalidIdException(in, reason);
    }
}
