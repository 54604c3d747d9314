package rmqit;

import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.consumer.ConsumeResult;
import org.apache.rocketmq.client.apis.consumer.FilterExpression;
import org.apache.rocketmq.client.apis.consumer.PushConsumer;
import org.apache.rocketmq.client.apis.consumer.SimpleConsumer;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.message.MessageBuilder;
import org.apache.rocketmq.client.apis.message.MessageView;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;
import org.apache.rocketmq.client.apis.producer.Transaction;
import org.apache.rocketmq.client.apis.producer.TransactionResolution;

/**
 * Apache's Java gRPC client (rocketmq-client-java) as a test peer: the whole scenario of one set-up in one
 * JVM, because a JVM start is most of what a short client run costs.
 *
 * <p>Usage: {@code GrpcPeer --endpoints HOST:PORT --topic KIND=TOPIC ... --group-prefix G --count N
 * --delay-ms D --timeout S}, KIND one of normal, fifo, delay, transaction. It sends N messages of each kind
 * through the proxy (FIFO ones in two message groups, delay ones with a delivery timestamp D ms ahead, each
 * transactional one committed, plus one rolled back before them), and reads every topic at once: the
 * PushConsumer the normal one, a SimpleConsumer (receive + ack) each other; all clients are started before
 * the first send. Output: JSON lines on stdout, the
 * same events as the Python SDK's peer ({@code sent}, {@code received}, {@code error}) with a {@code kind}
 * field, and a final {@code done}.
 */
public final class GrpcPeer {
    private static final String[] KINDS = {"normal", "fifo", "delay", "transaction"};
    /** Body of the transactional message that is rolled back: a consumer must never see it. */
    static final String ROLLBACK_BODY = "grpc transaction rollback";

    private final Out out;
    private final Map<String, String> topics = new LinkedHashMap<>();
    private String endpoints;
    private String groupPrefix = "GrpcJava";
    private int count = 4;
    private long delayMs = 3000;
    private long timeoutMs = 45000;

    private GrpcPeer(Out out) {
        this.out = out;
    }

    public static void main(String[] args) {
        PrintStream stdout = System.out;
        // The client and its libraries may print: only our JSON lines go to the real stdout.
        System.setOut(System.err);
        Out out = new Out(stdout);
        int code;
        try {
            GrpcPeer peer = new GrpcPeer(out);
            peer.parse(args);
            code = peer.run();
        } catch (Throwable e) {
            out.emit("error", Json.obj().with("error", e.getClass().getName() + ": " + e.getMessage()));
            code = 2;
        }
        out.flush();
        // The client's gRPC and scheduler threads would keep the JVM up for a while: this run is over.
        Runtime.getRuntime().halt(code);
    }

