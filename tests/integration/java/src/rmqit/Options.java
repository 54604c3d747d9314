package rmqit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Command-line options of one command: {@code --name VALUE}, {@code --name=VALUE}, flags, and options that
 * may be repeated. Anything not declared for the command is a usage error, as with peer.py's argparse.
 */
final class Options {
    enum Kind { VALUE, FLAG, MULTI }

    private final String command;
    private final Map<String, Kind> declared = new LinkedHashMap<String, Kind>();
    private final Map<String, String> defaults = new HashMap<String, String>();
    private final List<String> required = new ArrayList<String>();
    private final Map<String, List<String>> values = new HashMap<String, List<String>>();

    Options(String command) {
        this.command = command;
    }

    String command() {
        return command;
    }

    Options value(String name, String defaultValue) {
        declared.put(name, Kind.VALUE);
        if (defaultValue != null) {
            defaults.put(name, defaultValue);
        }
        return this;
    }

    Options requiredValue(String name) {
        declared.put(name, Kind.VALUE);
        required.add(name);
        return this;
    }

    Options flag(String name) {
        declared.put(name, Kind.FLAG);
        return this;
    }

    Options multi(String name) {
        declared.put(name, Kind.MULTI);
        return this;
    }

    Options parse(String[] argv, int from) throws UsageError {
        for (int i = from; i < argv.length; i++) {
            String arg = argv[i];
            if (!arg.startsWith("--") || arg.length() == 2) {
                throw new UsageError(command + ": unexpected argument " + arg);
            }
            String name = arg.substring(2);
            String inline = null;
            int eq = name.indexOf('=');
            if (eq >= 0) {
                inline = name.substring(eq + 1);
                name = name.substring(0, eq);
            }
            Kind kind = declared.get(name);
            if (kind == null) {
                throw new UsageError(command + ": unrecognized option --" + name);
            }
            String value;
            if (kind == Kind.FLAG) {
                if (inline != null) {
                    throw new UsageError(command + ": --" + name + " takes no value");
                }
                value = "true";
            } else if (inline != null) {
                value = inline;
            } else {
                if (i + 1 >= argv.length) {
                    throw new UsageError(command + ": --" + name + " expects a value");
                }
                value = argv[++i];
            }
            List<String> list = values.get(name);
            if (list == null) {
                list = new ArrayList<String>();
                values.put(name, list);
            }
            if (kind != Kind.MULTI) {
                list.clear();
            }
            list.add(value);
        }
        for (String name : required) {
            if (!values.containsKey(name)) {
                throw new UsageError(command + ": the option --" + name + " is required");
            }
        }
        return this;
    }

    boolean has(String name) {
        return values.containsKey(name);
    }

    String get(String name) {
        check(name);
        List<String> list = values.get(name);
        return list == null ? defaults.get(name) : list.get(list.size() - 1);
    }

    List<String> all(String name) {
        check(name);
        List<String> list = values.get(name);
        return list == null ? Collections.<String>emptyList() : list;
    }

    boolean flagged(String name) {
        check(name);
        return values.containsKey(name);
    }

    int integer(String name) throws UsageError {
        String text = get(name);
        try {
            return Integer.parseInt(text.trim());
        } catch (RuntimeException e) {
            throw new UsageError(command + ": --" + name + " wants an integer, got " + text);
        }
    }

    long longValue(String name) throws UsageError {
        String text = get(name);
        try {
            return Long.parseLong(text.trim());
        } catch (RuntimeException e) {
            throw new UsageError(command + ": --" + name + " wants an integer, got " + text);
        }
    }

    double seconds(String name) throws UsageError {
        String text = get(name);
        try {
            double value = Double.parseDouble(text.trim());
            if (value < 0 || Double.isNaN(value)) {
                throw new NumberFormatException();
            }
            return value;
        } catch (RuntimeException e) {
            throw new UsageError(command + ": --" + name + " wants a number of seconds, got " + text);
        }
    }

    private void check(String name) {
        if (!declared.containsKey(name)) {
            throw new IllegalStateException("option --" + name + " is not declared for " + command);
        }
    }

    /** A bad argument or message spec: an {@code error} line and exit code 2. */
    static final class UsageError extends Exception {
        private static final long serialVersionUID = 1L;

        UsageError(String message) {
            super(message);
        }
    }
}
