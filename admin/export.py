"""What mqadmin ``exportMetadata``, ``exportConfigs`` and ``exportMetrics`` write: a cluster's user topics
and groups, the settings of its brokers and their figures, as JSON documents with Apache's keys.

Topics and groups come from each master (GET_ALL_TOPIC_CONFIG, GET_ALL_SUBSCRIPTIONGROUP_CONFIG) without
the system ones; on a cluster, a topic or group on several masters is merged by adding up its queue counts
(retry queues for groups), as mqadmin does. The caller writes the documents (``rmq`` to ``metadata.json``,
``topic.json``, ``subscriptionGroup.json``, ``configs.json`` and ``metrics.json``).
"""

from __future__ import annotations

import json
import time
from typing import Any

from admin.brokers import broker_config, runtime_stats
from admin.cluster import cluster_brokers, cluster_info
from admin.consumers import consumer_connections
from admin.errors import AdminError, RequestRefusedError
from admin.groups import all_subscription_groups
from admin.rpc import AdminRpc
from admin.stats import TOPIC_PUT_NUMS, view_broker_stats
from admin.topics import user_topics
from rocketmq_wire import fastjson
from rocketmq_wire.bodies import BrokerStatsData, TopicConfig
from rocketmq_wire.bodies.route import MASTER_ID
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.command import DEFAULT_VERSION
from rocketmq_wire.topics import (
    SCHEDULE_TOPIC,
    SYSTEM_CONSUMER_GROUP_PREFIX,
    TRANS_HALF_TOPIC,
)

#: Groups mqadmin leaves out of an export (``MixAll``'s and ``SubscriptionGroupManager``'s built-in ones).
SYSTEM_GROUPS = frozenset(
    {
        "TOOLS_CONSUMER",
        "FILTERSRV_CONSUMER",
        "__MONITOR_CONSUMER",
        "CLIENT_INNER_PRODUCER",
        "SELF_TEST_P_GROUP",
        "SELF_TEST_C_GROUP",
        "CID_ONS-HTTP-PROXY",
        "CID_ONSAPI_PERMISSION",
        "CID_ONSAPI_OWNER",
        "CID_ONSAPI_PULL",
    }
)

#: The broker settings ``exportConfigs`` keeps (``needBrokerProprties``).
EXPORTED_BROKER_SETTINGS = (
    "brokerClusterName",
    "brokerId",
    "brokerName",
    "brokerRole",
    "fileReservedTime",
    "filterServerNums",
    "flushDiskType",
    "maxMessageSize",
    "messageDelayLevel",
    "msgTraceTopicName",
    "slaveReadEnable",
    "traceOn",
    "traceTopicEnable",
    "useTLS",
    "autoCreateTopicEnable",
    "autoCreateSubscriptionGroup",
)


def _plain(bean: fastjson.Bean) -> Any:
    return json.loads(fastjson.dump_bytes(bean))


def is_system_group(group: str) -> bool:
    return group in SYSTEM_GROUPS or group.startswith(SYSTEM_CONSUMER_GROUP_PREFIX)


async def export_metadata(
    rpc: AdminRpc,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
    topics: bool = True,
    groups: bool = True,
    special_topics: bool = False,
) -> dict[str, Any]:
    """``{"topicConfigTable": ..., "subscriptionGroupTable": ..., "exportTime": ms}`` (tables asked for)."""
    if (cluster is None) == (broker_addr is None):
        raise AdminError("name either a cluster or a broker address to export from")
    if broker_addr is not None:
        addrs = [broker_addr]
    else:
        addrs = [b.addr for b in await cluster_brokers(rpc, cluster, masters_only=True)]
    topic_table: dict[str, TopicConfig] = {}
    group_table: dict[str, Any] = {}
    for addr in addrs:
        if topics:
            for name, config in (await user_topics(rpc, addr, special=special_topics)).items():
                seen = topic_table.get(name)
                if seen is not None:
                    config.read_queue_nums += seen.read_queue_nums
                    config.write_queue_nums += seen.write_queue_nums
                topic_table[name] = config
        if groups:
            table = (await all_subscription_groups(rpc, addr)).subscription_group_table
            for name, group in table.items():
                if is_system_group(name):
                    continue
                seen_group = group_table.get(name)
                if seen_group is not None:
                    group.retry_queue_nums += seen_group.retry_queue_nums
                group_table[name] = group
    result: dict[str, Any] = {}
    if topics:
        result["topicConfigTable"] = {name: _plain(c.to_bean()) for name, c in sorted(topic_table.items())}
    if groups:
        result["subscriptionGroupTable"] = {n: _plain(g.to_bean()) for n, g in sorted(group_table.items())}
    result["exportTime"] = time.time_ns() // 1_000_000
    return result


