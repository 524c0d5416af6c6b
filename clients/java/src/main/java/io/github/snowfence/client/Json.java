package io.github.snowfence.client;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small JSON reader and string quoter, for the server's error bodies (and
 * the conformance runner's requests). Values come back as
 * {@code Map<String,Object>} (members in order), {@code List<Object>},
 * {@code String}, {@code Long} (an integer that fits), {@code Double} (any
 * other number), {@code Boolean} or {@code null}. The batch body is not read
 * with it: {@link BatchParser} reads that by hand, without boxing.
 */
final class Json {
    private final String s;
    private int i;

    private Json(String s) {
        this.s = s;
    }

    /**
     * Reads one JSON value that makes up the whole text (white space around it allowed).
     *
     * @param text the JSON text
     * @return the value
     * @throws IllegalArgumentException if the text is not one JSON value
     */
    public static Object parse(String text) {
        Json p = new Json(text);
        p.space();
        Object v = p.value();
        p.space();
        if (p.i != text.length()) {
            throw p.error("data after the value");
        }
        return v;
    }

    /**
     * Returns s as a JSON string literal, in double quotes.
     *
     * @param s the string
     * @return the literal
     */
    public static String quote(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (int k = 0; k < s.length(); k++) {
            char c = s.charAt(k);
            switch (c) {
                case '"' -> b.append("\\\"");
                case '\\' -> b.append("\\\\");
                case '\n' -> b.append("\\n");
                case '\r' -> b.append("\\r");
                case '\t' -> b.append("\\t");
                default -> {
                    if (c < 0x20 || c == 0x2028 || c == 0x2029) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
                }
            }
        }
        return b.append('"').toString();
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("JSON: " + what + " at offset " + i);
    }

    private void space() {
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            i++;
        }
    }

    private Object value() {
        if (i >= s.length()) {
            throw error("unexpected end");
        }
        char c = s.charAt(i);
        switch (c) {
            case '{':
                return object();
            case '[':
                return array();
            case '"':
                return string();
            case 't':
                return literal("true", Boolean.TRUE);
            case 'f':
                return literal("false", Boolean.FALSE);
            case 'n':
                return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) {
                    return number();
                }
                throw error("unexpected '" + c + "'");
        }
    }

    private Object literal(String word, Object v) {
        if (!s.startsWith(word, i)) {
            throw error("unexpected token");
        }
        i += word.length();
        return v;
    }

    private Map<String, Object> object() {
        Map<String, Object> m = new LinkedHashMap<>();
        i++;
        space();
        if (i < s.length() && s.charAt(i) == '}') {
            i++;
            return m;
        }
        for (;;) {
            space();
            if (i >= s.length() || s.charAt(i) != '"') {
                throw error("expected a member name");
            }
            String k = string();
            space();
            if (i >= s.length() || s.charAt(i) != ':') {
                throw error("expected ':'");
            }
            i++;
            space();
            m.put(k, value());
            space();
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
                continue;
            }
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                return m;
            }
            throw error("expected ',' or '}'");
        }
    }

    private List<Object> array() {
        List<Object> l = new ArrayList<>();
        i++;
        space();
        if (i < s.length() && s.charAt(i) == ']') {
            i++;
            return l;
        }
        for (;;) {
            space();
            l.add(value());
            space();
            if (i < s.length() && s.charAt(i) == ',') {
                i++;
                continue;
            }
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                return l;
            }
            throw error("expected ',' or ']'");
        }
    }

    private String string() {
        i++;
        StringBuilder b = null;
        int start = i;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c == '"') {
                String out = b == null ? s.substring(start, i) : b.append(s, start, i).toString();
                i++;
                return out;
            }
            if (c < 0x20) {
                throw error("control character in a string");
            }
            if (c != '\\') {
                i++;
                continue;
            }
            if (b == null) {
                b = new StringBuilder();
            }
            b.append(s, start, i);
            if (i + 1 >= s.length()) {
                break;
            }
            char e = s.charAt(i + 1);
            i += 2;
            switch (e) {
                case '"' -> b.append('"');
                case '\\' -> b.append('\\');
                case '/' -> b.append('/');
                case 'b' -> b.append('\b');
                case 'f' -> b.append('\f');
                case 'n' -> b.append('\n');
                case 'r' -> b.append('\r');
                case 't' -> b.append('\t');
                case 'u' -> {
                    if (i + 4 > s.length()) {
                        throw error("short \\u escape");
                    }
                    try {
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                    } catch (NumberFormatException x) {
                        throw error("bad \\u escape");
                    }
                    i += 4;
                }
                default -> throw error("bad escape");
            }
            start = i;
        }
        throw error("unterminated string");
    }

    private Object number() {
        int start = i;
        if (s.charAt(i) == '-') {
            i++;
        }
        boolean integral = true;
        while (i < s.length()) {
            char c = s.charAt(i);
            if (c >= '0' && c <= '9') {
                i++;
            } else if (c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
                integral = false;
                i++;
            } else {
                break;
            }
        }
        String t = s.substring(start, i);
        try {
            if (integral) {
                try {
                    return Long.parseLong(t);
                } catch (NumberFormatException big) {
                    // fall through to a double
                }
            }
            return Double.parseDouble(t);
        } catch (NumberFormatException x) {
            throw error("bad number " + t);
        }
    }
}
