package rmqit;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.parser.Feature;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.rocketmq.common.message.Message;

/**
 * Message specs, as peer.py reads them: a JSON object or list of objects from {@code --spec} (or stdin with
 * {@code --spec -}), else one message from {@code --body/--tags/--keys/--property/--delay-level}. Fields:
 * topic, body or body_b64, tags, keys (string or list), properties, delay_level, sharding_key, and one of
 * deliver_time_ms, delay_time_ms, delay_time_sec (a 5.x timer message, set through the 5.x client's own setter).
 * Each spec is sent {@code --count} times; in text bodies {@code {i}} becomes the running index.
 */
final class Specs {
    private static final Set<String> FIELDS = new HashSet<String>(Arrays.asList(
        "topic", "body", "body_b64", "tags", "keys", "properties", "delay_level", "sharding_key",
        "deliver_time_ms", "delay_time_ms", "delay_time_sec"));
    /** Spec field -> the 5.x Message setter writing it (absent from 4.x clients: looked up by name). */
    private static final String[][] TIMER_SETTERS = {
        {"deliver_time_ms", "setDeliverTimeMs"},
        {"delay_time_ms", "setDelayTimeMs"},
        {"delay_time_sec", "setDelayTimeSec"},
    };

    private Specs() {
    }

    /** One message to send. */
    static final class Spec {
        String topic;
        byte[] body;
        boolean text;
        String tags;
        String keys;
        Map<String, String> properties = new LinkedHashMap<String, String>();
        Integer delayLevel;
        Long shardingKey;
        /** The timer setter's name and its value, or null. */
        String timerSetter;
        long timerValue;

        Spec copyWithBody(byte[] newBody) {
            Spec copy = new Spec();
            copy.topic = topic;
            copy.body = newBody;
            copy.text = text;
            copy.tags = tags;
            copy.keys = keys;
            copy.properties = new LinkedHashMap<String, String>(properties);
            copy.delayLevel = delayLevel;
            copy.shardingKey = shardingKey;
            copy.timerSetter = timerSetter;
            copy.timerValue = timerValue;
            return copy;
        }

        /** The client's Message; user properties go through putUserProperty (which refuses system names). */
        Message toMessage() throws Options.UsageError {
            Message msg = new Message(topic, body);
            if (tags != null) {
                msg.setTags(tags);
            }
            if (keys != null) {
                msg.setKeys(keys);
            }
            for (Map.Entry<String, String> entry : properties.entrySet()) {
                try {
                    msg.putUserProperty(entry.getKey(), entry.getValue());
                } catch (RuntimeException e) {
                    throw new Options.UsageError("property " + entry.getKey() + ": " + e.getMessage());
                }
            }
            if (delayLevel != null) {
                msg.setDelayTimeLevel(delayLevel.intValue());
            }
            if (timerSetter != null) {
                try {
                    Message.class.getMethod(timerSetter, long.class).invoke(msg, Long.valueOf(timerValue));
                } catch (NoSuchMethodException e) {
                    throw new Options.UsageError(timerSetter + " is not in this client (timer messages are 5.x)");
                } catch (ReflectiveOperationException e) {
                    throw new Options.UsageError(timerSetter + ": " + e);
                }
            }
            return msg;
        }
    }

    static List<Spec> parse(Options opts, InputStream stdin) throws Options.UsageError {
        List<JSONObject> raws = new ArrayList<JSONObject>();
        String spec = opts.get("spec");
        if (spec != null) {
            String text = "-".equals(spec) ? readAll(stdin) : spec;
            Object loaded;
            try {
                loaded = JSON.parse(text, Feature.OrderedField);
            } catch (RuntimeException e) {
                throw new Options.UsageError("message spec is not JSON: " + e.getMessage());
            }
            if (loaded instanceof JSONObject) {
                raws.add((JSONObject) loaded);
            } else if (loaded instanceof JSONArray && !((JSONArray) loaded).isEmpty()) {
                for (Object item : (JSONArray) loaded) {
                    if (!(item instanceof JSONObject)) {
                        throw new Options.UsageError("message spec must be an object or a non-empty list of objects");
                    }
                    raws.add((JSONObject) item);
                }
            } else {
                throw new Options.UsageError("message spec must be an object or a non-empty list of objects");
            }
        } else {
            JSONObject raw = new JSONObject(true);
            raw.put("body", opts.get("body"));
            if (opts.get("tags") != null) {
                raw.put("tags", opts.get("tags"));
            }
            if (opts.get("keys") != null) {
                raw.put("keys", opts.get("keys"));
            }
            if (!opts.all("property").isEmpty()) {
                JSONObject props = new JSONObject(true);
                for (String pair : opts.all("property")) {
                    int eq = pair.indexOf('=');
                    if (eq <= 0) {
                        throw new Options.UsageError("--property wants KEY=VALUE, got " + pair);
                    }
                    props.put(pair.substring(0, eq), pair.substring(eq + 1));
                }
                raw.put("properties", props);
            }
            if (opts.get("delay-level") != null) {
                raw.put("delay_level", opts.integer("delay-level"));
            }
            raws.add(raw);
        }
        List<Spec> parsed = new ArrayList<Spec>();
        for (int n = 0; n < raws.size(); n++) {
            parsed.add(fromObject(raws.get(n), opts.get("topic"), "message " + n));
        }
        int count = opts.integer("count");
        List<Spec> specs = new ArrayList<Spec>();
        int index = 0;
        for (int round = 0; round < count; round++) {
            for (Spec one : parsed) {
                byte[] body = one.body;
                if (one.text) {
                    String text = new String(body, StandardCharsets.UTF_8).replace("{i}", Integer.toString(index));
                    body = text.getBytes(StandardCharsets.UTF_8);
                }
                specs.add(one.copyWithBody(body));
                index++;
            }
        }
        return specs;
    }

