package rmqit;

import java.lang.reflect.Method;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * push-consume (DefaultMQPushConsumer) and pull-consume (DefaultLitePullConsumer, subscribed).
 *
 * <p>push-consume prints every delivery as a {@code message} line with its {@code consume_status}; after
 * {@code --count} acknowledged messages it keeps printing for {@code --linger} seconds (so unexpected extra
 * deliveries show), then shuts down. If the count is not reached by {@code --timeout}: a {@code timeout} line,
 * {@code done}, exit 3 (as peer.py). {@code --fail-first N} answers RECONSUME_LATER (orderly:
 * SUSPEND_CURRENT_QUEUE_A_MOMENT) to the first N deliveries; they do not count. {@code --server-rebalance}
 * (5.x clients) asks the broker for the queue assignment instead of balancing in the client, so the group
 * POPs where the broker's consume mode for it says POP.
 *
 * <p>Both subscribe with {@code --expression} (tags), or with {@code --sql} a SQL92 expression
 * ({@code MessageSelector.bySql}); the client then asks the brokers first (CHECK_CLIENT_CONFIG) and a refusal
 * is an {@code error} line from the start stage.
 *
 * <p>pull-consume polls until {@code --count} messages came (fewer by {@code --timeout}: an {@code error}
 * line Incomplete and exit 6), or with count 0 until polls have come back empty for {@code --idle-ms} once
 * queues were assigned. Each assigned queue is printed as a {@code queue} line; at the end the polled offsets
 * are committed ({@code commitSync}), so the group's next run goes on from there.
 */
final class Consume {
    private Consume() {
    }

    static void declare(Options o) {
        boolean push = "push-consume".equals(o.command());
        o.value("group", push ? "JavaPeerPushConsumer" : "JavaPeerPullConsumer");
        o.requiredValue("topic");
        o.value("expression", "*");
        o.value("sql", null);
        o.multi("property");  // accepted for peer.py's command lines: every property is reported anyway
        o.value("from", "first");
        if (push) {
            o.requiredValue("count");
            o.flag("orderly");
            o.flag("broadcast");
            o.flag("server-rebalance");
            o.value("thread-count", "0");
            o.value("batch-max-size", "0");
            o.value("fail-first", "0");
            o.value("linger", "0");
        } else {
            o.value("count", "0");
            o.value("max-num", "32");
            o.value("idle-ms", "3000");
            o.value("poll-ms", "500");
        }
    }

    static ConsumeFromWhere from(Options o) throws Options.UsageError {
        String where = Peer.upper(o.get("from"));
        if ("FIRST".equals(where)) {
            return ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET;
        }
        if ("LAST".equals(where)) {
            return ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET;
        }
        throw new Options.UsageError("--from wants first or last, got " + o.get("from"));
    }

    /** {@code setMessageModel(BROADCASTING)}: the enum moved package between 4.x and 5.x, so by reflection. */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void broadcast(Object consumer) throws Exception {
        for (Method method : consumer.getClass().getMethods()) {
            if ("setMessageModel".equals(method.getName()) && method.getParameterTypes().length == 1) {
                Class type = method.getParameterTypes()[0];
                method.invoke(consumer, Enum.valueOf(type, "BROADCASTING"));
                return;
            }
        }
        throw new IllegalStateException("no setMessageModel on " + consumer.getClass());
    }

    /** {@code setClientRebalance(false)}: 5.x only, so by reflection (a 4.x client fails the run). */
    static void serverRebalance(Object consumer) throws Exception {
        consumer.getClass().getMethod("setClientRebalance", boolean.class).invoke(consumer, false);
    }

    private static final class PushState {
        int failuresLeft;
        boolean closed;
    }

