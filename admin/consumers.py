"""Consumer and producer groups: progress, connections, and moving a group's offsets.

Which brokers know a consumer group? mqadmin asks the route of the group's retry topic (every broker a
member ever pulled from has one). A group that never came online has no retry topic, so this falls back to
the topic in question and then to every master, rather than failing the way mqadmin 4.9 does.
"""

from __future__ import annotations

import logging

from admin.cluster import cluster_brokers, route_brokers, topic_route
from admin.errors import AdminError, ConsumerNotOnlineError, OffsetResetPendingError
from admin.models import (
    ClientConnection,
    ConsumerConnections,
    ConsumerProgress,
    OffsetReset,
    QueueProgress,
    ResetMethod,
)
from admin.rpc import AdminRpc, check
from rocketmq_wire.bodies import (
    ConsumerConnection,
    ConsumerRunningInfo,
    ConsumeStats,
    ProducerConnection,
    ProducerTableInfo,
    ResetOffsetBody,
    TopicStatsTable,
)
from rocketmq_wire.bodies.consumer import Connection
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.admin import GetAllProducerInfoRequestHeader
from rocketmq_wire.headers.consumer import (
    GetConsumerConnectionListRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
)
from rocketmq_wire.headers.offset import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_wire.headers.topic import GetTopicStatsInfoRequestHeader
from rocketmq_wire.topics import retry_topic

logger = logging.getLogger("admin.consumers")

#: A reset to this "timestamp" moves the group to the end of each queue (mqadmin's ``-t now`` is -1).
RESET_TO_LATEST = -1
#: The remark of a 5.2+ broker's success answer to an offset commit it dropped (a reset is pending).
IGNORED_AFTER_RESET = "Offset has been previously reset"


async def _group_brokers(rpc: AdminRpc, group: str, topic: str | None) -> list[tuple[str, str]]:
    """(broker name, address) of the brokers to ask about ``group``."""
    for candidate in (retry_topic(group), topic):
        if candidate is None:
            continue
        route = await rpc.route(candidate)
        if route is not None and route.broker_datas:
            return route_brokers(route)
    return [(b.broker_name, b.addr) for b in await cluster_brokers(rpc, masters_only=True)]


async def _consume_stats(rpc: AdminRpc, addr: str, group: str, topic: str | None) -> ConsumeStats:
    header = GetConsumeStatsRequestHeader(consumer_group=group, topic=topic)
    response = await rpc.server(addr, RemotingCommand.request(RequestCode.GET_CONSUME_STATS, header))
    check(response, f"consume stats of group {group!r}", addr)
    try:
        return ConsumeStats.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable consume stats from {addr}: {exc}") from exc


async def consumer_progress(rpc: AdminRpc, group: str, topic: str | None = None) -> ConsumerProgress:
    """Broker offset, committed offset and lag of every queue the group has progress on (of ``topic``
    only, when given), with the totals."""
    rows: list[QueueProgress] = []
    tps = 0.0
    for _name, addr in await _group_brokers(rpc, group, topic):
        stats = await _consume_stats(rpc, addr, group, topic)
        tps += stats.consume_tps
        for queue, wrapper in stats.offset_table.items():
            rows.append(
                QueueProgress(
                    topic=queue.topic or "",
                    broker_name=queue.broker_name or _name,
                    queue_id=queue.queue_id,
                    broker_offset=wrapper.broker_offset,
                    consumer_offset=wrapper.consumer_offset,
                    last_timestamp_ms=wrapper.last_timestamp,
                    lag=wrapper.broker_offset - wrapper.consumer_offset,
                )
            )
    if not rows:
        raise ConsumerNotOnlineError(
            f"no consume progress for group {group!r}: it has no offsets on any broker (never consumed?)"
        )
    rows.sort(key=lambda r: (r.topic, r.broker_name, r.queue_id))
    return ConsumerProgress(group, tuple(rows), tps, sum(r.lag for r in rows))


