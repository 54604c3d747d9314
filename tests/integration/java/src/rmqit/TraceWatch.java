package rmqit;

import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.hook.SendMessageContext;
import org.apache.rocketmq.client.hook.SendMessageHook;
import org.apache.rocketmq.client.trace.AsyncTraceDispatcher;
import org.apache.rocketmq.client.trace.TraceDispatcher;

/**
 * Knows when a client's trace records have reached the broker, so that a {@code --trace} run ends then and not
 * after a fixed pause.
 *
 * <p>The trace dispatcher sends its records from a background producer, asynchronously, and the client's own
 * shutdown does not wait for those sends (4.9.8's does not even flush its queue): a process that exits right
 * after its work loses its last records. This hook on that background producer counts each trace send begun
 * and each one answered (a result or an error). The run may end once at least one was answered, none is still
 * out, and none began or ended for {@link #QUIET_MILLIS}, longer than the 500 ms over which 5.x gathers
 * records into one message.
 *
 * <p>A client may write no records at all (5.x's push consumer, for messages without a region). The wait
 * takes that to be so when no trace send began for {@link #SILENT_MILLIS} of the wait and
 * {@link #FIRST_SEND_MILLIS} after the client started: 4.9.8 hands a record over within milliseconds, but
 * 5.3.3's client begins its first trace send about 5 s after start (measured on Apache's broker and the
 * project's alike). Whatever happens, the wait ends at {@link #LIMIT_MILLIS}.
 */
final class TraceWatch implements SendMessageHook {
    static final long QUIET_MILLIS = 1500;
    static final long SILENT_MILLIS = 2000;
    static final long FIRST_SEND_MILLIS = 7000;
    static final long LIMIT_MILLIS = 15000;

    private final AtomicInteger begun = new AtomicInteger();
    private final AtomicInteger answered = new AtomicInteger();
    private final long createdNanos = System.nanoTime();
    private volatile long lastChangeNanos = createdNanos;
    private volatile long firstBegunNanos;

    private TraceWatch() {
    }

    /**
     * A watch on {@code dispatcher}'s producer, or null when the client traces nothing (no dispatcher). Called
     * once the client started: 5.x makes its dispatcher in {@code start()}, 4.9.8 in the constructor. A trace
     * send begun before the watch is not counted as begun; the quiet period after the last answer covers it.
     */
    static TraceWatch attach(TraceDispatcher dispatcher) {
        if (!(dispatcher instanceof AsyncTraceDispatcher)) {
            return null;
        }
        TraceWatch watch = new TraceWatch();
        AsyncTraceDispatcher traces = (AsyncTraceDispatcher) dispatcher;
        traces.getTraceProducer().getDefaultMQProducerImpl().registerSendMessageHook(watch);
        return watch;
    }

    @Override
    public String hookName() {
        return "rmqit-trace-watch";
    }

    @Override
    public void sendMessageBefore(SendMessageContext context) {
        if (begun.incrementAndGet() == 1) {
            firstBegunNanos = System.nanoTime();
        }
        lastChangeNanos = System.nanoTime();
    }

    @Override
    public void sendMessageAfter(SendMessageContext context) {
        // An asynchronous send also passes here once when it is handed to the network, with neither a result
        // nor an error: only the second pass, with the broker's answer, counts.
        if (context.getSendResult() != null || context.getException() != null) {
            answered.incrementAndGet();
            lastChangeNanos = System.nanoTime();
        }
    }

    /** Waits until the records sent so far were answered and nothing moved for a while (see above). */
    void await() throws InterruptedException {
        long waiting = System.nanoTime();
        long deadline = waiting + LIMIT_MILLIS * 1000000L;
        while (System.nanoTime() < deadline) {
            long now = System.nanoTime();
            boolean settled = answered.get() > 0 && answered.get() >= begun.get()
                && now - lastChangeNanos >= QUIET_MILLIS * 1000000L;
            boolean silent = begun.get() == 0 && now - waiting >= SILENT_MILLIS * 1000000L
                && now - createdNanos >= FIRST_SEND_MILLIS * 1000000L;
            if (settled || silent) {
                break;
            }
            Thread.sleep(50);
        }
        Peer.out.emit("trace_flush", Json.obj().with("begun", begun.get()).with("answered", answered.get())
            .with("waited_ms", (System.nanoTime() - waiting) / 1000000L)
            .with("first_begun_ms", begun.get() == 0 ? -1 : (firstBegunNanos - createdNanos) / 1000000L));
    }
}
