package io.github.snowfence.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class IdsTest {
    @Test
    void canonicalDecimal() {
        assertEquals(0, Ids.parse("0"));
        assertEquals(1, Ids.parse("1"));
        assertEquals(97301141913751557L, Ids.parse("97301141913751557"));
        assertEquals(Long.MAX_VALUE, Ids.parse("9223372036854775807"));
        assertEquals("9223372036854775807", Ids.toString(Long.MAX_VALUE));
        assertEquals("97301141913751557", Ids.toString(Ids.parse("97301141913751557")));
    }

    @Test
    void refused() {
        for (String s : new String[] {"", "-1", "+1", "01", "00", " 1", "1 ", "12a", "1.0", "1e3", "9223372036854775808",
            "18446744073709551615", "99999999999999999999", "١", "0x10"}) {
            assertThrows(InvalidIdException.class, () -> Ids.parse(s), s);
        }
    }
}