def _client(connection: Connection) -> ClientConnection:
    return ClientConnection(
        client_id=connection.client_id or "",
        client_addr=connection.client_addr or "",
        language=connection.language or "",
        version=connection.version,
    )


async def _connections_at(rpc: AdminRpc, addr: str, group: str) -> ConsumerConnection | None:
    """The group's members connected to one broker; ``None`` when it has none there."""
    header = GetConsumerConnectionListRequestHeader(consumer_group=group)
    response = await rpc.server(
        addr, RemotingCommand.request(RequestCode.GET_CONSUMER_CONNECTION_LIST, header)
    )
    if response.code == ResponseCode.CONSUMER_NOT_ONLINE:
        return None
    check(response, f"connections of group {group!r}", addr)
    try:
        body = ConsumerConnection.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable consumer connections from {addr}: {exc}") from exc
    return body if body.connection_set else None


async def consumer_connections(rpc: AdminRpc, group: str) -> ConsumerConnections:
    """The group's live members as the first broker that knows them reports them."""
    for _name, addr in await _group_brokers(rpc, group, None):
        body = await _connections_at(rpc, addr, group)
        if body is None:
            continue
        return ConsumerConnections(
            group=group,
            broker_addr=addr,
            connections=tuple(_client(c) for c in body.connection_set),
            subscriptions={topic: data.sub_string or "*" for topic, data in body.subscription_table.items()},
            consume_type=body.consume_type,
            message_model=body.message_model,
            consume_from_where=body.consume_from_where,
        )
    raise ConsumerNotOnlineError(f"consumer group {group!r} is not online on any broker")


#: Java's admin waits three times its usual timeout: the broker relays the question and waits for the client.
RUNNING_INFO_TIMEOUT_FACTOR = 3


def _not_connected_there(response: RemotingCommand) -> bool:
    """A broker's "The Consumer <group> <client> not online": the client is connected to another broker."""
    return response.code == ResponseCode.SYSTEM_ERROR and "not online" in (response.remark or "")


async def consumer_running_info(
    rpc: AdminRpc, group: str, client_id: str, *, jstack: bool = False
) -> ConsumerRunningInfo:
    """What one member of ``group`` (by client id) says about itself: settings, subscriptions, held queues,
    per-topic figures, and its thread dump with ``jstack`` (mqadmin ``consumerStatus``).

    The request goes to a broker of the group, which relays it to the client; a broker the client is not
    connected to says so, and the next one is asked.
    """
    for _name, addr in await _group_brokers(rpc, group, None):
        header = GetConsumerRunningInfoRequestHeader(
            consumer_group=group, client_id=client_id, jstack_enable=jstack
        )
        response = await rpc.server(
            addr,
            RemotingCommand.request(RequestCode.GET_CONSUMER_RUNNING_INFO, header),
            rpc.timeout_ms * RUNNING_INFO_TIMEOUT_FACTOR,
        )
        if _not_connected_there(response):
            logger.info("consumer %s of group %s is not connected to %s", client_id, group, addr)
            continue
        check(response, f"running info of consumer {client_id!r} in group {group!r}", addr)
        try:
            return ConsumerRunningInfo.from_json(response.body)
        except CodecError as exc:
            raise AdminError(f"unreadable running info relayed by {addr}: {exc}") from exc
    raise ConsumerNotOnlineError(f"consumer {client_id!r} of group {group!r} is not online on any broker")


