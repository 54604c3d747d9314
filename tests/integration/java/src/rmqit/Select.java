package rmqit;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * sql-select: what Apache's client gets for each of many SQL92 expressions over the same messages, in one JVM.
 *
 * <p>One {@code DefaultMQPullConsumer} reads every queue of {@code --topic} from its first to its last offset
 * once per {@code --sql} expression, pulling with {@code MessageSelector.bySql(expression)}, so the broker
 * filters each pull. Every message found is a {@code message} line with {@code expression} (the index of its
 * {@code --sql}, in the order given); each expression ends with a {@code selected} line
 * {@code {"expression": i, "count": n}}. A refused pull (a broker that does not filter by SQL92, an
 * expression it cannot compile) is an {@code error} line naming the expression, and exit code 4.
 */
final class Select {
    private Select() {
    }

    static void declare(Options o) {
        o.value("group", "JavaPeerSqlSelect");
        o.requiredValue("topic");
        o.multi("sql");
        o.value("max-num", "32");
    }

    static int run(final Options o) throws Exception {
        List<String> expressions = o.all("sql");
        if (expressions.isEmpty()) {
            throw new Options.UsageError("sql-select: give at least one --sql expression");
        }
        final DefaultMQPullConsumer consumer = new DefaultMQPullConsumer(o.get("group"), Peer.rpcHook(o));
        Peer.configure(consumer, o);
        Runnable shutdown = new Runnable() {
            @Override
            public void run() {
                consumer.shutdown();
            }
        };
        long started = System.nanoTime();
        int maxNum = o.integer("max-num");
        Integer current = null;
        try {
            Peer.PROGRESS.stage = "start";
            consumer.start();
            List<MessageQueue> queues = new ArrayList<MessageQueue>(consumer.fetchSubscribeMessageQueues(o.get("topic")));
            Collections.sort(queues);
            MQClientInstance factory =
                consumer.getDefaultMQPullConsumerImpl().getRebalanceImpl().getmQClientFactory();
            factory.updateTopicRouteInfoFromNameServer(o.get("topic"));
            Heartbeats.untilBrokersAnswered(factory, queues);
            Peer.PROGRESS.stage = "select";
            for (int i = 0; i < expressions.size(); i++) {
                current = i;
                Peer.PROGRESS.index = i;
                MessageSelector selector = MessageSelector.bySql(expressions.get(i));
                int count = 0;
                for (MessageQueue queue : queues) {
                    count += selectQueue(consumer, queue, selector, maxNum, i);
                }
                Peer.out.emit("selected", Json.obj().with("expression", i).with("count", count));
            }
        } catch (Exception e) {
            if (!Peer.isClientError(e)) {
                throw e;
            }
            Json.Obj where = current == null ? null
                : Json.obj().with("expression", current).with("sql", expressions.get(current));
            Peer.clientError(e, where);
            return Peer.finish(o, shutdown, started, Peer.EXIT_CLIENT_ERROR);
        }
        return Peer.finish(o, shutdown, started, Peer.EXIT_OK);
    }

    /** Pulls {@code queue} from its first to its last offset with {@code selector}; how many messages came. */
    private static int selectQueue(DefaultMQPullConsumer consumer, MessageQueue queue, MessageSelector selector,
                                   int maxNum, int expression) throws Exception {
        long offset = consumer.minOffset(queue);
        long end = consumer.maxOffset(queue);
        int count = 0;
        while (offset < end) {
            PullResult result = consumer.pull(queue, selector, offset, maxNum);
            if (result.getPullStatus() == PullStatus.FOUND && result.getMsgFoundList() != null) {
                for (MessageExt msg : result.getMsgFoundList()) {
                    Json.Obj fields = Messages.describe(msg, queue);
                    fields.put("expression", expression);
                    Peer.out.emit("message", fields);
                    Peer.PROGRESS.count.incrementAndGet();
                    count++;
                }
            }
            long next = result.getNextBeginOffset();
            if (next <= offset) {
                break;  // the broker moved nowhere: nothing more to read here
            }
            offset = next;
        }
        return count;
    }
}
