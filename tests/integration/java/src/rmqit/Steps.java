package rmqit;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONArray;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code steps}: several commands run one after another in this one JVM, for tests that would otherwise start
 * a JVM per command (the compatibility matrix asks a client for four operations per serialization; a JVM
 * start costs about a second of CPU, most of what such a command spends).
 *
 * <pre>
 * java … rmqit.Peer steps --timeout SECONDS --spec -   (stdin: a JSON list of argv lists)
 * </pre>
 *
 * <p>Each step is a command line as the peer takes it (command first, {@code --spec} given inline), run as it
 * would run alone: its own client, shut down (and its {@code done} line printed) before the next step starts,
 * its own {@code --timeout} (the watchdog's deadline is moved to at least that far from the step's start). A
 * {@code step} line opens each step and a {@code step_end} line, with the exit code the step would have ended a
 * process with, closes it; every line between them is the step's. A step that fails does not stop the next
 * ones. The exit code is the first non-zero step code, else 0; a step may not be {@code steps} or
 * {@code probe}.
 */
final class Steps {
    static final String COMMAND = "steps";

    private Steps() {
    }

    static int run(String[] argv) throws Exception {
        List<String[]> steps;
        try {
            Options o = new Options(COMMAND);
            o.value("timeout", "30");
            o.requiredValue("spec");
            o.parse(argv, 1);
            Peer.watchdog = new Peer.Watchdog(o.seconds("timeout")).start();
            steps = parse("-".equals(o.get("spec")) ? Specs.readAll(System.in) : o.get("spec"));
        } catch (Options.UsageError e) {
            Peer.out.emit("error", Json.obj().with("error_type", "UsageError").with("message", e.getMessage()));
            return Peer.EXIT_USAGE;
        }
        int first = Peer.EXIT_OK;
        for (int index = 0; index < steps.size(); index++) {
            String[] step = steps.get(index);
            Peer.PROGRESS.reset();
            Peer.out.emit("step", Json.obj().with("index", index).with("command", step[0]));
            int code = Peer.runCommand(step);
            Peer.out.emit("step_end", Json.obj().with("index", index).with("code", code));
            if (first == Peer.EXIT_OK) {
                first = code;
            }
        }
        return first;
    }

    /** The steps: a non-empty JSON list of non-empty lists of strings, none of them a nested run. */
    static List<String[]> parse(String text) throws Options.UsageError {
        Object loaded;
        try {
            loaded = JSON.parse(text);
        } catch (RuntimeException e) {
            throw new Options.UsageError("steps: the spec is not JSON: " + e.getMessage());
        }
        if (!(loaded instanceof JSONArray) || ((JSONArray) loaded).isEmpty()) {
            throw new Options.UsageError("steps: the spec must be a non-empty list of command lines");
        }
        List<String[]> steps = new ArrayList<String[]>();
        for (Object item : (JSONArray) loaded) {
            if (!(item instanceof JSONArray) || ((JSONArray) item).isEmpty()) {
                throw new Options.UsageError("steps: each step must be a non-empty list of strings");
            }
            JSONArray words = (JSONArray) item;
            String[] step = new String[words.size()];
            for (int i = 0; i < step.length; i++) {
                if (!(words.get(i) instanceof String)) {
                    throw new Options.UsageError("steps: each step must be a non-empty list of strings");
                }
                step[i] = (String) words.get(i);
            }
            if (COMMAND.equals(step[0]) || "probe".equals(step[0])) {
                throw new Options.UsageError("steps: a step cannot be " + step[0]);
            }
            steps.add(step);
        }
        return steps;
    }
}
