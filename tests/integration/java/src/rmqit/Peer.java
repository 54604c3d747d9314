package rmqit;

import java.io.File;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.io.UnsupportedEncodingException;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.acl.common.AclClientRPCHook;
import org.apache.rocketmq.acl.common.SessionCredentials;
import org.apache.rocketmq.client.ClientConfig;
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.remoting.RPCHook;
import org.apache.rocketmq.remoting.exception.RemotingException;

/**
 * Apache's Java RocketMQ client as a test peer: one command per process, speaking the JSON-lines protocol of
 * {@code tests/integration/cpp_peer/peer.py}, so the same Python tests drive the C++, Java and Go clients.
 *
 * <pre>
 * java -cp CLASSES:JARS rmqit.Peer COMMAND --namesrv HOST:PORT [options] --timeout SECONDS
 * </pre>
 *
 * <p>Commands: send-sync, send-async, send-oneway, send-orderly, send-batch, send-transaction, push-consume,
 * pull-consume (DefaultLitePullConsumer), sql-select (DefaultMQPullConsumer, many SQL92 expressions), route,
 * clusters, topic-route, probe; and {@code steps}, several of those one after another in this one JVM (see
 * {@link Steps}).
 *
 * <p>Every line on stdout is one JSON object with an {@code "event"} key: ready, send_result, sent_oneway,
 * check (a transaction check-back), queue, message, selected, route, clusters, topic_route, library, error,
 * timeout, done. Nothing else is printed there: {@code System.out} is pointed at stderr before any client class loads,
 * and the client logs go to files under {@code $HOME/logs/rocketmqlogs} (the runner gives every peer a
 * scratch HOME); when a run fails, the tail of those logs is copied to stderr.
 *
 * <p>Exit codes: 0 done; 1 an internal error of this program; 2 bad arguments or message spec; 3 timed out;
 * 4 the client reported an error; 5 the client's classes cannot be loaded; 6 a consumer ran out of messages
 * before the expected count; 7 the parent process went away.
 *
 * <p>Header serialization (JSON or ROCKETMQ) follows {@code -Drocketmq.serialize.type}, as with any Apache
 * client; it is not an option of this program.
 */
public final class Peer {
    static final int EXIT_OK = 0;
    static final int EXIT_INTERNAL = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_TIMEOUT = 3;
    static final int EXIT_CLIENT_ERROR = 4;
    static final int EXIT_NO_LIBRARY = 5;
    static final int EXIT_INCOMPLETE = 6;
    static final int EXIT_ORPHANED = 7;

    /** Set by the runner to its own pid (the parent seen at start-up may already be a reaper). */
    static final String PARENT_PID_ENV = "CPP_PEER_PARENT_PID";
    static final String LOG_DIR_PROPERTY = "rmqit.log.dir";

    static Out out;
    static final Progress PROGRESS = new Progress();
    static Watchdog watchdog;

    private Peer() {
    }

    /** What the watchdog reports if it has to end the run. */
    static final class Progress {
        volatile String stage = "starting";
        final AtomicInteger count = new AtomicInteger();
        volatile Integer index;

        Json.Obj snapshot() {
            return Json.obj().with("stage", stage).with("count", count.get()).with("index", index);
        }

        /** Back to a fresh run's state: the next step of {@code steps} starts counting from zero. */
        void reset() {
            stage = "starting";
            count.set(0);
            index = null;
        }
    }

