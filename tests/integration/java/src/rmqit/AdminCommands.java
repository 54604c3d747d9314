package rmqit;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * What the Java client and mqadmin's API see of the cluster:
 *
 * <ul>
 *   <li>route: {@code DefaultMQProducer.fetchPublishMessageQueues(topic)}, a {@code route} line with the
 *       queues;</li>
 *   <li>clusters: {@code DefaultMQAdminExt.examineBrokerClusterInfo()}, a {@code clusters} line;</li>
 *   <li>topic-route: {@code DefaultMQAdminExt.examineTopicRouteInfo(topic)}, a {@code topic_route} line.</li>
 * </ul>
 *
 * <p>ClusterInfo, TopicRouteData, BrokerData and QueueData moved from {@code org.apache.rocketmq.common.protocol}
 * (4.x) to {@code org.apache.rocketmq.remoting.protocol} (5.x) with the same getters, so they are read by
 * reflection and this source compiles against either client.
 */
final class AdminCommands {
    private AdminCommands() {
    }

    static void declare(Options o) {
        o.value("group", "JavaPeerAdmin");
        o.value("admin-timeout-ms", "5000");
        if (!"clusters".equals(o.command())) {
            o.requiredValue("topic");
        }
    }

    static int run(final Options o) throws Exception {
        String command = o.command();
        long started = System.nanoTime();
        if ("route".equals(command)) {
            final DefaultMQProducer producer = new DefaultMQProducer(o.get("group"), Peer.rpcHook(o));
            Peer.configure(producer, o);
            Runnable shutdown = new Runnable() {
                @Override
                public void run() {
                    producer.shutdown();
                }
            };
            int code = Peer.EXIT_OK;
            try {
                Peer.PROGRESS.stage = "start";
                producer.start();
                Peer.PROGRESS.stage = "fetch-queues";
                List<MessageQueue> queues =
                    new ArrayList<MessageQueue>(producer.fetchPublishMessageQueues(o.get("topic")));
                Collections.sort(queues);
                List<Object> listed = new ArrayList<Object>();
                for (MessageQueue queue : queues) {
                    listed.add(Json.obj().with("topic", queue.getTopic()).with("broker_name", queue.getBrokerName())
                        .with("queue_id", queue.getQueueId()));
                }
                Peer.out.emit("route", Json.obj().with("topic", o.get("topic")).with("queues", listed));
                Peer.PROGRESS.count.set(listed.size());
            } catch (Exception e) {
                if (!Peer.isClientError(e)) {
                    throw e;
                }
                Peer.clientError(e, null);
                code = Peer.EXIT_CLIENT_ERROR;
            }
            return Peer.finish(o, shutdown, started, code);
        }
        final DefaultMQAdminExt admin = new DefaultMQAdminExt(Peer.rpcHook(o), o.longValue("admin-timeout-ms"));
        Peer.configure(admin, o);
        Runnable shutdown = new Runnable() {
            @Override
            public void run() {
                admin.shutdown();
            }
        };
        int code = Peer.EXIT_OK;
        try {
            Peer.PROGRESS.stage = "start";
            admin.start();
            if ("clusters".equals(command)) {
                Peer.PROGRESS.stage = "examineBrokerClusterInfo";
                Object info = admin.examineBrokerClusterInfo();
                Json.Obj clusters = Json.obj();
                Map<?, ?> clusterTable = (Map<?, ?>) get(info, "getClusterAddrTable");
                for (Map.Entry<?, ?> entry : new TreeMap<Object, Object>(clusterTable).entrySet()) {
                    clusters.put(String.valueOf(entry.getKey()), sortedStrings((Collection<?>) entry.getValue()));
                }
                Json.Obj brokers = Json.obj();
                Map<?, ?> brokerTable = (Map<?, ?>) get(info, "getBrokerAddrTable");
                for (Map.Entry<?, ?> entry : new TreeMap<Object, Object>(brokerTable).entrySet()) {
                    brokers.put(String.valueOf(entry.getKey()), brokerData(entry.getValue()));
                }
                Peer.out.emit("clusters", Json.obj().with("clusters", clusters).with("brokers", brokers));
                Peer.PROGRESS.count.set(brokers.size());
            } else {
                Peer.PROGRESS.stage = "examineTopicRouteInfo";
                Object route = admin.examineTopicRouteInfo(o.get("topic"));
                List<Object> brokers = new ArrayList<Object>();
                for (Object data : (Collection<?>) get(route, "getBrokerDatas")) {
                    brokers.add(brokerData(data));
                }
                List<Object> queues = new ArrayList<Object>();
                for (Object data : (Collection<?>) get(route, "getQueueDatas")) {
                    queues.add(Json.obj()
                        .with("broker_name", get(data, "getBrokerName"))
                        .with("read_queue_nums", get(data, "getReadQueueNums"))
                        .with("write_queue_nums", get(data, "getWriteQueueNums"))
                        .with("perm", get(data, "getPerm"))
                        .with("topic_sys_flag", get(data, "getTopicSysFlag")));
                }
                Peer.out.emit("topic_route", Json.obj().with("topic", o.get("topic"))
                    .with("order_topic_conf", get(route, "getOrderTopicConf"))
                    .with("brokers", brokers).with("queue_datas", queues));
                Peer.PROGRESS.count.set(queues.size());
            }
        } catch (Exception e) {
            if (!Peer.isClientError(e)) {
                throw e;
            }
            Peer.clientError(e, null);
            code = Peer.EXIT_CLIENT_ERROR;
        }
        return Peer.finish(o, shutdown, started, code);
    }

    private static Json.Obj brokerData(Object data) throws Exception {
        Json.Obj addrs = Json.obj();
        Map<?, ?> table = (Map<?, ?>) get(data, "getBrokerAddrs");
        if (table != null) {
            for (Map.Entry<?, ?> entry : new TreeMap<Object, Object>(table).entrySet()) {
                addrs.put(String.valueOf(entry.getKey()), String.valueOf(entry.getValue()));
            }
        }
        return Json.obj().with("broker_name", get(data, "getBrokerName")).with("cluster", get(data, "getCluster"))
            .with("addrs", addrs);
    }

    private static List<String> sortedStrings(Collection<?> values) {
        TreeSet<String> sorted = new TreeSet<String>();
        if (values != null) {
            for (Object value : values) {
                sorted.add(String.valueOf(value));
            }
        }
        return new ArrayList<String>(sorted);
    }

    /** {@code target.getter()}, or null when the class has no such getter. */
    private static Object get(Object target, String getter) throws Exception {
        if (target == null) {
            return null;
        }
        Method method;
        try {
            method = target.getClass().getMethod(getter);
        } catch (NoSuchMethodException e) {
            return null;
        }
        return method.invoke(target);
    }
}
