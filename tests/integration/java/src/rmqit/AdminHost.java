package rmqit;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import org.apache.rocketmq.tools.command.MQAdminStartup;

/**
 * Apache's mqadmin, unchanged, run for one command after another in a JVM that stays up.
 *
 * <p>The suite runs mqadmin several hundred times. Started afresh, every run spends most of its second of
 * CPU loading and compiling the same classes, on a 2-core machine whose cores the servers under test
 * need. Here each command is {@code MQAdminStartup.main(args)}, exactly what {@code mqadmin} runs, with
 * {@code System.out} and {@code System.err} pointed at files the caller named.
 *
 * <p>Requests come on stdin, one line each: space-separated fields, each Base64 of UTF-8 text; the first
 * two are the stdout and stderr files, the rest mqadmin's arguments. When the command returns, the line
 * {@code done} goes to the real stdout. A command that calls {@code System.exit} itself (help, options
 * mqadmin cannot parse) ends this JVM with its status, as it would end mqadmin's: the caller reads that
 * status and the files. The end of stdin (the caller closed it, or died) ends the JVM with status 0.
 *
 * <p>Each command starts with mqadmin's sub-command objects made afresh, and without the name-server address
 * the previous one set
 * ({@code rocketmq.namesrv.addr}, which mqadmin sets from {@code -n}), so a command without {@code -n}
 * finds the address where a fresh mqadmin would: in its environment.
 */
public final class AdminHost {
    private static final String NAMESRV_ADDR_PROPERTY = "rocketmq.namesrv.addr";

    private AdminHost() {
    }

    public static void main(String[] argv) throws IOException {
        PrintStream control = new PrintStream(new FileOutputStream(FileDescriptor.out), true, "US-ASCII");
        PrintStream realErr = System.err;
        System.setOut(realErr);
        BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line;
        while ((line = requests.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] fields = decode(line);
            if (fields.length < 2) {
                realErr.println("AdminHost: a request needs its two output files: " + line);
                System.exit(1);
            }
            String[] args = Arrays.copyOfRange(fields, 2, fields.length);
            try (PrintStream out = new PrintStream(new FileOutputStream(fields[0]), true, "UTF-8");
                 PrintStream err = new PrintStream(new FileOutputStream(fields[1]), true, "UTF-8")) {
                System.clearProperty(NAMESRV_ADDR_PROPERTY);
                forgetSubCommands();
                System.setOut(out);
                System.setErr(err);
                try {
                    MQAdminStartup.main(args);
                } catch (Throwable e) {
                    // mqadmin's main catches Exception itself; an Error escaping it would have ended its JVM
                    // with status 1 after printing the trace, so end this one the same way.
                    e.printStackTrace(err);
                    err.flush();
                    System.exit(1);
                } finally {
                    out.flush();
                    err.flush();
                    // Between commands whatever a client thread still prints goes to this JVM's stderr, never
                    // into the control stream or the next command's files.
                    System.setOut(realErr);
                    System.setErr(realErr);
                }
            }
            control.print("done\n");
            control.flush();
        }
        System.exit(0);
    }

    /**
     * Empties mqadmin's static list of sub-command objects. {@code main} adds a new set on every call and
     * runs the first match, so without this every command would run on the object of the first call with
     * its name, and some keep state there (sendMessage keeps its producer, shut down after the first
     * send). A fresh mqadmin starts from an empty list; so does each command here.
     */
    private static void forgetSubCommands() {
        for (Field field : MQAdminStartup.class.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers()) && List.class.isAssignableFrom(field.getType())) {
                try {
                    field.setAccessible(true);
                    ((List<?>) field.get(null)).clear();
                } catch (ReflectiveOperationException | RuntimeException e) {
                    throw new IllegalStateException("cannot reset mqadmin's sub-commands: " + e, e);
                }
            }
        }
    }

    private static String[] decode(String line) {
        String[] parts = line.split(" ", -1);
        String[] fields = new String[parts.length];
        for (int i = 0; i < parts.length; i++) {
            fields[i] = new String(Base64.getDecoder().decode(parts[i]), StandardCharsets.UTF_8);
        }
        return fields;
    }
}
