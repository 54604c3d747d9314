"""Per-topic and per-group rates from the brokers' statistics, what mqadmin ``statsAll`` prints.

For a topic: the put rate and day's count (``TOPIC_PUT_NUMS``) summed over the masters of its route; for
each group consuming it (QUERY_TOPIC_CONSUME_BY_WHO): the get rate and day's count (``GROUP_GET_NUMS`` of
``topic@group``) and its backlog. An item a broker has not collected counts as zero, as in mqadmin.
"""

from __future__ import annotations

import dataclasses
import logging

from admin.cluster import topic_route
from admin.consumers import consumer_progress
from admin.errors import AdminError, RequestRefusedError
from admin.rpc import AdminRpc, check
from rocketmq_wire.bodies import BrokerStatsData, GroupList
from rocketmq_wire.bodies.route import MASTER_ID
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.admin import ViewBrokerStatsDataRequestHeader
from rocketmq_wire.headers.topic import QueryTopicConsumeByWhoRequestHeader

logger = logging.getLogger("admin.stats")

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"


@dataclasses.dataclass(frozen=True, slots=True)
class TopicGroupStats:
    """One line of mqadmin ``statsAll``; ``group`` is ``None`` for a topic nobody consumes."""

    topic: str
    group: str | None
    accumulation: int
    in_tps: float
    out_tps: float | None
    in_msg_24h: int
    out_msg_24h: int | None


async def view_broker_stats(
    rpc: AdminRpc, broker_addr: str, stats_name: str, stats_key: str
) -> BrokerStatsData:
    """One statistics item of one broker; a broker without it refuses (RequestRefusedError)."""
    header = ViewBrokerStatsDataRequestHeader(stats_name=stats_name, stats_key=stats_key)
    request = RemotingCommand.request(RequestCode.VIEW_BROKER_STATS_DATA, header)
    response = check(await rpc.server(broker_addr, request), f"stats {stats_name} {stats_key}", broker_addr)
    try:
        return BrokerStatsData.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable stats from {broker_addr}: {exc}") from exc


async def _summed(rpc: AdminRpc, masters: list[str], name: str, key: str) -> tuple[float, int]:
    tps, count = 0.0, 0
    for addr in masters:
        try:
            data = await view_broker_stats(rpc, addr, name, key)
        except RequestRefusedError as exc:
            logger.debug("no stats %s %s on %s: %s", name, key, addr, exc)
            continue
        tps += data.stats_minute.tps
        count += data.sum_of_day()
    return tps, count


async def _groups_of(rpc: AdminRpc, masters: list[str], topic: str) -> list[str]:
    for addr in masters:
        header = QueryTopicConsumeByWhoRequestHeader(topic=topic)
        response = await rpc.server(
            addr, RemotingCommand.request(RequestCode.QUERY_TOPIC_CONSUME_BY_WHO, header)
        )
        check(response, f"groups consuming {topic!r}", addr)
        try:
            return sorted(GroupList.from_json(response.body).group_list)
        except CodecError as exc:
            raise AdminError(f"unreadable group list from {addr}: {exc}") from exc
    return []


async def topic_stats(rpc: AdminRpc, topic: str, *, active_only: bool = False) -> list[TopicGroupStats]:
    """The ``statsAll`` lines of one topic (none when ``active_only`` and nothing moved in a day)."""
    route = await topic_route(rpc, topic)
    masters = [d.broker_addrs[MASTER_ID] for d in route.broker_datas if MASTER_ID in d.broker_addrs]
    in_tps, in_count = await _summed(rpc, masters, TOPIC_PUT_NUMS, topic)
    groups = await _groups_of(rpc, masters, topic)
    if not groups:
        if active_only and in_count <= 0:
            return []
        return [TopicGroupStats(topic, None, 0, in_tps, None, in_count, None)]
    rows: list[TopicGroupStats] = []
    for group in groups:
        out_tps, out_count = await _summed(rpc, masters, GROUP_GET_NUMS, f"{topic}@{group}")
        try:
            backlog = max(0, (await consumer_progress(rpc, group, topic)).total_lag)
        except AdminError:
            backlog = 0
        if active_only and in_count <= 0 and out_count <= 0:
            continue
        rows.append(TopicGroupStats(topic, group, backlog, in_tps, out_tps, in_count, out_count))
    return rows