async def producer_connections(rpc: AdminRpc, group: str, topic: str) -> list[ClientConnection]:
    """Live connections of a producer group, from the brokers of a topic it sends to (deduplicated)."""
    seen: dict[str, ClientConnection] = {}
    for _name, addr in route_brokers(await topic_route(rpc, topic)):
        header = GetProducerConnectionListRequestHeader(producer_group=group)
        response = await rpc.server(
            addr, RemotingCommand.request(RequestCode.GET_PRODUCER_CONNECTION_LIST, header)
        )
        check(response, f"connections of producer group {group!r}", addr)
        try:
            body = ProducerConnection.from_json(response.body)
        except CodecError as exc:
            raise AdminError(f"unreadable producer connections from {addr}: {exc}") from exc
        for connection in body.connection_set:
            client = _client(connection)
            seen.setdefault(client.client_id, client)
    if not seen:
        raise AdminError(f"producer group {group!r} is not online on the brokers of topic {topic!r}")
    return list(seen.values())


async def producer_table(rpc: AdminRpc, broker_addr: str) -> ProducerTableInfo:
    """Every producer group connected to one broker, with its producers (mqadmin ``producer``).

    Unlike :func:`producer_connections` this needs no group or topic: it is how an operator finds out
    which producers a broker has at all. Clients list their inner ``CLIENT_INNER_PRODUCER`` group too.
    """
    request = RemotingCommand.request(RequestCode.GET_ALL_PRODUCER_INFO, GetAllProducerInfoRequestHeader())
    response = check(await rpc.server(broker_addr, request), "producer table", broker_addr)
    try:
        return ProducerTableInfo.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable producer table from {broker_addr}: {exc}") from exc


def _broker_of(route: TopicRouteData, topic: str, broker_name: str | None) -> tuple[str, str]:
    brokers = route_brokers(route)
    if broker_name is None:
        if len(brokers) != 1:
            names = ", ".join(name for name, _ in brokers)
            raise AdminError(f"topic {topic!r} is on several brokers ({names}): name the broker")
        return brokers[0]
    for name, addr in brokers:
        if name == broker_name:
            return name, addr
    raise AdminError(f"topic {topic!r} has no queues on broker {broker_name!r}")


async def update_consumer_offset(
    rpc: AdminRpc, group: str, topic: str, queue_id: int, offset: int, *, broker_name: str | None = None
) -> str:
    """Commit ``offset`` for the group on one queue (the broker may be left out when the topic has only
    one); returns the broker address written."""
    _name, addr = _broker_of(await topic_route(rpc, topic), topic, broker_name)
    await _commit(rpc, addr, group, topic, queue_id, offset)
    return addr


async def _commit(rpc: AdminRpc, addr: str, group: str, topic: str, queue_id: int, offset: int) -> None:
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group, topic=topic, queue_id=queue_id, commit_offset=offset
    )
    response = await rpc.server(addr, RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header))
    check(response, f"offset update of group {group!r}", addr)
    if response.remark == IGNORED_AFTER_RESET:
        raise OffsetResetPendingError(group, topic, queue_id, addr)


async def _offset_at(rpc: AdminRpc, addr: str, topic: str, queue_id: int, timestamp_ms: int) -> int:
    if timestamp_ms == RESET_TO_LATEST:
        header_max = GetMaxOffsetRequestHeader(topic=topic, queue_id=queue_id)
        response = await rpc.server(addr, RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header_max))
        check(response, f"max offset of {topic}:{queue_id}", addr)
        return int(response.read_header(GetMaxOffsetResponseHeader).offset or 0)
    header = SearchOffsetRequestHeader(topic=topic, queue_id=queue_id, timestamp=timestamp_ms)
    response = await rpc.server(addr, RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header))
    check(response, f"offset search in {topic}:{queue_id}", addr)
    return int(response.read_header(SearchOffsetResponseHeader).offset or 0)


async def _current_offsets(
    rpc: AdminRpc, addr: str, broker_name: str, group: str, topic: str, read_queue_nums: int
) -> dict[int, int]:
    """queue id -> committed offset; a group without any starts from each queue's minimum, as in Java."""
    stats = await _consume_stats(rpc, addr, group, topic)
    current = {q.queue_id: w.consumer_offset for q, w in stats.offset_table.items() if q.topic == topic}
    if current:
        return current
    request = RemotingCommand.request(
        RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic=topic)
    )
    response = await rpc.server(addr, request)
    check(response, f"status of topic {topic!r}", addr)
    try:
        table = TopicStatsTable.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable topic stats from {addr}: {exc}") from exc
    minimum = {
        q.queue_id: o.min_offset for q, o in table.offset_table.items() if q.broker_name == broker_name
    }
    return {queue_id: minimum.get(queue_id, 0) for queue_id in range(read_queue_nums)}


