"""Consumer-group settings and group-wide offset moves, what mqadmin's group commands do.

``updateSubGroup`` / ``deleteSubGroup`` write a group's broker-side settings (UPDATE_AND_CREATE_
SUBSCRIPTIONGROUP, DELETE_SUBSCRIPTIONGROUP) on one broker or on every master of a cluster;
``getConsumerConfig`` reads them back from each broker group (GET_ALL_SUBSCRIPTIONGROUP_CONFIG: brokers have
no request for one group in 4.x); ``brokerConsumeStats`` is one broker's progress of every group
(GET_BROKER_CONSUME_STATS); ``cloneGroupOffset`` copies committed offsets client-side, as mqadmin 4.9 does
(GET_CONSUME_STATS of the source, UPDATE_CONSUMER_OFFSET for the destination).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from admin.brokers import require_broker_version
from admin.cluster import cluster_brokers, cluster_info, preferred_addr, route_brokers, topic_route
from admin.consumers import _commit, _consume_stats, _group_brokers
from admin.errors import AdminError
from admin.rpc import AdminRpc, check
from admin.topics import delete_topic
from consumer.allocate import sorted_queues, strategy_named
from rocketmq_wire import features
from rocketmq_wire.bodies import (
    ConsumeStatsList,
    MessageQueue,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
    TopicRouteData,
)
from rocketmq_wire.bodies.pop import (
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    SetMessageRequestModeRequestBody,
)
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.admin import DeleteSubscriptionGroupRequestHeader, GetConsumeStatsInBrokerHeader
from rocketmq_wire.perm import PERM_READ
from rocketmq_wire.topics import dlq_topic, retry_topic, validate_group

logger = logging.getLogger("admin.groups")


@dataclasses.dataclass(frozen=True, slots=True)
class GroupConfigOnBroker:
    """A group's settings as one broker group holds them (a row of mqadmin ``getConsumerConfig``)."""

    cluster: str
    broker_name: str
    broker_addr: str
    config: SubscriptionGroupConfig


@dataclasses.dataclass(frozen=True, slots=True)
class GroupDeleted:
    """Where a group's settings were deleted, and which of its retry/DLQ topics went with them."""

    group: str
    brokers: tuple[str, ...]
    topics_deleted: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetCloned:
    """One queue whose committed offset was copied from the source group to the destination group."""

    topic: str
    broker_name: str
    queue_id: int
    offset: int


def _checked_group(group: str) -> str:
    refusal = validate_group(group)
    if refusal is not None:
        raise AdminError(f"invalid group name {group!r}: {refusal}")
    return group


async def _targets(rpc: AdminRpc, cluster: str | None, broker_addr: str | None, what: str) -> list[str]:
    """The one broker named, or every master of the cluster (what mqadmin's ``-b`` / ``-c`` mean)."""
    if (cluster is None) == (broker_addr is None):
        raise AdminError(f"name either a cluster or a broker address to {what}")
    if broker_addr is not None:
        return [broker_addr]
    masters = await cluster_brokers(rpc, cluster, masters_only=True)
    if not masters:
        raise AdminError(f"cluster {cluster!r} has no master broker to {what}")
    return [b.addr for b in masters]


async def update_subscription_group(
    rpc: AdminRpc,
    config: SubscriptionGroupConfig,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
) -> list[str]:
    """Create or update the group's settings; returns the broker addresses written."""
    _checked_group(config.group_name)
    targets = await _targets(rpc, cluster, broker_addr, "update the group on")
    body = config.to_json()
    for addr in targets:
        request = RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, body=body)
        check(await rpc.server(addr, request), f"updating group {config.group_name!r}", addr)
    return targets


async def delete_subscription_group(
    rpc: AdminRpc,
    group: str,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
    remove_offset: bool = False,
) -> GroupDeleted:
    """Delete the group's settings (and its offsets with ``remove_offset``).

    On a whole cluster mqadmin also deletes the group's retry and DLQ topics; so does this (a topic that
    is not there is no failure).
    """
    _checked_group(group)
    targets = await _targets(rpc, cluster, broker_addr, "delete the group from")
    header = DeleteSubscriptionGroupRequestHeader(group_name=group, remove_offset=remove_offset)
    for addr in targets:
        request = RemotingCommand.request(RequestCode.DELETE_SUBSCRIPTIONGROUP, header)
        check(await rpc.server(addr, request), f"deleting group {group!r}", addr)
    removed: list[str] = []
    if cluster is not None:
        for topic in (retry_topic(group), dlq_topic(group)):
            try:
                await delete_topic(rpc, topic, cluster=cluster)
                removed.append(topic)
            except AdminError as exc:
                logger.warning("could not delete %s after deleting group %s: %s", topic, group, exc)
    return GroupDeleted(group, tuple(targets), tuple(removed))


async def all_subscription_groups(rpc: AdminRpc, broker_addr: str) -> SubscriptionGroupWrapper:
    """Every group one broker has settings for (GET_ALL_SUBSCRIPTIONGROUP_CONFIG)."""
    request = RemotingCommand.request(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG)
    response = check(await rpc.server(broker_addr, request), "subscription groups", broker_addr)
    try:
        return SubscriptionGroupWrapper.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable subscription groups from {broker_addr}: {exc}") from exc


