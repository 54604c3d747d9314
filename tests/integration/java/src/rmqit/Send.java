package rmqit;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The send commands, one DefaultMQProducer (TransactionMQProducer for send-transaction) per run:
 *
 * <ul>
 *   <li>send-sync: {@code send(msg)} per message, in order;</li>
 *   <li>send-async: every {@code send(msg, callback)} in flight at once, then waits for all callbacks;</li>
 *   <li>send-oneway: {@code sendOneway(msg)}, a {@code sent_oneway} line each;</li>
 *   <li>send-orderly: {@code send(msg, selector, key)}, the selector taking queue {@code key % queue count}
 *       ({@code --sharding-key}, or the spec's own sharding_key);</li>
 *   <li>send-batch: {@code send(Collection)} of {@code --batch-size} messages (0: all in one batch);</li>
 *   <li>send-transaction: {@code sendMessageInTransaction}; executeLocalTransaction answers {@code
 *       --local-state} and checkLocalTransaction {@code --check-state}, each check-back printed as a {@code
 *       check} line; {@code --wait-checks N} keeps the producer up until N check-backs came (or the timeout),
 *       {@code --linger S} for S more seconds. {@code --check-state} may list states (COMMIT,ROLLBACK): the
 *       n-th check-back of the run answers the n-th, the last one repeating.</li>
 *   <li>recall: {@code recallMessage(topic, handle)} (5.3.2+ clients, looked up by name) for each
 *       {@code --handle}, a {@code recalled} line each.</li>
 * </ul>
 */
final class Send {
    static final Set<String> COMMANDS = new HashSet<String>(Arrays.asList(
        "send-sync", "send-async", "send-oneway", "send-orderly", "send-batch", "send-transaction"));

    private Send() {
    }

    static void declare(Options o) {
        String command = o.command();
        o.value("group", "JavaPeerProducer");
        o.value("topic", null);
        o.value("spec", null);
        o.value("body", "java-peer message {i}");
        o.value("tags", null);
        o.value("keys", null);
        o.multi("property");
        o.value("delay-level", null);
        o.value("count", "1");
        // Not Apache's 3 s: a fresh JVM's first send (class loading, Netty, the route, the connection) can
        // spend all of that before its first attempt on a loaded 2-core machine ("sendDefaultImpl call
        // timeout" with nothing sent, seen in CI); what the peer shows is the wire, not the latency.
        o.value("send-timeout-ms", "15000");
        o.value("retry-times", "2");
        o.flag("keep-going");
        if ("send-orderly".equals(command)) {
            o.value("sharding-key", "0");
        }
        if ("send-batch".equals(command)) {
            o.value("batch-size", "0");
        }
        if ("send-transaction".equals(command)) {
            o.value("local-state", "COMMIT");
            o.value("check-state", "COMMIT");
            o.value("wait-checks", "0");
            o.value("linger", "0");
        }
    }

    static void declareRecall(Options o) {
        o.value("group", "JavaPeerProducer");
        o.requiredValue("topic");
        o.multi("handle");
        o.value("send-timeout-ms", "15000");  // as the sends', see declare
    }

    /** recall: one started producer takes back each handle in turn. */
    static int recall(Options o) throws Exception {
        final DefaultMQProducer producer = new DefaultMQProducer(o.get("group"), Peer.rpcHook(o));
        Peer.configure(producer, o);
        producer.setSendMsgTimeout(o.integer("send-timeout-ms"));
        long startedNanos = System.nanoTime();
        Runnable shutdown = new Runnable() {
            @Override
            public void run() {
                producer.shutdown();
            }
        };
        java.lang.reflect.Method recallMessage;
        try {
            recallMessage = DefaultMQProducer.class.getMethod("recallMessage", String.class, String.class);
        } catch (NoSuchMethodException e) {
            throw new Options.UsageError("this client has no recallMessage (5.3.2 on)");
        }
        producer.start();
        int code = Peer.EXIT_OK;
        int index = 0;
        for (String handle : o.all("handle")) {
            Peer.PROGRESS.stage = "recall";
            Peer.PROGRESS.index = index;
            try {
                Object msgId = recallMessage.invoke(producer, o.get("topic"), handle);
                Peer.out.emit("recalled", Json.obj().with("index", index).with("msg_id", String.valueOf(msgId)));
                Peer.PROGRESS.count.incrementAndGet();
            } catch (java.lang.reflect.InvocationTargetException wrapped) {
                Throwable e = wrapped.getCause();
                if (!Peer.isClientError(e)) {
                    throw wrapped;
                }
                Peer.clientError(e, Json.obj().with("index", index));
                code = Peer.EXIT_CLIENT_ERROR;
            }
            index++;
        }
        return Peer.finish(o, shutdown, startedNanos, code);
    }

    static LocalTransactionState state(String text, String option) throws Options.UsageError {
        String name = Peer.upper(text.trim());
        if ("COMMIT".equals(name) || "COMMIT_MESSAGE".equals(name)) {
            return LocalTransactionState.COMMIT_MESSAGE;
        }
        if ("ROLLBACK".equals(name) || "ROLLBACK_MESSAGE".equals(name)) {
            return LocalTransactionState.ROLLBACK_MESSAGE;
        }
        if ("UNKNOW".equals(name) || "UNKNOWN".equals(name)) {
            return LocalTransactionState.UNKNOW;
        }
        throw new Options.UsageError("--" + option + " wants COMMIT, ROLLBACK or UNKNOW, got " + text);
    }

    static int run(final Options o) throws Exception {
        final String command = o.command();
        List<Specs.Spec> specs = Specs.parse(o, System.in);
        int retries = o.integer("retry-times");
        int sendTimeout = o.integer("send-timeout-ms");
        final AtomicInteger checks = new AtomicInteger();
        DefaultMQProducer producer;
        if ("send-transaction".equals(command)) {
            final LocalTransactionState local = state(o.get("local-state"), "local-state");
            final List<LocalTransactionState> answers = new ArrayList<LocalTransactionState>();
            for (String one : o.get("check-state").split(",")) {
                answers.add(state(one, "check-state"));
            }
            TransactionMQProducer tx = Peer.traced(o)
                ? new TransactionMQProducer(null, o.get("group"), Peer.rpcHook(o), true, o.get("trace-topic"))
                : new TransactionMQProducer(o.get("group"), Peer.rpcHook(o));
            tx.setTransactionListener(new TransactionListener() {
                @Override
                public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                    return local;
                }

                @Override
                public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                    int n = checks.incrementAndGet();
                    LocalTransactionState checked = answers.get(Math.min(n, answers.size()) - 1);
                    Json.Obj fields = Messages.describe(msg, null);
                    fields.put("check", n);
                    fields.put("state", checked.name());
                    Peer.out.emit("check", fields);
                    return checked;
                }
            });
            producer = tx;
        } else {
            producer = Peer.traced(o)
                ? new DefaultMQProducer(o.get("group"), Peer.rpcHook(o), true, o.get("trace-topic"))
                : new DefaultMQProducer(o.get("group"), Peer.rpcHook(o));
        }
        Peer.configure(producer, o);
        producer.setSendMsgTimeout(sendTimeout);
        producer.setRetryTimesWhenSendFailed(retries);
        producer.setRetryTimesWhenSendAsyncFailed(retries);
        final DefaultMQProducer started = producer;
        Runnable shutdown = new Runnable() {
            @Override
            public void run() {
                started.shutdown();
            }
        };
        long startedNanos = System.nanoTime();
        Peer.PROGRESS.stage = "start";
        try {
            producer.start();
        } catch (Exception e) {
            if (!Peer.isClientError(e)) {
                throw e;
            }
            Peer.clientError(e, null);
            return Peer.finish(o, shutdown, startedNanos, Peer.EXIT_CLIENT_ERROR);
        }
        TraceWatch traces = TraceWatch.attach(producer.getTraceDispatcher());
        Peer.out.emit("ready", Json.obj().with("role", "producer").with("group", o.get("group"))
            .with("namesrv", o.get("namesrv")).with("pid", Peer.pid()));
        int code;
        if ("send-batch".equals(command)) {
            code = sendBatches(o, producer, specs);
        } else if ("send-async".equals(command)) {
            code = sendAsync(producer, specs);
        } else {
            code = sendEach(o, producer, specs);
        }
        if ("send-transaction".equals(command)) {
            int wanted = o.integer("wait-checks");
            if (wanted > 0) {
                Peer.PROGRESS.stage = "wait-checks";
                while (checks.get() < wanted) {
                    Thread.sleep(50);  // the watchdog ends the run if the broker never checks back
                }
            }
            double linger = o.seconds("linger");
            if (linger > 0) {
                Peer.PROGRESS.stage = "linger";
                Thread.sleep((long) (linger * 1000));
            }
        }
        Peer.awaitTraces(o, traces);
        return Peer.finish(o, shutdown, startedNanos, code);
    }

    /** send-sync, send-oneway, send-orderly, send-transaction: one call per message, in order. */
    private static int sendEach(Options o, DefaultMQProducer producer, List<Specs.Spec> specs) throws Exception {
        String command = o.command();
        int code = Peer.EXIT_OK;
        for (int index = 0; index < specs.size(); index++) {
            Specs.Spec spec = specs.get(index);
            Peer.PROGRESS.stage = "send";
            Peer.PROGRESS.index = index;
            Message msg = spec.toMessage();
            try {
                if ("send-oneway".equals(command)) {
                    producer.sendOneway(msg);
                    Peer.out.emit("sent_oneway", Json.obj().with("index", index).with("topic", spec.topic));
                } else if ("send-orderly".equals(command)) {
                    long key = spec.shardingKey != null ? spec.shardingKey.longValue() : o.longValue("sharding-key");
                    final int[] chosen = {-1, -1};
                    MessageQueueSelector selector = new MessageQueueSelector() {
                        @Override
                        public MessageQueue select(List<MessageQueue> mqs, Message m, Object arg) {
                            long k = ((Long) arg).longValue();
                            int size = mqs.size();
                            int queue = (int) (((k % size) + size) % size);
                            chosen[0] = size;
                            chosen[1] = queue;
                            return mqs.get(queue);
                        }
                    };
                    SendResult result = producer.send(msg, selector, Long.valueOf(key));
                    Json.Obj fields = Json.obj().with("index", index).with("sharding_key", key);
                    fields.putAll(Messages.sendResult(result));
                    fields.put("queue_count", chosen[0]);
                    fields.put("selected_queue", chosen[1]);
                    Peer.out.emit("send_result", fields);
                } else if ("send-transaction".equals(command)) {
                    SendResult result = ((TransactionMQProducer) producer).sendMessageInTransaction(msg, null);
                    Json.Obj fields = Json.obj().with("index", index);
                    fields.putAll(Messages.sendResult(result));
                    Peer.out.emit("send_result", fields);
                } else {
                    SendResult result = producer.send(msg);
                    Json.Obj fields = Json.obj().with("index", index);
                    fields.putAll(Messages.sendResult(result));
                    Peer.out.emit("send_result", fields);
                }
            } catch (Exception e) {
                if (!Peer.isClientError(e)) {
                    throw e;
                }
                Peer.clientError(e, Json.obj().with("index", index));
                code = Peer.EXIT_CLIENT_ERROR;
                if (!o.flagged("keep-going")) {
                    break;
                }
                continue;
            }
            Peer.PROGRESS.count.incrementAndGet();
        }
        return code;
    }

    /** send-async: every message in flight at once; each callback prints its line. */
    private static int sendAsync(DefaultMQProducer producer, List<Specs.Spec> specs) throws Exception {
        final CountDownLatch pending = new CountDownLatch(specs.size());
        final AtomicInteger failures = new AtomicInteger();
        Peer.PROGRESS.stage = "send";
        for (int i = 0; i < specs.size(); i++) {
            final int index = i;
            Peer.PROGRESS.index = index;
            Message msg = specs.get(i).toMessage();
            SendCallback callback = new SendCallback() {
                @Override
                public void onSuccess(SendResult result) {
                    Json.Obj fields = Json.obj().with("index", index);
                    fields.putAll(Messages.sendResult(result));
                    Peer.out.emit("send_result", fields);
                    Peer.PROGRESS.count.incrementAndGet();
                    pending.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    failures.incrementAndGet();
                    Peer.clientError(e, Json.obj().with("index", index).with("in", "callback"));
                    pending.countDown();
                }
            };
            try {
                producer.send(msg, callback);
            } catch (Exception e) {
                if (!Peer.isClientError(e)) {
                    throw e;
                }
                failures.incrementAndGet();
                Peer.clientError(e, Json.obj().with("index", index));
                pending.countDown();
            }
        }
        Peer.PROGRESS.stage = "wait-callbacks";
        Peer.PROGRESS.index = null;
        pending.await();  // the watchdog ends the run if a callback never comes
        return failures.get() == 0 ? Peer.EXIT_OK : Peer.EXIT_CLIENT_ERROR;
    }

    /** send-batch: the messages in batches of {@code --batch-size} through {@code send(Collection)}. */
    private static int sendBatches(Options o, DefaultMQProducer producer, List<Specs.Spec> specs) throws Exception {
        int size = o.integer("batch-size");
        if (size <= 0) {
            size = specs.size();
        }
        int code = Peer.EXIT_OK;
        int index = 0;
        for (int first = 0; first < specs.size(); first += size, index++) {
            List<Message> chunk = new ArrayList<Message>();
            for (Specs.Spec spec : specs.subList(first, Math.min(specs.size(), first + size))) {
                chunk.add(spec.toMessage());
            }
            Peer.PROGRESS.stage = "send";
            Peer.PROGRESS.index = index;
            try {
                SendResult result = producer.send(chunk);
                Json.Obj fields = Json.obj().with("index", index).with("batch_size", chunk.size());
                fields.putAll(Messages.sendResult(result));
                Peer.out.emit("send_result", fields);
                Peer.PROGRESS.count.addAndGet(chunk.size());
            } catch (Exception e) {
                if (!Peer.isClientError(e)) {
                    throw e;
                }
                Peer.clientError(e, Json.obj().with("index", index).with("batch_size", chunk.size()));
                code = Peer.EXIT_CLIENT_ERROR;
                if (!o.flagged("keep-going")) {
                    break;
                }
            }
        }
        return code;
    }
}