async def _reset_directly(
    rpc: AdminRpc,
    addr: str,
    broker_name: str,
    group: str,
    topic: str,
    read_queue_nums: int,
    timestamp_ms: int,
    force: bool,
) -> list[OffsetReset]:
    rows: list[OffsetReset] = []
    current = await _current_offsets(rpc, addr, broker_name, group, topic, read_queue_nums)
    for queue_id, previous in sorted(current.items()):
        target = await _offset_at(rpc, addr, topic, queue_id, timestamp_ms)
        new = previous
        if force or target <= previous:
            await _commit(rpc, addr, group, topic, queue_id, target)
            new = target
        rows.append(OffsetReset(topic, broker_name, queue_id, previous, new, ResetMethod.DIRECT))
    return rows


async def _offline_and_never_committed(
    rpc: AdminRpc, addr: str, group: str, response: RemotingCommand
) -> bool:
    """A broker refuses to reset a group that has no committed offset on one of the topic's queues (``THe
    consumer group <g> not exist``) before it looks for members. mqadmin stops there; when no member is
    connected, writing the offsets directly is safe and is what the operator asked for. With members online
    the refusal stands: they would overwrite offsets written behind their back."""
    if response.code != ResponseCode.SYSTEM_ERROR or not (response.remark or "").endswith("> not exist"):
        return False
    return await _connections_at(rpc, addr, group) is None


async def reset_offset_by_time(
    rpc: AdminRpc, group: str, topic: str, timestamp_ms: int, *, force: bool = True
) -> list[OffsetReset]:
    """Move the group's offsets on ``topic`` to the first message stored at or after ``timestamp_ms``
    (``RESET_TO_LATEST``: to the end). Without ``force`` an offset only ever moves back.

    Each broker is first asked to do it (INVOKE_BROKER_TO_RESET_OFFSET), which also tells online members
    to drop what they hold; when the group is offline there, or the broker does not know the request, the
    offsets are looked up and written directly -- mqadmin's ``resetOffsetByTime`` behaviour. Unlike mqadmin,
    an offline group that never committed on some queue is reset directly too, instead of failing.
    """
    route = await topic_route(rpc, topic)
    read_queues = {q.broker_name: q.read_queue_nums for q in route.queue_datas}
    rows: list[OffsetReset] = []
    for name, addr in route_brokers(route):
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp_ms, is_force=force)
        response = await rpc.server(
            addr, RemotingCommand.request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header)
        )
        if response.code in (
            ResponseCode.CONSUMER_NOT_ONLINE,
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        ) or await _offline_and_never_committed(rpc, addr, group, response):
            logger.info(
                "broker %s cannot reset group %s itself (code %d): writing offsets",
                addr,
                group,
                response.code,
            )
            rows.extend(
                await _reset_directly(
                    rpc, addr, name, group, topic, read_queues.get(name, 0), timestamp_ms, force
                )
            )
            continue
        check(response, f"offset reset of group {group!r}", addr)
        if not response.body:
            continue
        try:
            body = ResetOffsetBody.from_json(response.body)
        except CodecError as exc:
            raise AdminError(f"unreadable reset answer from {addr}: {exc}") from exc
        for queue, offset in sorted(body.offset_table.items(), key=lambda item: item[0].queue_id):
            rows.append(
                OffsetReset(
                    topic, queue.broker_name or name, queue.queue_id, None, offset, ResetMethod.BROKER
                )
            )
    return rows
