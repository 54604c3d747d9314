package rmqit;

import java.util.Collection;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A small JSON writer for the peer's output lines: maps keep their insertion order, every character outside
 * printable ASCII is written as a {@code \\uXXXX} escape (like Python's {@code ensure_ascii}), so stdout is
 * plain ASCII whatever the platform encoding.
 */
final class Json {
    private Json() {
    }

    /** An ordered map to fill with {@code put} calls: {@code Json.obj().put("a", 1)}. */
    static Obj obj() {
        return new Obj();
    }

    /** A {@link LinkedHashMap} whose {@code put} returns itself, for building objects in one expression. */
    static final class Obj extends LinkedHashMap<String, Object> {
        private static final long serialVersionUID = 1L;

        Obj with(String key, Object value) {
            put(key, value);
            return this;
        }

        /** Adds the entry only when {@code value} is not null. */
        Obj maybe(String key, Object value) {
            if (value != null) {
                put(key, value);
            }
            return this;
        }
    }

    static String write(Object value) {
        StringBuilder out = new StringBuilder(128);
        write(out, value);
        return out.toString();
    }

    private static void write(StringBuilder out, Object value) {
        if (value == null) {
            out.append("null");
        } else if (value instanceof String) {
            string(out, (String) value);
        } else if (value instanceof Boolean) {
            out.append(((Boolean) value).booleanValue() ? "true" : "false");
        } else if (value instanceof Double || value instanceof Float) {
            double d = ((Number) value).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                out.append("null");
            } else {
                out.append(Double.toString(d));
            }
        } else if (value instanceof Number) {
            out.append(((Number) value).longValue());
        } else if (value instanceof Map) {
            out.append('{');
            Iterator<? extends Map.Entry<?, ?>> it = ((Map<?, ?>) value).entrySet().iterator();
            while (it.hasNext()) {
                Map.Entry<?, ?> entry = it.next();
                string(out, String.valueOf(entry.getKey()));
                out.append(':');
                write(out, entry.getValue());
                if (it.hasNext()) {
                    out.append(',');
                }
            }
            out.append('}');
        } else if (value instanceof Collection) {
            out.append('[');
            Iterator<?> it = ((Collection<?>) value).iterator();
            while (it.hasNext()) {
                write(out, it.next());
                if (it.hasNext()) {
                    out.append(',');
                }
            }
            out.append(']');
        } else if (value instanceof Enum) {
            string(out, ((Enum<?>) value).name());
        } else {
            string(out, value.toString());
        }
    }

    private static void string(StringBuilder out, String text) {
        out.append('"');
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '"':
                    out.append("\\\"");
                    break;
                case '\\':
                    out.append("\\\\");
                    break;
                case '\n':
                    out.append("\\n");
                    break;
                case '\r':
                    out.append("\\r");
                    break;
                case '\t':
                    out.append("\\t");
                    break;
                case '\b':
                    out.append("\\b");
                    break;
                case '\f':
                    out.append("\\f");
                    break;
                default:
                    if (c < 0x20 || c > 0x7e) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }
}
