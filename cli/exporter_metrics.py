"""A cluster snapshot as apache/rocketmq-exporter's metric families: the same names, types and label keys,
so its Grafana dashboards and alerts read ``rmq exporter`` unchanged.

Families the snapshot cannot fill yet (client runtime figures, retry/DLQ offsets, per-client counts) are left
out rather than reported as zero.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from admin.snapshot import BrokerReading, ClusterSnapshot
from rocketmq_wire.topics import DLQ_GROUP_TOPIC_PREFIX, RETRY_GROUP_TOPIC_PREFIX

RUNTIME_LABELS = ["cluster", "brokerIP", "brokerHost", "des", "boottime", "broker_version"]
BROKER_LABELS = ["cluster", "brokerIP", "broker"]
TOPIC_LABELS = ["cluster", "broker", "topic"]
GROUP_LABELS = ["cluster", "broker", "topic", "group"]
DIFF_LABELS = ["group", "topic", "countOfOnlineConsumers", "msgModel"]

#: Exporter name -> how to read it from a broker's runtime statistics.
_RUNTIME: dict[str, Callable[[BrokerReading], float]] = {
    "rocketmq_brokeruntime_msg_put_total_today_now": lambda b: b.number("msgPutTotalTodayNow"),
    "rocketmq_brokeruntime_msg_gettotal_today_now": lambda b: b.number("msgGetTotalTodayNow"),
    "rocketmq_brokeruntime_dispatch_behind_bytes": lambda b: b.number("dispatchBehindBytes"),
    "rocketmq_brokeruntime_put_message_size_total": lambda b: b.number("putMessageSizeTotal"),
    "rocketmq_brokeruntime_put_message_average_size": lambda b: b.number("putMessageAverageSize"),
    "rocketmq_brokeruntime_earliest_message_timestamp": lambda b: b.number("earliestMessageTimeStamp"),
    "rocketmq_brokeruntime_putmessage_times_total": lambda b: b.number("putMessageTimesTotal"),
    "rocketmq_brokeruntime_commitlog_disk_ratio": lambda b: b.number("commitLogDiskRatio"),
    "rocketmq_brokeruntime_consumequeue_disk_ratio": lambda b: b.number("consumeQueueDiskRatio"),
    "rocketmq_brokeruntime_commitlog_maxoffset": lambda b: b.number("commitLogMaxOffset"),
    "rocketmq_brokeruntime_commitlog_minoffset": lambda b: b.number("commitLogMinOffset"),
}


def _rate(key: str, window: int) -> Callable[[BrokerReading], float]:
    return lambda b: b.rate(key, window)


for _window, _suffix in ((0, "10"), (1, "60"), (2, "600")):
    for _name, _key in (
        ("put_tps", "putTps"),
        ("getfound_tps", "getFoundTps"),
        ("gettotal_tps", "getTotalTps"),
        ("getmiss_tps", "getMissTps"),
        ("gettransfered_tps", "getTransferedTps"),
    ):
        _RUNTIME[f"rocketmq_brokeruntime_{_name}{_suffix}"] = _rate(_key, _window)


def _runtime_labels(b: BrokerReading) -> list[str]:
    return [
        b.cluster,
        b.addr,
        b.broker_name,
        "",
        b.runtime.get("bootTimestamp", ""),
        b.runtime.get("brokerVersionDesc", b.runtime.get("brokerVersion", "")),
    ]


def families(snapshot: ClusterSnapshot, now_ms: int | None = None) -> list[Metric]:
    """Every family the exporter serves, filled from one snapshot."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    out: list[Metric] = []

    broker_tps = GaugeMetricFamily("rocketmq_broker_tps", "BrokerPutNums", labels=BROKER_LABELS)
    broker_qps = GaugeMetricFamily("rocketmq_broker_qps", "BrokerGetNums", labels=BROKER_LABELS)
    for b in snapshot.brokers:
        broker_tps.add_metric([b.cluster, b.addr, b.broker_name], b.rate("putTps"))
        broker_qps.add_metric([b.cluster, b.addr, b.broker_name], b.rate("getTransferedTps"))
    out += [broker_tps, broker_qps]

    for name, read in _RUNTIME.items():
        family = GaugeMetricFamily(name, name, labels=RUNTIME_LABELS)
        for b in snapshot.brokers:
            family.add_metric(_runtime_labels(b), read(b))
        out.append(family)

    producer_tps = GaugeMetricFamily("rocketmq_producer_tps", "TopicPutNums", labels=TOPIC_LABELS)
    for (cluster, broker, topic), value in sorted(snapshot.topic_put_tps.items()):
        producer_tps.add_metric([cluster, broker, topic], value)
    consumer_tps = GaugeMetricFamily("rocketmq_consumer_tps", "GroupGetNums", labels=GROUP_LABELS)
    for key, value in sorted(snapshot.group_get_tps.items()):
        consumer_tps.add_metric(list(key), value)
    out += [producer_tps, consumer_tps]

    offsets = GaugeMetricFamily("rocketmq_producer_offset", "TopicOffset", labels=TOPIC_LABELS)
    for (cluster, broker, topic), value in sorted(snapshot.topic_offsets().items()):
        offsets.add_metric([cluster, broker, topic], value)
    out.append(offsets)

    broker_total = GaugeMetricFamily(
        "rocketmq_consumer_offset", "GroupBrokerTotalOffset", labels=GROUP_LABELS
    )
    consumed = GaugeMetricFamily(
        "rocketmq_group_consume_total_offset", "GroupConsumeTotalOffset", labels=GROUP_LABELS
    )
    consume_tps = GaugeMetricFamily("rocketmq_group_consume_tps", "GroupConsumeTPS", labels=GROUP_LABELS)
    latency = GaugeMetricFamily(
        "rocketmq_group_get_latency_by_storetime", "GroupGetLatencyByStoreTime", labels=GROUP_LABELS
    )
    for p in snapshot.progress:
        labels = [p.cluster, p.broker_name, p.topic, p.group]
        broker_total.add_metric(labels, p.broker_offset)
        consumed.add_metric(labels, p.consumer_offset)
        consume_tps.add_metric(labels, p.consume_tps)
        behind = now_ms - p.last_timestamp if p.diff > 0 and p.last_timestamp > 0 else 0
        latency.add_metric(labels, max(0, behind))
    out += [broker_total, consumed, consume_tps, latency]

    # A group's retry and dead-letter topics have families of their own, as in Apache's exporter.
    diff = GaugeMetricFamily("rocketmq_group_diff", "GroupDiff", labels=DIFF_LABELS)
    retry = GaugeMetricFamily("rocketmq_group_retrydiff", "GroupRetryDiff", labels=DIFF_LABELS)
    dlq = GaugeMetricFamily("rocketmq_group_dlqdiff", "GroupDLQDiff", labels=DIFF_LABELS)
    for (group, topic), value in sorted(snapshot.group_diffs().items()):
        online, model = snapshot.members.get(group, (0, ""))
        family = (
            retry
            if topic.startswith(RETRY_GROUP_TOPIC_PREFIX)
            else dlq
            if topic.startswith(DLQ_GROUP_TOPIC_PREFIX)
            else diff
        )
        family.add_metric([group, topic, str(online), model], value)
    out += [diff, retry, dlq]
    return out


class SnapshotCollector(Collector):
    """Serves the last snapshot the background reader left; a scrape never talks to the cluster."""

    def __init__(self, latest: Callable[[], ClusterSnapshot | None]) -> None:
        self._latest = latest

    def collect(self) -> Iterable[Metric]:
        snapshot = self._latest()
        if snapshot is None:
            return []
        return families(snapshot)