async def export_configs(rpc: AdminRpc, cluster: str) -> dict[str, Any]:
    """``{"brokerConfigs": {brokerName: settings}, "clusterScale": {...}}`` of one cluster."""
    brokers = await cluster_brokers(rpc, cluster)
    configs: dict[str, dict[str, str]] = {}
    masters = [b for b in brokers if b.is_master]
    for master in masters:
        settings = await broker_config(rpc, master.addr)
        kept = {key: settings[key] for key in EXPORTED_BROKER_SETTINGS if key in settings}
        configs[settings.get("brokerName", master.broker_name)] = kept
    slaves = sum(
        1 for b in brokers if not b.is_master and any(m.broker_name == b.broker_name for m in masters)
    )
    return {
        "brokerConfigs": configs,
        "clusterScale": {
            "namesrvSize": len(rpc.namesrv_addrs),
            "masterBrokerSize": len(masters),
            "slaveBrokerSize": slaves,
        },
    }


_TOTAL_TPS_KEYS = ("totalNormalInTps", "totalNormalOutTps", "totalTransInTps", "totalScheduleInTps")
_DAY_KEYS = ("normalOneDayInNum", "normalOneDayOutNum", "transOneDayInNum", "scheduleOneDayInNum")


def _first_rate(text: str | None) -> float:
    """The first figure of a ``"12.0 11.5 10.9"`` runtime rate (0 when absent or unreadable)."""
    try:
        return float((text or "").split()[0])
    except (ValueError, IndexError):
        return 0.0


def _long(text: str | None) -> int:
    try:
        return int(text or 0)
    except ValueError:
        return 0


async def _optional_stats(rpc: AdminRpc, addr: str, topic: str) -> BrokerStatsData | None:
    try:
        return await view_broker_stats(rpc, addr, TOPIC_PUT_NUMS, topic)
    except RequestRefusedError:
        return None


async def _client_versions(rpc: AdminRpc, groups: list[str]) -> list[str]:
    found: set[str] = set()
    for group in groups:
        try:
            connections = await consumer_connections(rpc, group)
        except AdminError:
            continue
        for member in connections.connections:
            found.add(f"{member.language}%{MQVersion.name_of(member.version)}")
    return sorted(found)


async def export_metrics(rpc: AdminRpc, cluster: str) -> dict[str, Any]:
    """mqadmin ``exportMetrics``: per master of the cluster its environment, rates, day counts, sizes and
    client versions, and the cluster's totals (``{"evaluateReport": ..., "totalData": ...}``)."""
    info = await cluster_info(rpc)
    names = info.cluster_addr_table.get(cluster)
    if names is None:
        raise AdminError(f"no cluster named {cluster!r}")
    total_tps = dict.fromkeys(
        ("totalNormalInTps", "totalNormalOutTps", "totalTransInTps", "totalScheduleInTps"), 0.0
    )
    total_day = dict.fromkeys(
        ("normalOneDayInNum", "normalOneDayOutNum", "transOneDayInNum", "scheduleOneDayInNum"), 0
    )
    report: dict[str, Any] = {}
    for name in sorted(names):
        data = info.broker_addr_table.get(name)
        addr = data.broker_addrs.get(MASTER_ID) if data is not None else None
        if addr is None:
            continue
        runtime = await runtime_stats(rpc, addr)
        settings = await broker_config(rpc, addr)
        groups = [
            g
            for g in (await all_subscription_groups(rpc, addr)).subscription_group_table
            if not is_system_group(g)
        ]
        topics = await user_topics(rpc, addr)
        trans = await _optional_stats(rpc, addr, TRANS_HALF_TOPIC)
        schedule = await _optional_stats(rpc, addr, SCHEDULE_TOPIC)
        tps = {
            "normalInTps": _first_rate(runtime.get("putTps")),
            "normalOutTps": _first_rate(runtime.get("getTransferedTps") or runtime.get("getTransferredTps")),
            "transInTps": trans.stats_minute.tps if trans is not None else 0.0,
            "scheduleInTps": schedule.stats_minute.tps if schedule is not None else 0.0,
        }
        day = {
            "normalOneDayInNum": _long(runtime.get("msgPutTotalTodayMorning"))
            - _long(runtime.get("msgPutTotalYesterdayMorning")),
            "normalOneDayOutNum": _long(runtime.get("msgGetTotalTodayMorning"))
            - _long(runtime.get("msgGetTotalYesterdayMorning")),
            "transOneDayInNum": trans.sum_of_day() if trans is not None else 0,
            "scheduleOneDayInNum": schedule.sum_of_day() if schedule is not None else 0,
        }
        for key, value in zip(total_tps, tps.values(), strict=True):
            total_tps[key] += value
        for key, count in day.items():
            total_day[key] += count
        report[name] = {
            "runtimeEnv": {
                "cpuNum": settings.get("clientCallbackExecutorThreads"),
                "totalMemKBytes": runtime.get("totalMemKBytes"),
            },
            "runtimeQuota": {
                "diskRatio": {
                    "commitLogDiskRatio": runtime.get("commitLogDiskRatio"),
                    "consumeQueueDiskRatio": runtime.get("consumeQueueDiskRatio"),
                },
                "tps": tps,
                "oneDayNum": day,
                "messageAverageSize": runtime.get("putMessageAverageSize"),
                "topicSize": len(topics),
                "groupSize": len(groups),
            },
            "runtimeVersion": {
                "rocketmqVersion": MQVersion.name_of(DEFAULT_VERSION),
                "clientInfo": await _client_versions(rpc, groups),
            },
        }
    return {"evaluateReport": report, "totalData": {"totalTps": total_tps, "totalOneDayNum": total_day}}
