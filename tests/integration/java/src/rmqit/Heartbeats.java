package rmqit;

import java.util.Collection;
import org.apache.rocketmq.client.impl.FindBrokerResult;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Makes sure the brokers have heard a client's heartbeat, which Apache's client does not guarantee at start.
 *
 * <p>A client sends heartbeats from a timer, the first one second after start, and explicitly in a consumer's
 * {@code start()}. Both go through {@code sendHeartbeatToAllBrokerWithLock}, which uses {@code tryLock}: the
 * explicit one is skipped, not queued, while the timer's holds the lock, and the timer's may have gone out
 * before the route named any broker. On a busy machine start takes that second, and then:
 * <ul>
 *   <li>a pull consumer refuses a non-tag (SQL92) pull, as it learns a broker's version only from heartbeat
 *   answers (0 reads as "older than 4.1");</li>
 *   <li>a 5.x push consumer skips its first rebalance (it rebalances at start only when that heartbeat went
 *   out), and the broker does not list it among the group's consumers: it reads nothing until the next
 *   heartbeat, 30 s later (seen: a second run of a group took 33 s to get one waiting message).</li>
 * </ul>
 */
final class Heartbeats {
    private static final long DEADLINE_NANOS = 10_000_000_000L;

    private Heartbeats() {
    }

    /**
     * Heartbeats until the client knows the version of every broker behind {@code queues}, which it records
     * from heartbeat answers only; past 10 s the client goes on as it would have (and reports what fails).
     */
    static void untilBrokersAnswered(MQClientInstance factory, Collection<MessageQueue> queues)
        throws InterruptedException {
        long deadline = System.nanoTime() + DEADLINE_NANOS;
        for (MessageQueue queue : queues) {
            while (true) {
                FindBrokerResult found =
                    factory.findBrokerAddressInSubscribe(queue.getBrokerName(), MixAll.MASTER_ID, false);
                if (found != null && found.getBrokerVersion() > 0 || System.nanoTime() > deadline) {
                    break;
                }
                factory.sendHeartbeatToAllBrokerWithLock();
                Thread.sleep(50);
            }
        }
    }
}