    static int push(final Options o) throws Exception {
        final int expected = o.integer("count");
        final DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(o.get("group"), Peer.rpcHook(o),
            new AllocateMessageQueueAveragely(), Peer.traced(o), o.get("trace-topic"));
        Peer.configure(consumer, o);
        consumer.setConsumeFromWhere(from(o));
        // Shutdown waits for listener calls in flight, so the offset of the last message counted is updated
        // before the offsets are persisted (else the group's next run may get that message again).
        consumer.setAwaitTerminationMillisWhenShutdown((long) (o.seconds("shutdown-timeout") * 1000 / 2));
        if (o.flagged("broadcast")) {
            broadcast(consumer);
        }
        if (o.flagged("server-rebalance")) {
            serverRebalance(consumer);
        }
        int threads = o.integer("thread-count");
        if (threads > 0) {
            consumer.setConsumeThreadMax(threads);
            consumer.setConsumeThreadMin(threads);
        }
        int batch = o.integer("batch-max-size");
        if (batch > 0) {
            consumer.setConsumeMessageBatchMaxSize(batch);
        }
        final Object lock = new Object();
        final CountDownLatch reached = new CountDownLatch(1);
        final PushState state = new PushState();
        state.failuresLeft = o.integer("fail-first");
        if (o.flagged("orderly")) {
            consumer.registerMessageListener(new MessageListenerOrderly() {
                @Override
                public ConsumeOrderlyStatus consumeMessage(List<MessageExt> msgs, ConsumeOrderlyContext context) {
                    boolean ok = deliver(msgs, context.getMessageQueue(), "SUSPEND_CURRENT_QUEUE_A_MOMENT");
                    return ok ? ConsumeOrderlyStatus.SUCCESS : ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
                }

                private boolean deliver(List<MessageExt> msgs, MessageQueue queue, String failed) {
                    return Consume.deliver(lock, state, reached, expected, msgs, queue, failed);
                }
            });
        } else {
            consumer.registerMessageListener(new MessageListenerConcurrently() {
                @Override
                public ConsumeConcurrentlyStatus consumeMessage(
                    List<MessageExt> msgs, ConsumeConcurrentlyContext context) {
                    boolean ok = Consume.deliver(lock, state, reached, expected, msgs, context.getMessageQueue(),
                        "RECONSUME_LATER");
                    return ok ? ConsumeConcurrentlyStatus.CONSUME_SUCCESS : ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
            });
        }
        Runnable shutdown = new Runnable() {
            @Override
            public void run() {
                consumer.shutdown();
            }
        };
        long started = System.nanoTime();
        Peer.PROGRESS.stage = "start";
        try {
            if (o.get("sql") != null) {
                consumer.subscribe(o.get("topic"), MessageSelector.bySql(o.get("sql")));
            } else {
                consumer.subscribe(o.get("topic"), o.get("expression"));
            }
            consumer.start();
        } catch (Exception e) {
            if (!Peer.isClientError(e)) {
                throw e;
            }
            Peer.clientError(e, null);
            return Peer.finish(o, shutdown, started, Peer.EXIT_CLIENT_ERROR);
        }
        TraceWatch traces = TraceWatch.attach(consumer.getTraceDispatcher());
        heardByBrokers(consumer, o.get("topic"));
        Peer.out.emit("ready", Json.obj().with("role", "push-consumer").with("group", o.get("group"))
            .with("topic", o.get("topic")).with("pid", Peer.pid()));
        Peer.PROGRESS.stage = "consume";
        double timeout = o.seconds("timeout");
        long waitMs = (long) (timeout * 1000) - (System.nanoTime() - started) / 1000000L;
        boolean complete = expected <= 0 || reached.await(Math.max(0, waitMs), TimeUnit.MILLISECONDS);
        double linger = o.seconds("linger");
        if (complete && linger > 0) {
            Peer.PROGRESS.stage = "linger";
            Thread.sleep((long) (linger * 1000));  // extra (unexpected) deliveries show up before the done line
        }
        synchronized (lock) {
            state.closed = true;
        }
        if (!complete) {
            Peer.out.emit("timeout", Json.obj().with("after_s", timeout).with("stage", "consume")
                .with("count", Peer.PROGRESS.count.get()).with("expected", expected));
        }
        Peer.awaitTraces(o, traces);
        return Peer.finish(o, shutdown, started, complete ? Peer.EXIT_OK : Peer.EXIT_TIMEOUT);
    }

    /**
     * Once the brokers of {@code topic} have the consumer's heartbeat, rebalances at once (see
     * {@link Heartbeats}); a topic without a route is left to the consumer to report.
     */
    private static void heardByBrokers(DefaultMQPushConsumer consumer, String topic) throws InterruptedException {
        MQClientInstance factory = consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getmQClientFactory();
        Collection<MessageQueue> queues;
        try {
            queues = consumer.fetchSubscribeMessageQueues(topic);
        } catch (MQClientException e) {
            return;
        }
        Heartbeats.untilBrokersAnswered(factory, queues);
        factory.rebalanceImmediately();
    }

    /** Prints one delivery; returns whether it is acknowledged (false for the first --fail-first ones). */
    static boolean deliver(Object lock, PushState state, CountDownLatch reached, int expected,
                           List<MessageExt> msgs, MessageQueue queue, String failedStatus) {
        try {
            synchronized (lock) {
                if (state.closed) {
                    return false;
                }
                boolean fail = state.failuresLeft > 0;
                if (fail) {
                    state.failuresLeft -= 1;
                }
                for (MessageExt msg : msgs) {
                    Json.Obj fields = Messages.describe(msg, queue);
                    fields.put("consume_status", fail ? failedStatus : "CONSUME_SUCCESS");
                    Peer.out.emit("message", fields);
                    if (!fail && Peer.PROGRESS.count.incrementAndGet() >= expected) {
                        reached.countDown();
                    }
                }
                return !fail;
            }
        } catch (RuntimeException e) {
            e.printStackTrace(System.err);
            Peer.out.tryEmit("error", Json.obj().with("error_type", e.getClass().getSimpleName())
                .with("message", "in the message listener: " + e.getMessage()));
            return false;
        }
    }

    private static final Comparator<MessageQueue> BY_QUEUE = new Comparator<MessageQueue>() {
        @Override
        public int compare(MessageQueue a, MessageQueue b) {
            return a.compareTo(b);
        }
    };

    static int pull(final Options o) throws Exception {
        final int expected = o.integer("count");
        final DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(o.get("group"), Peer.rpcHook(o));
        Peer.configure(consumer, o);
        consumer.setConsumeFromWhere(from(o));
        consumer.setPullBatchSize(o.integer("max-num"));
        consumer.setAutoCommit(true);
        Runnable shutdown = new Runnable() {
            @Override
            public void run() {
                consumer.shutdown();
            }
        };
        long started = System.nanoTime();
        Peer.PROGRESS.stage = "start";
        try {
            if (o.get("sql") != null) {
                consumer.subscribe(o.get("topic"), MessageSelector.bySql(o.get("sql")));
            } else {
                consumer.subscribe(o.get("topic"), o.get("expression"));
            }
            consumer.start();
        } catch (Exception e) {
            if (!Peer.isClientError(e)) {
                throw e;
            }
            Peer.clientError(e, null);
            return Peer.finish(o, shutdown, started, Peer.EXIT_CLIENT_ERROR);
        }
        Peer.out.emit("ready", Json.obj().with("role", "pull-consumer").with("group", o.get("group"))
            .with("topic", o.get("topic")).with("pid", Peer.pid()));
        Peer.PROGRESS.stage = "poll";
        long deadline = started + (long) (o.seconds("timeout") * 1e9);
        long idleNanos = o.longValue("idle-ms") * 1000000L;
        long pollMs = Math.max(10, o.longValue("poll-ms"));
        Set<MessageQueue> assigned = new TreeSet<MessageQueue>(BY_QUEUE);
        long lastActivity = System.nanoTime();
        while (System.nanoTime() - deadline < 0) {
            if (expected > 0 && Peer.PROGRESS.count.get() >= expected) {
                break;
            }
            List<MessageExt> msgs = consumer.poll(pollMs);
            Set<MessageQueue> now;
            try {
                now = consumer.assignment();
            } catch (MQClientException e) {
                now = null;
            }
            if (now != null) {
                for (MessageQueue queue : now) {
                    if (assigned.add(queue)) {
                        Peer.out.emit("queue", Json.obj().with("topic", queue.getTopic())
                            .with("broker_name", queue.getBrokerName()).with("queue_id", queue.getQueueId()));
                        lastActivity = System.nanoTime();
                    }
                }
            }
            if (msgs != null && !msgs.isEmpty()) {
                for (MessageExt msg : msgs) {
                    Peer.out.emit("message", Messages.describe(msg, null));
                    Peer.PROGRESS.count.incrementAndGet();
                }
                lastActivity = System.nanoTime();
            } else if (expected <= 0 && !assigned.isEmpty() && System.nanoTime() - lastActivity >= idleNanos) {
                break;
            }
        }
        int code = Peer.EXIT_OK;
        if (!assigned.isEmpty()) {
            // Auto-commit only happens on a poll 5 s after the last one: commit what was polled, so the next run
            // of the group resumes after it (shutdown then persists the offsets to the broker).
            Peer.PROGRESS.stage = "commit";
            try {
                consumer.commitSync();
            } catch (Exception e) {
                if (!Peer.isClientError(e)) {
                    throw e;
                }
                Peer.clientError(e, null);
                code = Peer.EXIT_CLIENT_ERROR;
            }
        }
        if (assigned.isEmpty() && Peer.PROGRESS.count.get() == 0) {
            Peer.out.emit("error", Json.obj().with("error_type", "NoQueues")
                .with("message", "no message queue of " + o.get("topic") + " was assigned"));
            code = expected > 0 ? Peer.EXIT_INCOMPLETE : Peer.EXIT_CLIENT_ERROR;
        } else if (expected > 0 && Peer.PROGRESS.count.get() < expected) {
            Peer.out.emit("error", Json.obj().with("error_type", "Incomplete").with("message",
                Peer.PROGRESS.count.get() + " of " + expected + " messages found"));
            code = Peer.EXIT_INCOMPLETE;
        }
        return Peer.finish(o, shutdown, started, code);
    }
}