    public static void main(String[] argv) {
        PrintStream stdout;
        try {
            stdout = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "US-ASCII");
        } catch (UnsupportedEncodingException e) {
            throw new IllegalStateException(e);
        }
        System.setOut(System.err);  // whatever a library prints goes to stderr; stdout carries JSON lines only
        out = new Out(stdout);
        String logDir = setUpLogging();
        int code;
        try {
            code = run(argv);
        } catch (LinkageError e) {
            e.printStackTrace(System.err);
            out.tryEmit("error", Json.obj().with("error_type", "BindingUnavailable").with("message", e.toString()));
            code = EXIT_NO_LIBRARY;
        } catch (Throwable e) {
            e.printStackTrace(System.err);
            out.tryEmit("error", Json.obj().with("error_type", "Internal" + e.getClass().getSimpleName())
                .with("message", String.valueOf(e.getMessage())));
            code = EXIT_INTERNAL;
        }
        if (code != EXIT_OK && code != EXIT_USAGE) {
            copyLogTail(logDir);
        }
        out.flush();
        System.err.flush();
        if (watchdog != null) {
            watchdog.exiting(code);
        }
        System.exit(code);
    }

    /**
     * Points every logging system the client versions use at files under {@code $HOME/logs/rocketmqlogs}:
     * 4.x's own logger ({@code rocketmq.client.logRoot}), 4.x's slf4j/logback and 5.x's shaded logback
     * (configured by {@code rmqit-logback.xml} through the {@code rmqit.log.dir} property) and 5.x's
     * {@code rocketmq.log.root}. Must run before any client class is initialised.
     */
    private static String setUpLogging() {
        String home = System.getenv("HOME");
        if (home == null || home.isEmpty() || !new File(home).isDirectory()) {
            home = System.getProperty("user.home");
        } else {
            System.setProperty("user.home", home);  // broadcast consumers keep offsets under it, too
        }
        String dir = home + File.separator + "logs" + File.separator + "rocketmqlogs";
        new File(dir).mkdirs();
        setDefault(LOG_DIR_PROPERTY, dir);
        setDefault("rocketmq.client.logRoot", dir);
        setDefault("rocketmq.log.root", dir);
        setDefault("rocketmq.client.logUseSlf4j", "false");
        setDefault("rocketmq.client.localOffsetStoreDir", home + File.separator + ".rocketmq_offsets");
        return System.getProperty(LOG_DIR_PROPERTY);
    }

    private static void setDefault(String name, String value) {
        if (System.getProperty(name) == null) {
            System.setProperty(name, value);
        }
    }

    /** The last few KB of the client's log files, to stderr, where the runner shows them for a failed run. */
    private static void copyLogTail(String dir) {
        File[] files = new File(dir).listFiles();
        if (files == null) {
            return;
        }
        for (File file : files) {
            if (!file.isFile() || !file.getName().endsWith(".log") || file.length() == 0) {
                continue;
            }
            try (RandomAccessFile raf = new RandomAccessFile(file, "r")) {
                long length = raf.length();
                int take = (int) Math.min(length, 3000);
                byte[] tail = new byte[take];
                raf.seek(length - take);
                raf.readFully(tail);
                System.err.println("---- " + file.getName() + " (tail) ----");
                System.err.println(new String(tail, StandardCharsets.UTF_8));
            } catch (IOException e) {
                System.err.println("---- " + file.getName() + ": " + e);
            }
        }
    }

    static Options declare(String command) throws Options.UsageError {
        Options o = new Options(command);
        o.value("timeout", "30");
        if ("probe".equals(command)) {
            return o;
        }
        o.requiredValue("namesrv");
        o.value("shutdown-timeout", "5");
        o.value("instance-name", null);
        o.value("access-key", null);
        o.value("secret-key", "");
        o.value("namespace", null);
        if (command.startsWith("send-") || "push-consume".equals(command)) {
            // enableMsgTrace: the client writes trace records (Pub, EndTransaction, SubBefore, SubAfter).
            o.flag("trace");
            o.value("trace-topic", null);
        }
        if (command.startsWith("send-")) {
            if (!Send.COMMANDS.contains(command)) {
                throw new Options.UsageError("unknown command " + command);
            }
            Send.declare(o);
        } else if ("recall".equals(command)) {
            Send.declareRecall(o);
        } else if (Reply.COMMANDS.contains(command)) {
            Reply.declare(o);
        } else if ("push-consume".equals(command) || "pull-consume".equals(command)) {
            Consume.declare(o);
        } else if ("sql-select".equals(command)) {
            Select.declare(o);
        } else if ("route".equals(command) || "clusters".equals(command) || "topic-route".equals(command)) {
            AdminCommands.declare(o);
        } else {
            throw new Options.UsageError("unknown command " + command + " (send-sync, send-async, send-oneway,"
                + " send-orderly, send-batch, send-transaction, push-consume, pull-consume, sql-select, route,"
                + " clusters, topic-route, recall, request, respond, probe, steps)");
        }
        return o;
    }

    static int run(String[] argv) throws Exception {
        if (argv.length > 0 && Steps.COMMAND.equals(argv[0])) {
            return Steps.run(argv);
        }
        return runCommand(argv);
    }

    /** One command: its options parsed, the watchdog given its deadline, the command run. */
    static int runCommand(String[] argv) throws Exception {
        Options opts;
        double timeout;
        try {
            if (argv.length == 0) {
                throw new Options.UsageError("a command is required");
            }
            opts = declare(argv[0]).parse(argv, 1);
            timeout = opts.seconds("timeout");
        } catch (Options.UsageError e) {
            out.emit("error", Json.obj().with("error_type", "UsageError").with("message", e.getMessage()));
            return EXIT_USAGE;
        }
        String command = opts.command();
        // Consumers end gracefully at their own deadline (hence the margin); the watchdog is the backstop.
        double margin = command.endsWith("-consume") || "respond".equals(command) ? 2.0 : 0.0;
        if (watchdog == null) {
            watchdog = new Watchdog(timeout + margin).start();
        } else {
            watchdog.extend(timeout + margin);  // a step of {@code steps}: it gets its own time
        }
        try {
            if ("probe".equals(command)) {
                return probe();
            }
            if (command.startsWith("send-")) {
                return Send.run(opts);
            }
            if ("recall".equals(command)) {
                return Send.recall(opts);
            }
            if (Reply.COMMANDS.contains(command)) {
                return Reply.run(opts);
            }
            if ("push-consume".equals(command)) {
                return Consume.push(opts);
            }
            if ("pull-consume".equals(command)) {
                return Consume.pull(opts);
            }
            if ("sql-select".equals(command)) {
                return Select.run(opts);
            }
            return AdminCommands.run(opts);
        } catch (Options.UsageError e) {
            out.emit("error", Json.obj().with("error_type", "UsageError").with("message", e.getMessage()));
            return EXIT_USAGE;
        }
    }

    static int probe() {
        String jar = null;
        try {
            jar = String.valueOf(MQClientException.class.getProtectionDomain().getCodeSource().getLocation());
        } catch (RuntimeException e) {
            jar = null;
        }
        out.emit("library", Json.obj()
            .with("client_version", MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION))
            .with("java_version", System.getProperty("java.version"))
            .with("serialize_type", System.getProperty("rocketmq.serialize.type"))
            .with("client_jar", jar)
            .with("pid", pid()));
        out.emit("done", Json.obj().with("command", "probe").with("count", 0).with("elapsed_ms", 0)
            .with("shutdown", "ok"));
        return EXIT_OK;
    }

    // ------------------------------------------------------------------------------------------- helpers

    static long pid() {
        String name = ManagementFactory.getRuntimeMXBean().getName();
        int at = name.indexOf('@');
        try {
            return Long.parseLong(at > 0 ? name.substring(0, at) : name);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** ACL session credentials when {@code --access-key} is given, else null. */
    static RPCHook rpcHook(Options o) {
        String accessKey = o.get("access-key");
        if (accessKey == null) {
            return null;
        }
        return new AclClientRPCHook(new SessionCredentials(accessKey, o.get("secret-key")));
    }

    /** The settings every client shares: NameServer, instance name, namespace. */
    @SuppressWarnings("deprecation")
    static void configure(ClientConfig client, Options o) {
        client.setNamesrvAddr(o.get("namesrv"));
        if (o.get("instance-name") != null) {
            client.setInstanceName(o.get("instance-name"));
        }
        if (o.get("namespace") != null) {
            client.setNamespace(o.get("namespace"));
        }
    }

    /**
     * Whether {@code e} is something the client reports (then an {@code error} line and exit code 4): its
     * checked exceptions, or an unchecked one thrown from inside the client (an unreachable NameServer comes
     * out of {@code send} as an IllegalStateException). Anything else is a bug of this program (exit 1).
     */
    static boolean isClientError(Throwable e) {
        if (e instanceof MQClientException || e instanceof MQBrokerException || e instanceof RemotingException
            || e instanceof InterruptedException) {
            return true;
        }
        StackTraceElement[] trace = e.getStackTrace();
        return e instanceof RuntimeException && trace.length > 0
            && trace[0].getClassName().startsWith("org.apache.rocketmq.");
    }

    /** An {@code error} line for a client exception, with {@code where} (index, stage …) added. */
    static void clientError(Throwable e, Json.Obj where) {
        Json.Obj fields = Json.obj().with("error_type", e.getClass().getSimpleName())
            .with("message", String.valueOf(e.getMessage()));
        if (e instanceof MQClientException) {
            fields.put("response_code", ((MQClientException) e).getResponseCode());
            fields.put("error_message", ((MQClientException) e).getErrorMessage());
        } else if (e instanceof MQBrokerException) {
            fields.put("response_code", ((MQBrokerException) e).getResponseCode());
            fields.put("error_message", ((MQBrokerException) e).getErrorMessage());
        }
        Throwable cause = e.getCause();
        if (cause != null && cause != e) {
            fields.put("cause", cause.getClass().getSimpleName() + ": " + cause.getMessage());
        }
        if (where != null) {
            fields.putAll(where);
        }
        fields.put("stage", PROGRESS.stage);
        out.emit("error", fields);
        System.err.println("client error at stage " + PROGRESS.stage + ":");
        e.printStackTrace(System.err);
    }

    /** Shuts a client down on a helper thread, giving up after {@code seconds} (shutdown can block). */
    static String shutdownWithin(final Runnable shutdown, double seconds) {
        final String[] error = new String[1];
        Thread thread = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    shutdown.run();
                } catch (Throwable e) {
                    error[0] = e.getClass().getSimpleName() + ": " + e.getMessage();
                }
            }
        }, "peer-shutdown");
        thread.setDaemon(true);
        thread.start();
        long deadline = System.nanoTime() + (long) (seconds * 1e9);
        try {
            while (thread.isAlive() && System.nanoTime() < deadline) {
                thread.join(SHUTDOWN_POLL_MILLIS);
                if (thread.isAlive()) {
                    wakeEventExecutors();
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) {
            return "timeout";
        }
        return error[0] != null ? "error: " + error[0] : "ok";
    }

    static final long SHUTDOWN_POLL_MILLIS = 20;
    static final String EVENT_EXECUTOR_THREAD = "NettyEventExecutor";

    /**
     * The 5.x client's remoting layer, when shut down, marks its {@code NettyEventExecutor} thread stopped
     * and then joins it, while that thread sits in a 3-second {@code poll} of its (empty) channel-event
     * queue: every 5.x run spent three idle seconds there. An interrupt ends the poll; the thread's loop then
     * sees it was stopped and returns. An interrupt that comes before the stop only costs the thread one
     * logged warning and another poll.
     */
    static void wakeEventExecutors() {
        for (Thread other : Thread.getAllStackTraces().keySet()) {
            if (EVENT_EXECUTOR_THREAD.equals(other.getName()) && other.getState() == Thread.State.TIMED_WAITING) {
                other.interrupt();
            }
        }
    }

    /** Whether {@code --trace} asks for message trace (the client's own enableMsgTrace). */
    static boolean traced(Options o) {
        return o.has("trace") && o.flagged("trace");
    }

    /** With {@code --trace}, waits until {@code watch} says the client's trace records left the process. */
    static void awaitTraces(Options o, TraceWatch watch) throws InterruptedException {
        if (traced(o) && watch != null) {
            PROGRESS.stage = "trace-flush";
            watch.await();
        }
    }

    /** Shuts the client down (within {@code --shutdown-timeout}) and prints the {@code done} line. */
    static int finish(Options o, Runnable shutdown, long startedNanos, int code) throws Options.UsageError {
        PROGRESS.stage = "shutdown";
        double allowance = o.seconds("shutdown-timeout");
        watchdog.extend(allowance + 2.0);
        String how = shutdown == null ? "ok" : shutdownWithin(shutdown, allowance);
        out.emit("done", Json.obj().with("command", o.command()).with("count", PROGRESS.count.get())
            .with("elapsed_ms", (System.nanoTime() - startedNanos) / 1000000L).with("shutdown", how));
        return code;
    }

    static String upper(String text) {
        return text.toUpperCase(Locale.ROOT);
    }

    /**
     * Ends the process at its deadline, or as soon as its parent is gone. A client call that never returns
     * cannot be interrupted; a daemon thread can still report and halt.
     */
    static final class Watchdog implements Runnable {
        private final double seconds;
        private volatile long deadline;
        private volatile Integer exitCode;
        private final long initialParent;
        private final long runnerPid;
        private final Thread thread;

        Watchdog(double seconds) {
            this.seconds = seconds;
            this.deadline = System.nanoTime() + (long) (seconds * 1e9);
            this.initialParent = parentPid();
            long fromEnv = -1;
            String value = System.getenv(PARENT_PID_ENV);
            if (value != null && value.matches("\\d+")) {
                fromEnv = Long.parseLong(value);
            }
            this.runnerPid = fromEnv;
            this.thread = new Thread(this, "peer-watchdog");
            this.thread.setDaemon(true);
        }

        Watchdog start() {
            thread.start();
            return this;
        }

        /** Moves the deadline to at least {@code more} seconds from now (the work is done; shutdown gets its time). */
        void extend(double more) {
            deadline = Math.max(deadline, System.nanoTime() + (long) (more * 1e9));
        }

        /** {@code System.exit} is under way: if its shutdown hooks hang, halt with {@code code} 5 s from now. */
        void exiting(int code) {
            exitCode = code;
            deadline = System.nanoTime() + 5000000000L;
        }

        @Override
        public void run() {
            while (true) {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    return;
                }
                if (exitCode == null && orphaned()) {
                    out.tryEmit("error", Json.obj().with("error_type", "Orphaned")
                        .with("message", "parent process went away"));
                    halt(EXIT_ORPHANED);
                }
                if (System.nanoTime() - deadline >= 0) {
                    if (exitCode != null) {
                        halt(exitCode);
                    }
                    Json.Obj fields = Json.obj().with("after_s", seconds);
                    fields.putAll(PROGRESS.snapshot());
                    out.tryEmit("timeout", fields);
                    halt(EXIT_TIMEOUT);
                }
            }
        }

        private boolean orphaned() {
            long now = parentPid();
            if (initialParent > 0 && now > 0 && now != initialParent) {
                return true;
            }
            return runnerPid > 0 && new File("/proc").isDirectory() && !new File("/proc/" + runnerPid).exists();
        }

        private static void halt(int code) {
            out.flush();
            System.err.flush();
            Runtime.getRuntime().halt(code);
        }

        /** This process's parent pid from {@code /proc/self/stat}; -1 where there is no such file. */
        private static long parentPid() {
            try {
                String stat = new String(Files.readAllBytes(Paths.get("/proc/self/stat")), StandardCharsets.UTF_8);
                String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                return Long.parseLong(fields[1]);
            } catch (IOException | RuntimeException e) {
                return -1;
            }
        }
    }
}