    private void parse(String[] args) {
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("no value after " + args[i]);
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--endpoints":
                    endpoints = value;
                    break;
                case "--topic":
                    int eq = value.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("--topic wants KIND=TOPIC, not " + value);
                    }
                    topics.put(value.substring(0, eq), value.substring(eq + 1));
                    break;
                case "--group-prefix":
                    groupPrefix = value;
                    break;
                case "--count":
                    count = Integer.parseInt(value);
                    break;
                case "--delay-ms":
                    delayMs = Long.parseLong(value);
                    break;
                case "--timeout":
                    timeoutMs = (long) (Double.parseDouble(value) * 1000);
                    break;
                default:
                    throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (endpoints == null) {
            throw new IllegalArgumentException("--endpoints is required");
        }
        for (String kind : KINDS) {
            if (!topics.containsKey(kind)) {
                throw new IllegalArgumentException("no --topic for " + kind);
            }
        }
    }

    private ClientConfiguration configuration() {
        // The proxy of the suite speaks plain gRPC; the client would try TLS first by default.
        return ClientConfiguration.newBuilder()
            .setEndpoints(endpoints)
            .enableSsl(false)
            .setRequestTimeout(Duration.ofSeconds(10))
            .build();
    }

    private int run() throws Exception {
        ClientServiceProvider provider = ClientServiceProvider.loadService();
        long deadline = System.currentTimeMillis() + timeoutMs;
        // Every client starts at once: each start is a few round trips to the proxy and much class loading,
        // seconds on a busy machine when done one after another.
        ExecutorService starting = Executors.newFixedThreadPool(KINDS.length + 1);
        Future<Producer> producerStart = starting.submit(() -> producer(provider));
        Map<String, Future<SimpleConsumer>> simpleStarts = new LinkedHashMap<>();
        AtomicInteger pushed = new AtomicInteger();
        Future<PushConsumer> pushStart = null;
        for (String kind : KINDS) {
            if ("normal".equals(kind)) {
                pushStart = starting.submit(() -> pushConsumer(provider, kind, pushed));
            } else {
                simpleStarts.put(kind, starting.submit(() -> simpleConsumer(provider, kind)));
            }
        }
        starting.shutdown();
        Producer producer = producerStart.get();
        Map<String, SimpleConsumer> simples = new LinkedHashMap<>();
        for (Map.Entry<String, Future<SimpleConsumer>> entry : simpleStarts.entrySet()) {
            simples.put(entry.getKey(), entry.getValue().get());
        }
        pushStart.get();
        out.emit("started", Json.obj().with("at_ms", System.currentTimeMillis()));

        // Delay messages first: their time runs while the others are sent.
        sendAll(provider, producer, "delay");
        sendRollback(provider, producer);
        for (String kind : new String[] {"normal", "fifo", "transaction"}) {
            sendAll(provider, producer, kind);
        }
        producer.close();

        CountDownLatch finished = new CountDownLatch(simples.size());
        for (Map.Entry<String, SimpleConsumer> entry : simples.entrySet()) {
            Thread reader = new Thread(() -> simple(entry.getValue(), entry.getKey(), deadline, finished),
                "reader-" + entry.getKey());
            reader.setDaemon(true);
            reader.start();
        }
        while (pushed.get() < count && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        out.emit("reader_done", Json.obj().with("kind", "normal").with("how", "push").with("count", pushed.get()));
        boolean allEnded = finished.await(Math.max(1, deadline - System.currentTimeMillis()) + 15000,
            TimeUnit.MILLISECONDS);
        // The push consumer is not closed: its shutdown waits out its long-polling receive (20 s and more),
        // and the JVM ends here anyway. Its acknowledgements go out as each message is consumed; a second
        // lets the last of them reach the proxy.
        Thread.sleep(1000);
        out.emit("done", Json.obj().with("all_readers_ended", allEnded));
        return 0;
    }

    private Producer producer(ClientServiceProvider provider) throws Exception {
        return provider.newProducerBuilder()
            .setClientConfiguration(configuration())
            .setTopics(topics.values().toArray(new String[0]))
            // An orphaned half (none is expected) is settled as its body says.
            .setTransactionChecker(view -> ROLLBACK_BODY.equals(text(view.getBody()))
                ? TransactionResolution.ROLLBACK : TransactionResolution.COMMIT)
            .build();
    }

    private SimpleConsumer simpleConsumer(ClientServiceProvider provider, String kind) throws Exception {
        return provider.newSimpleConsumerBuilder()
            .setClientConfiguration(configuration())
            .setConsumerGroup(groupPrefix + kind)
            .setSubscriptionExpressions(subscription(kind))
            .setAwaitDuration(Duration.ofSeconds(5))
            .build();
    }

    private PushConsumer pushConsumer(ClientServiceProvider provider, String kind, AtomicInteger seen)
        throws Exception {
        return provider.newPushConsumerBuilder()
            .setClientConfiguration(configuration())
            .setConsumerGroup(groupPrefix + kind)
            .setSubscriptionExpressions(subscription(kind))
            .setConsumptionThreadCount(2)
            .setMessageListener(view -> {
                received(kind, "push", view);
                seen.incrementAndGet();
                return ConsumeResult.SUCCESS;
            })
            .build();
    }

    private MessageBuilder base(ClientServiceProvider provider, String kind, String body, String key) {
        return provider.newMessageBuilder()
            .setTopic(topics.get(kind))
            .setBody(body.getBytes(StandardCharsets.UTF_8))
            .setTag("grpc")
            .setKeys(key);
    }

    private void sendAll(ClientServiceProvider provider, Producer producer, String kind) {
        for (int i = 0; i < count; i++) {
            MessageBuilder builder = base(provider, kind, "grpc " + kind + " " + i, kind + "-" + i);
            Long due = null;
            if ("fifo".equals(kind)) {
                builder.setMessageGroup("group-" + (i % 2));
            } else if ("delay".equals(kind)) {
                due = System.currentTimeMillis() + delayMs;
                builder.setDeliveryTimestamp(due);
            }
            Message message = builder.build();
            try {
                SendReceipt receipt;
                if ("transaction".equals(kind)) {
                    Transaction transaction = producer.beginTransaction();
                    receipt = producer.send(message, transaction);
                    transaction.commit();
                } else {
                    receipt = producer.send(message);
                }
                out.emit("sent", Json.obj().with("kind", kind).with("index", i)
                    .with("message_id", receipt.getMessageId().toString())
                    .with("at_ms", System.currentTimeMillis()).with("due_ms", due));
            } catch (Exception e) {
                out.emit("error", Json.obj().with("kind", kind).with("index", i).with("error", describe(e)));
            }
        }
    }

    private void sendRollback(ClientServiceProvider provider, Producer producer) {
        Message message = base(provider, "transaction", ROLLBACK_BODY, "transaction-rollback").build();
        try {
            Transaction transaction = producer.beginTransaction();
            SendReceipt receipt = producer.send(message, transaction);
            transaction.rollback();
            out.emit("rolled_back", Json.obj().with("kind", "transaction")
                .with("message_id", receipt.getMessageId().toString()));
        } catch (Exception e) {
            out.emit("error", Json.obj().with("kind", "transaction").with("index", -1).with("error", describe(e)));
        }
    }

    private Map<String, FilterExpression> subscription(String kind) {
        return Collections.singletonMap(topics.get(kind), FilterExpression.SUB_ALL);
    }

    private void simple(SimpleConsumer consumer, String kind, long deadline, CountDownLatch finished) {
        int seen = 0;
        try {
            while (seen < count && System.currentTimeMillis() < deadline) {
                List<MessageView> views;
                try {
                    views = consumer.receive(16, Duration.ofSeconds(30));
                } catch (Exception e) {
                    out.emit("poll_error", Json.obj().with("kind", kind).with("error", describe(e)));
                    Thread.sleep(500);
                    continue;
                }
                for (MessageView view : views) {
                    consumer.ack(view);
                    received(kind, "simple", view);
                    seen++;
                }
            }
            consumer.close();
        } catch (Exception e) {
            out.emit("error", Json.obj().with("kind", kind).with("error", describe(e)));
        } finally {
            out.emit("reader_done", Json.obj().with("kind", kind).with("how", "simple").with("count", seen));
            finished.countDown();
        }
    }

    private void received(String kind, String how, MessageView view) {
        out.emit("received", Json.obj().with("kind", kind).with("how", how)
            .with("body", text(view.getBody()))
            .with("message_id", view.getMessageId().toString())
            .with("group", view.getMessageGroup().orElse(null))
            .with("attempt", view.getDeliveryAttempt())
            .with("at_ms", System.currentTimeMillis()));
    }

    private static String text(ByteBuffer body) {
        ByteBuffer copy = body.duplicate();
        byte[] bytes = new byte[copy.remaining()];
        copy.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static String describe(Throwable e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }
}