    private static Spec fromObject(JSONObject raw, String defaultTopic, String where) throws Options.UsageError {
        for (String key : raw.keySet()) {
            if (!FIELDS.contains(key)) {
                throw new Options.UsageError(where + ": unknown field " + key);
            }
        }
        Spec spec = new Spec();
        Object topic = raw.containsKey("topic") ? raw.get("topic") : defaultTopic;
        if (!(topic instanceof String) || ((String) topic).isEmpty()) {
            throw new Options.UsageError(where + ": no topic (give --topic or a 'topic' field)");
        }
        spec.topic = (String) topic;
        if (raw.containsKey("body_b64")) {
            try {
                spec.body = Base64.getDecoder().decode(String.valueOf(raw.get("body_b64")));
            } catch (IllegalArgumentException e) {
                throw new Options.UsageError(where + ": body_b64 is not base64: " + e.getMessage());
            }
            spec.text = false;
        } else {
            Object body = raw.get("body");
            spec.body = (body == null ? "" : String.valueOf(body)).getBytes(StandardCharsets.UTF_8);
            spec.text = true;
        }
        Object tags = raw.get("tags");
        spec.tags = tags == null ? null : String.valueOf(tags);
        Object keys = raw.get("keys");
        if (keys instanceof List) {
            StringBuilder joined = new StringBuilder();
            for (Object key : (List<?>) keys) {
                if (joined.length() > 0) {
                    joined.append(' ');  // MessageConst.KEY_SEPARATOR
                }
                joined.append(String.valueOf(key));
            }
            spec.keys = joined.toString();
        } else if (keys != null) {
            spec.keys = String.valueOf(keys);
        }
        Object props = raw.get("properties");
        if (props != null) {
            if (!(props instanceof Map)) {
                throw new Options.UsageError(where + ": properties must be an object");
            }
            for (Map.Entry<?, ?> entry : ((Map<?, ?>) props).entrySet()) {
                spec.properties.put(String.valueOf(entry.getKey()), String.valueOf(entry.getValue()));
            }
        }
        spec.delayLevel = integer(raw.get("delay_level"), where, "delay_level");
        Long sharding = null;
        Object key = raw.get("sharding_key");
        if (key != null) {
            if (!(key instanceof Number)) {
                throw new Options.UsageError(where + ": sharding_key must be an integer");
            }
            sharding = Long.valueOf(((Number) key).longValue());
        }
        spec.shardingKey = sharding;
        for (String[] setter : TIMER_SETTERS) {
            Object value = raw.get(setter[0]);
            if (value == null) {
                continue;
            }
            if (!(value instanceof Number) || spec.timerSetter != null) {
                throw new Options.UsageError(where + ": " + setter[0] + " must be an integer, and only one timer field");
            }
            spec.timerSetter = setter[1];
            spec.timerValue = ((Number) value).longValue();
        }
        return spec;
    }

    private static Integer integer(Object value, String where, String name) throws Options.UsageError {
        if (value == null) {
            return null;
        }
        if (!(value instanceof Number)) {
            throw new Options.UsageError(where + ": " + name + " must be an integer");
        }
        return Integer.valueOf(((Number) value).intValue());
    }

    static String readAll(InputStream in) throws Options.UsageError {
        try {
            ByteArrayOutputStream buffer = new ByteArrayOutputStream();
            byte[] chunk = new byte[8192];
            int n;
            while ((n = in.read(chunk)) > 0) {
                buffer.write(chunk, 0, n);
            }
            return new String(buffer.toByteArray(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new Options.UsageError("cannot read the message spec from stdin: " + e);
        }
    }
}
