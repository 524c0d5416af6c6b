package io.github.snowfence.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Reads the body of a 200 answer to {@code POST /v1/ids:batch?count=n}. It
 * takes exactly the documented shape, {@code {"ids":["…",…]}}, with
 * optional JSON white space between tokens: one object whose only member
 * is {@code "ids"} (spelled without escapes), an array of exactly n strings,
 * each an ID in canonical decimal (1 to 19 digits, no leading zero, at most
 * 2^63 − 1) greater than zero and greater than the one before it, and
 * nothing after the object. Anything else is refused as a whole: a body
 * that breaks a rule yields no IDs at all, not the ones before the break.
 * It is the Go client's parse.go, rule for rule.
 *
 * <p>It is written by hand, into a {@code long[]}, because it is the
 * client's only cost per ID besides the hand-out: a general JSON reader
 * would box every ID as a String and still need the checks of order and
 * count made here. Sixteen of an ID's digits are read eight at a time with
 * one 64-bit load each.
 */
final class BatchParser {
    private static final VarHandle LONG_LE = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private BatchParser() {
    }

    /**
     * Parses b[0..len) as a batch of exactly n IDs into dst[0..n).
     *
     * @return null when the body is a sound batch, else why it is not (dst's
     *         content is then meaningless and must not be used)
     */
    static String parse(byte[] b, int len, int n, long[] dst) {
        int i = space(b, len, 0);
        if (i >= len || b[i] != '{') {
            return fail(i, "not a JSON object {\"ids\":[…]}");
        }
        i = space(b, len, i + 1);
        if (len - i < 5 || b[i] != '"' || b[i + 1] != 'i' || b[i + 2] != 'd' || b[i + 3] != 's' || b[i + 4] != '"') {
            return fail(i, "the object's member is not \"ids\"");
        }
        i = space(b, len, i + 5);
        if (i >= len || b[i] != ':') {
            return fail(i, "expected ':' after \"ids\"");
        }
        i = space(b, len, i + 1);
        if (i >= len || b[i] != '[') {
            return fail(i, "\"ids\" is not an array");
        }
        i = space(b, len, i + 1);
        long prev = 0;
        for (int k = 0;; k++) {
            if (k == n) {
                return fail(i, "more than the " + n + " IDs asked for");
            }
            if (i >= len || b[i] != '"') {
                return fail(i, "expected an ID in double quotes");
            }
            i++;
            int d = i;
            long v = 0;
            // Sixteen digits eight at a time when they are there: an ID of
            // today has 17 to 19, and digit by digit is a chain of 19
            // dependent multiply-adds. (17 bytes: 16 digits and at least the
            // closing quote, so the loads stay inside the body.)
            if (len - i >= 17) {
                long x = (long) LONG_LE.get(b, i), y = (long) LONG_LE.get(b, i + 8);
                if (eightDigits(x) && eightDigits(y)) {
                    v = eightValue(x) * 100_000_000L + eightValue(y);
                    i += 16;
                }
            }
            while (i < len && i - d < 20 && b[i] >= '0' && b[i] <= '9') {
                v = v * 10 + (b[i] - '0'); // at most 19 digits: fits an unsigned 64-bit value
                i++;
            }
            int nd = i - d;
            if (nd == 0) {
                return fail(i, "an ID is not 1 to 19 decimal digits");
            }
            if (nd > 19) {
                return fail(d, "an ID has more than 19 digits");
            }
            if (b[d] == '0' && nd > 1) {
                return fail(d, "an ID has a leading zero");
            }
            if (v < 0) { // above 2^63 − 1 read as unsigned
                return fail(d, "an ID is larger than 9223372036854775807");
            }
            if (i >= len || b[i] != '"') {
                return fail(i, "an ID is not 1 to 19 decimal digits");
            }
            i++;
            if (v <= prev) {
                return fail(d, k == 0 ? "an ID is zero" : "the IDs are not strictly increasing");
            }
            dst[k] = v;
            prev = v;
            i = space(b, len, i);
            if (i < len && b[i] == ',') {
                i = space(b, len, i + 1);
                continue;
            }
            if (i < len && b[i] == ']') {
                if (k + 1 != n) {
                    return fail(i, (k + 1) + " IDs where " + n + " were asked for");
                }
                break;
            }
            return fail(i, "expected ',' or ']' after an ID");
        }
        i = space(b, len, i + 1);
        if (i >= len || b[i] != '}') {
            return fail(i, "expected '}' after the array; the object has only \"ids\"");
        }
        i = space(b, len, i + 1);
        if (i != len) {
            return fail(i, "data after the object");
        }
        return null;
    }

    private static String fail(int at, String what) {
        return what + " at offset " + at;
    }

    /** Reports whether the eight bytes of x (little-endian) are all ASCII digits. */
    static boolean eightDigits(long x) {
        return ((x & 0xF0F0F0F0F0F0F0F0L) | (((x + 0x0606060606060606L) & 0xF0F0F0F0F0F0F0F0L) >>> 4)) == 0x3333333333333333L;
    }

    /** Returns the value of the eight ASCII digits in x (little-endian, first digit lowest). */
    static long eightValue(long x) {
        x -= 0x3030303030303030L;
        x = x * 10 + (x >>> 8); // pairs of digits
        final long mask = 0x000000FF000000FFL;
        return ((x & mask) * (100L + (1_000_000L << 32)) + ((x >>> 16) & mask) * (1L + (10_000L << 32))) >>> 32;
    }

    private static int space(byte[] b, int len, int i) {
        while (i < len) {
            byte c = b[i];
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return i;
            }
            i++;
        }
        return i;
    }
}