async def subscription_group_configs(rpc: AdminRpc, group: str) -> list[GroupConfigOnBroker]:
    """The group's settings on every broker group that has them (master, else a slave, is asked)."""
    info = await cluster_info(rpc)
    found: list[GroupConfigOnBroker] = []
    for name in sorted(info.broker_addr_table):
        data = info.broker_addr_table[name]
        addr = preferred_addr(data)
        if addr is None:
            continue
        table = (await all_subscription_groups(rpc, addr)).subscription_group_table
        config = table.get(group)
        if config is not None:
            found.append(GroupConfigOnBroker(data.cluster or "", name, addr, config))
    return found


async def broker_consume_stats(
    rpc: AdminRpc, broker_addr: str, *, order_only: bool = False
) -> ConsumeStatsList:
    """Progress of every subscription group on one broker, with the summed lag."""
    header = GetConsumeStatsInBrokerHeader(is_order=order_only)
    request = RemotingCommand.request(RequestCode.GET_BROKER_CONSUME_STATS, header)
    response = check(await rpc.server(broker_addr, request), "broker consume stats", broker_addr)
    try:
        return ConsumeStatsList.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable broker consume stats from {broker_addr}: {exc}") from exc


async def clone_group_offset(
    rpc: AdminRpc, src_group: str, dest_group: str, topic: str
) -> list[OffsetCloned]:
    """Give ``dest_group`` the committed offsets ``src_group`` has on ``topic``, queue by queue.

    mqadmin 4.9 reads the source's progress and writes each offset with UPDATE_CONSUMER_OFFSET rather
    than asking the broker (CLONE_GROUP_OFFSET), so the copy also works across broker versions.
    """
    _checked_group(src_group)
    _checked_group(dest_group)
    addrs = dict(route_brokers(await topic_route(rpc, topic)))
    cloned: list[OffsetCloned] = []
    for name, addr in await _group_brokers(rpc, src_group, topic):
        stats = await _consume_stats(rpc, addr, src_group, topic)
        for queue, wrapper in stats.offset_table.items():
            if queue.topic != topic or wrapper.consumer_offset < 0:
                continue
            broker_name = queue.broker_name or name
            target = addrs.get(broker_name, addr)
            await _commit(rpc, target, dest_group, topic, queue.queue_id, wrapper.consumer_offset)
            cloned.append(OffsetCloned(topic, broker_name, queue.queue_id, wrapper.consumer_offset))
    cloned.sort(key=lambda c: (c.broker_name, c.queue_id))
    return cloned


def readable_queues(route: TopicRouteData, topic: str) -> list[MessageQueue]:
    """The queues a consumer of ``topic`` rebalances over: every read queue of every readable broker."""
    queues: list[MessageQueue] = []
    for data in route.queue_datas:
        if data.perm & PERM_READ:
            queues.extend(
                MessageQueue(topic=topic, broker_name=data.broker_name or "", queue_id=i)
                for i in range(data.read_queue_nums)
            )
    return sorted_queues(queues)


async def allocate_queues(
    rpc: AdminRpc, topic: str, client_ids: Sequence[str], strategy: str = "averagely"
) -> dict[str, list[MessageQueue]]:
    """Which queues of ``topic`` each client would get from a rebalance (mqadmin ``allocateMQ``).

    Worked out here with the consumer's own strategies; nothing is asked of the brokers but the route.
    """
    ids = [c.strip() for c in client_ids if c.strip()]
    if not ids:
        raise AdminError("name at least one client id (ip) to allocate queues to")
    try:
        allocate = strategy_named(strategy)
    except ValueError as exc:
        raise AdminError(str(exc)) from None
    queues = readable_queues(await topic_route(rpc, topic), topic)
    return {client: allocate("allocateMQ", client, queues, ids) for client in ids}


async def set_consume_mode(
    rpc: AdminRpc,
    topic: str,
    group: str,
    mode: MessageRequestMode,
    *,
    pop_share_queue_num: int = 0,
    cluster: str | None = None,
    broker_addr: str | None = None,
) -> list[str]:
    """Tell brokers how the group's 5.x push consumers read ``topic`` (mqadmin ``setConsumeMode``): PULL
    from queues of their own, or POP from queues every member shares. Returns the broker addresses written.

    Java's consumers learn it from the broker's answer to their QUERY_ASSIGNMENT at each rebalance, so a
    change reaches running members within a rebalance interval. A 4.x broker has no such setting and is
    refused first.
    """
    _checked_group(group)
    if pop_share_queue_num < 0:
        raise AdminError("pop_share_queue_num must not be negative")
    targets = await _targets(rpc, cluster, broker_addr, "set the consume mode on")
    body = SetMessageRequestModeRequestBody(
        topic=topic, consumer_group=group, mode=mode, pop_share_queue_num=pop_share_queue_num
    ).to_json()
    for addr in targets:
        await require_broker_version(rpc, addr, features.POP_CONSUMPTION, "a consume mode")
    for addr in targets:
        request = RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, body=body)
        check(await rpc.server(addr, request), f"setting the consume mode of group {group!r}", addr)
    return targets


async def consume_modes(
    rpc: AdminRpc, broker_addr: str
) -> dict[str, dict[str, SetMessageRequestModeRequestBody]]:
    """Every consume mode one broker holds, topic -> group -> setting (GET_ALL_MESSAGE_REQUEST_MODE)."""
    await require_broker_version(rpc, broker_addr, features.POP_CONSUMPTION, "a consume mode")
    request = RemotingCommand.request(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE)
    response = check(await rpc.server(broker_addr, request), "reading consume modes", broker_addr)
    try:
        wrapper = MessageRequestModeSerializeWrapper.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable consume modes from {broker_addr}: {exc}") from exc
    return wrapper.message_request_mode_map
