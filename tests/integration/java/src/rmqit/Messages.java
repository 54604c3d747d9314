package rmqit;

import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/** JSON-ready fields of what the client hands back: received messages and SendResults. */
final class Messages {
    private static final String UNIQ_KEY = "UNIQ_KEY";

    private Messages() {
    }

    /**
     * Everything the client tells about a received (or checked-back) message. {@code msg_id} is what the
     * Java API calls msgId for a consumer (the producer-made UNIQ_KEY when there is one), {@code
     * offset_msg_id} the broker's store id; {@code broker_name} comes from the queue when one is given.
     */
    static Json.Obj describe(MessageExt msg, MessageQueue queue) {
        String msgId;
        String offsetMsgId;
        if (msg instanceof MessageClientExt) {
            msgId = msg.getMsgId();
            offsetMsgId = ((MessageClientExt) msg).getOffsetMsgId();
        } else {
            String uniq = msg.getProperty(UNIQ_KEY);
            msgId = uniq != null ? uniq : msg.getMsgId();
            offsetMsgId = msg.getMsgId();
        }
        byte[] body = msg.getBody() == null ? new byte[0] : msg.getBody();
        Map<String, String> properties = new TreeMap<String, String>();
        if (msg.getProperties() != null) {
            properties.putAll(msg.getProperties());
        }
        String brokerName = queue != null ? queue.getBrokerName() : msg.getBrokerName();
        return Json.obj()
            .with("topic", msg.getTopic())
            .with("queue_id", msg.getQueueId())
            .with("queue_offset", msg.getQueueOffset())
            .with("msg_id", msgId)
            .with("offset_msg_id", offsetMsgId)
            .with("tags", msg.getTags())
            .with("keys", msg.getKeys())
            .with("properties", properties)
            .with("body_b64", Base64.getEncoder().encodeToString(body))
            .with("body_len", body.length)
            .with("body_exact", true)
            .with("reconsume_times", msg.getReconsumeTimes())
            .with("delay_time_level", msg.getDelayTimeLevel())
            .with("store_size", msg.getStoreSize())
            .with("born_timestamp", msg.getBornTimestamp())
            .with("store_timestamp", msg.getStoreTimestamp())
            .with("commit_log_offset", msg.getCommitLogOffset())
            .with("prepared_transaction_offset", msg.getPreparedTransactionOffset())
            .with("sys_flag", msg.getSysFlag())
            .with("body_crc", msg.getBodyCRC())
            .with("flag", msg.getFlag())
            .with("born_host", host(msg.getBornHost()))
            .with("store_host", host(msg.getStoreHost()))
            .with("broker_name", brokerName)
            .with("transaction_id", msg.getTransactionId());
    }

    static String host(SocketAddress address) {
        if (address instanceof InetSocketAddress) {
            InetSocketAddress inet = (InetSocketAddress) address;
            String ip = inet.getAddress() != null ? inet.getAddress().getHostAddress() : inet.getHostString();
            return ip + ":" + inet.getPort();
        }
        return address == null ? null : address.toString();
    }

    /** SendResult.getRecallHandle() of a 5.3.2+ client, else null. */
    static String recallHandle(SendResult result) {
        try {
            return (String) SendResult.class.getMethod("getRecallHandle").invoke(result);
        } catch (ReflectiveOperationException e) {
            return null;
        }
    }

    /** One SendResult: status (SendStatus name), ids, the queue and the queue offset. */
    static Json.Obj sendResult(SendResult result) {
        MessageQueue queue = result.getMessageQueue();
        Json.Obj fields = Json.obj()
            .with("status", result.getSendStatus() == null ? null : result.getSendStatus().name())
            .with("msg_id", result.getMsgId())
            .with("offset_msg_id", result.getOffsetMsgId())
            .with("topic", queue == null ? null : queue.getTopic())
            .with("queue_id", queue == null ? null : queue.getQueueId())
            .with("broker_name", queue == null ? null : queue.getBrokerName())
            .with("offset", result.getQueueOffset())
            .with("region_id", result.getRegionId())
            .maybe("transaction_id", result.getTransactionId())
            .maybe("recall_handle", recallHandle(result));
        if (result instanceof TransactionSendResult) {
            TransactionSendResult tx = (TransactionSendResult) result;
            fields.put("local_state", tx.getLocalTransactionState() == null ? null
                : tx.getLocalTransactionState().name());
        }
        return fields;
    }
}
