package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The strict reading of a batch body: the Go client's TestParseBatch cases, and the SWAR digit reading against digit by digit. */
class BatchParserTest {
    private static String parse(String body, int n, long[] dst) {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        return BatchParser.parse(b, b.length, n, dst);
    }

    @Test
    void sound() {
        Object[][] good = {
            {"{\"ids\":[\"1\",\"2\",\"97301141913751557\"]}", new long[] {1, 2, 97301141913751557L}},
            {" {\n \"ids\" : [ \"5\" ,\t\"6\" ] } \r\n", new long[] {5, 6}},
            {"{\"ids\":[\"1234567890123456\",\"12345678901234567\"]}", new long[] {1234567890123456L, 12345678901234567L}},
            {"{\"ids\":[\"9223372036854775806\",\"9223372036854775807\"]}", new long[] {9223372036854775806L, Long.MAX_VALUE}},
        };
        for (Object[] g : good) {
            long[] want = (long[]) g[1];
            long[] dst = new long[want.length];
            assertNull(parse((String) g[0], want.length, dst), (String) g[0]);
            assertArrayEquals(want, dst, (String) g[0]);
        }
    }

    @Test
    void refused() {
        Object[][] bad = {
            {"", 1}, {"[\"1\"]", 1}, {"{\"id\":\"1\"}", 1}, {"{\"ids\":[\"1\"],\"more\":1}", 1},
            {"{\"ids\":[\"1\"],\"ids\":[\"2\"]}", 1}, {"{\"\\u0069ds\":[\"1\"]}", 1}, {"{\"IDS\":[\"1\"]}", 1},
            {"{\"ids\":\"1\"}", 1}, {"{\"ids\":[]}", 1}, {"{\"ids\":[\"1\",\"2\"]}", 3}, {"{\"ids\":[\"1\",\"2\",\"3\"]}", 2},
            {"{\"ids\":[1]}", 1}, {"{\"ids\":[\"0\"]}", 1}, {"{\"ids\":[\"-1\"]}", 1}, {"{\"ids\":[\"01\"]}", 1},
            {"{\"ids\":[\"+1\"]}", 1}, {"{\"ids\":[\" 1\"]}", 1}, {"{\"ids\":[\"1.0\"]}", 1}, {"{\"ids\":[\"\\u0031\"]}", 1},
            {"{\"ids\":[\"9223372036854775808\"]}", 1}, {"{\"ids\":[\"1234567812345a78901\"]}", 1},
            {"{\"ids\":[\"12345678:2345678901\"]}", 1}, {"{\"ids\":[\"10000000000000000000\"]}", 1},
            {"{\"ids\":[\"5\",\"5\"]}", 2}, {"{\"ids\":[\"6\",\"5\"]}", 2}, {"{\"ids\":[\"1\",]}", 1},
            {"{\"ids\":[\"1\"]", 1}, {"{\"ids\":[\"1\",\"2", 2}, {"{\"ids\":[\"1\"]}x", 1},
            {"{\"ids\":[\"1\"]}{\"ids\":[\"2\"]}", 1}, {"null", 1}, {"\uFEFF{\"ids\":[\"1\"]}", 1},
            {"{\"ids\":[\"99999999999999999999\"]}", 1}, {"{\"ids\":[\"18446744073709551615\"]}", 1},
        };
        for (Object[] c : bad) {
            assertNotNull(parse((String) c[0], (Integer) c[1], new long[1000]), (String) c[0]);
        }
    }

    @Test
    void eightDigitsAgainstDigitByDigit() {
        Random r = new Random(1);
        byte[] b = new byte[8];
        for (int i = 0; i < 2_000_000; i++) {
            for (int k = 0; k < 8; k++) {
                // mostly digits, sometimes their neighbours and any byte
                int pick = r.nextInt(10);
                b[k] = (byte) (pick < 7 ? '0' + r.nextInt(10) : pick < 9 ? "/:\u0000\u00ff".charAt(r.nextInt(4)) : r.nextInt(256));
            }
            long x = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getLong();
            boolean all = true;
            long v = 0;
            for (int k = 0; k < 8; k++) {
                all &= b[k] >= '0' && b[k] <= '9';
                v = v * 10 + (b[k] - '0');
            }
            assertEquals(all, BatchParser.eightDigits(x), Arrays.toString(b));
            if (all) {
                assertEquals(v, BatchParser.eightValue(x), Arrays.toString(b));
            }
        }
    }

    @Test
    void everyLength() {
        // IDs of 1 to 19 digits, each the largest of its length, read in one batch.
        StringBuilder b = new StringBuilder("{\"ids\":[");
        long[] want = new long[19];
        long v = 0;
        for (int d = 1; d <= 19; d++) {
            v = d == 19 ? Long.MAX_VALUE : v * 10 + 9;
            want[d - 1] = v;
            b.append(d > 1 ? "," : "").append('"').append(v).append('"');
        }
        long[] dst = new long[19];
        assertNull(parse(b.append("]}").toString(), 19, dst));
        assertArrayEquals(want, dst);
    }
}
