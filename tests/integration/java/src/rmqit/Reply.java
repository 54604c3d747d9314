package rmqit;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Request-reply, both sides:
 *
 * <ul>
 *   <li>request: {@code DefaultMQProducer.request(msg, timeout)} for each spec in turn; a {@code reply} line
 *       per answer (the request's index, its correlation id, the reply's body), an error line per failure;</li>
 *   <li>respond: a push consumer of {@code --topic} answering every request with a message built by {@code
 *       MessageUtil.createReplyMessage(request, "reply:" + body)} and sent by a producer, a {@code replied}
 *       line each, until {@code --count} were answered (or the timeout).</li>
 * </ul>
 */
final class Reply {
    static final Set<String> COMMANDS = new HashSet<String>(Arrays.asList("request", "respond"));
    static final byte[] PREFIX = "reply:".getBytes(StandardCharsets.UTF_8);

    private Reply() {
    }

    static void declare(Options o) {
        o.value("group", "request".equals(o.command()) ? "JavaPeerRequester" : "JavaPeerResponder");
        o.requiredValue("topic");
        if ("request".equals(o.command())) {
            o.value("spec", null);
            o.value("body", "java-peer request {i}");
            o.value("tags", null);
            o.value("keys", null);
            o.multi("property");
            o.value("delay-level", null);
            o.value("count", "1");
            o.value("request-timeout-ms", "15000");
        } else {
            o.requiredValue("count");
        }
    }

    static int run(Options o) throws Exception {
        return "request".equals(o.command()) ? request(o) : respond(o);
    }

    private static int request(Options o) throws Exception {
        List<Specs.Spec> specs = Specs.parse(o, System.in);
        final DefaultMQProducer producer = new DefaultMQProducer(o.get("group"), Peer.rpcHook(o));
        Peer.configure(producer, o);
        long timeout = o.longValue("request-timeout-ms");
        producer.setSendMsgTimeout((int) timeout);
        long started = System.nanoTime();
        producer.start();
        int code = Peer.EXIT_OK;
        for (int index = 0; index < specs.size(); index++) {
            Peer.PROGRESS.stage = "request";
            Peer.PROGRESS.index = index;
            Message msg = specs.get(index).toMessage();
            try {
                Message answer = producer.request(msg, timeout);
                Peer.out.emit("reply", Json.obj().with("index", index)
                    .with("correlation_id", msg.getProperty(MessageConst.PROPERTY_CORRELATION_ID))
                    .with("reply_correlation_id", answer.getProperty(MessageConst.PROPERTY_CORRELATION_ID))
                    .with("body", new String(answer.getBody(), StandardCharsets.UTF_8)));
                Peer.PROGRESS.count.incrementAndGet();
            } catch (Exception e) {
                if (!Peer.isClientError(e)) {
                    throw e;
                }
                Peer.clientError(e, Json.obj().with("index", index));
                code = Peer.EXIT_CLIENT_ERROR;
            }
        }
        return Peer.finish(o, new Runnable() {
            @Override
            public void run() {
                producer.shutdown();
            }
        }, started, code);
    }

    private static int respond(Options o) throws Exception {
        final int expected = o.integer("count");
        final DefaultMQProducer producer = new DefaultMQProducer(o.get("group") + "Replies", Peer.rpcHook(o));
        Peer.configure(producer, o);
        producer.setSendMsgTimeout(15000);
        final DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(o.get("group"), Peer.rpcHook(o),
            new AllocateMessageQueueAveragely());
        Peer.configure(consumer, o);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        final AtomicInteger replied = new AtomicInteger();
        final CountDownLatch done = new CountDownLatch(1);
        consumer.registerMessageListener(new MessageListenerConcurrently() {
            @Override
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs, ConsumeConcurrentlyContext ctx) {
                for (MessageExt request : msgs) {
                    byte[] body = new byte[PREFIX.length + request.getBody().length];
                    System.arraycopy(PREFIX, 0, body, 0, PREFIX.length);
                    System.arraycopy(request.getBody(), 0, body, PREFIX.length, request.getBody().length);
                    try {
                        Message reply = MessageUtil.createReplyMessage(request, body);
                        producer.send(reply);
                    } catch (Exception e) {
                        Peer.clientError(e, Json.obj().with("correlation_id",
                            request.getProperty(MessageConst.PROPERTY_CORRELATION_ID)));
                        return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                    }
                    Peer.out.emit("replied", Json.obj()
                        .with("correlation_id", request.getProperty(MessageConst.PROPERTY_CORRELATION_ID)));
                    Peer.PROGRESS.count.incrementAndGet();
                    if (replied.incrementAndGet() >= expected) {
                        done.countDown();
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        long started = System.nanoTime();
        Peer.PROGRESS.stage = "start";
        producer.start();
        consumer.subscribe(o.get("topic"), "*");
        consumer.start();
        Peer.out.emit("ready", Json.obj().with("role", "responder").with("group", o.get("group"))
            .with("pid", Peer.pid()));
        Peer.PROGRESS.stage = "respond";
        done.await((long) (o.seconds("timeout") * 1000), TimeUnit.MILLISECONDS);
        int code = replied.get() >= expected ? Peer.EXIT_OK : Peer.EXIT_INCOMPLETE;
        return Peer.finish(o, new Runnable() {
            @Override
            public void run() {
                consumer.shutdown();
                producer.shutdown();
            }
        }, started, code);
    }
}
