"""Topic administration: create or update on brokers, delete everywhere, per-queue status.

Topics live on brokers; NameServers learn of them when brokers register. So creating writes to brokers
(each broker then registers the change), while deleting must clear both: the brokers first, so none
registers the topic again, then the NameServers' routes -- the order mqadmin uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from admin.brokers import require_broker_version
from admin.cluster import cluster_brokers, kv_put, preferred_addr, topic_route
from admin.errors import AdminError, TopicNotFoundError
from admin.models import QueueOffsets, TopicDeleted, TopicStatus
from admin.rpc import AdminRpc, check
from rocketmq_wire import fastjson, features, topic_attributes
from rocketmq_wire.bodies import TopicStatsTable
from rocketmq_wire.bodies.base import Fields
from rocketmq_wire.bodies.topic_config import (
    TopicConfig,
    TopicConfigAndQueueMapping,
    read_topic_config_wrapper,
)
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.namesrv import DeleteTopicFromNamesrvRequestHeader
from rocketmq_wire.headers.topic import (
    TOPIC_FILTER_TYPES,
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
)
from rocketmq_wire.perm import PERM_READ, PERM_WRITE
from rocketmq_wire.topics import (
    AUTO_CREATE_TOPIC,
    ORDER_TOPIC_CONFIG,
    is_dlq_topic,
    is_retry_topic,
    is_system_topic,
    validate_topic,
)

#: mqadmin ``updateTopic`` defaults.
DEFAULT_QUEUE_NUMS = 8
DEFAULT_PERM = PERM_READ | PERM_WRITE


def _checked_topic(topic: str) -> str:
    refusal = validate_topic(topic)
    if refusal is not None:
        raise AdminError(f"invalid topic name {topic!r}: {refusal[1]}")
    return topic


async def create_topic(
    rpc: AdminRpc,
    topic: str,
    *,
    cluster: str | None = None,
    broker_addr: str | None = None,
    read_queue_nums: int = DEFAULT_QUEUE_NUMS,
    write_queue_nums: int = DEFAULT_QUEUE_NUMS,
    perm: int = DEFAULT_PERM,
    order: bool = False,
    topic_sys_flag: int = 0,
    attributes: Mapping[str, str] | None = None,
    remove_attributes: Sequence[str] = (),
) -> list[str]:
    """Create or update ``topic`` on every master of ``cluster``, or on the one broker ``broker_addr``.

    Returns the broker addresses written. An ordered topic created on a cluster also gets its queue layout
    in the NameServers' ``ORDER_TOPIC_CONFIG`` namespace, as mqadmin does, so producers keep its order.
    ``attributes`` (``{"message.type": "FIFO"}``) and ``remove_attributes`` change the topic's 5.x
    attributes (:mod:`rocketmq_wire.topic_attributes`); every broker is asked its release first, since a 4.x
    broker would create the topic and drop them.
    """
    _checked_topic(topic)
    try:
        mods = topic_attributes.modification(attributes or {}, remove_attributes)
    except CodecError as exc:
        raise AdminError(str(exc)) from None
    if (cluster is None) == (broker_addr is None):
        raise AdminError("name either a cluster or a broker address to create the topic on")
    if read_queue_nums <= 0 or write_queue_nums <= 0:
        raise AdminError("a topic needs at least one read and one write queue")
    header = CreateTopicRequestHeader(
        topic=topic,
        default_topic=AUTO_CREATE_TOPIC,
        read_queue_nums=read_queue_nums,
        write_queue_nums=write_queue_nums,
        perm=perm,
        topic_filter_type=TOPIC_FILTER_TYPES[0],
        topic_sys_flag=topic_sys_flag,
        order=order,
        attributes=topic_attributes.format_modification(mods) if mods else None,
    )
    if broker_addr is not None:
        targets: list[tuple[str, str | None]] = [(broker_addr, None)]
    else:
        masters = await cluster_brokers(rpc, cluster, masters_only=True)
        if not masters:
            raise AdminError(f"cluster {cluster!r} has no master broker to create the topic on")
        targets = [(b.addr, b.broker_name) for b in masters]
    if mods:
        for addr, _ in targets:
            await require_broker_version(rpc, addr, features.TOPIC_ATTRIBUTES, "setting topic attributes")
    for addr, _ in targets:
        response = await rpc.server(
            addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        )
        check(response, f"creating topic {topic!r}", addr)
    if order and cluster is not None:
        layout = ";".join(
            f"{name}:{write_queue_nums}" for _, name in sorted(targets, key=lambda t: t[1] or "")
        )
        await kv_put(rpc, ORDER_TOPIC_CONFIG, topic, layout)
    return [addr for addr, _ in targets]


async def user_topics(rpc: AdminRpc, broker_addr: str, *, special: bool = False) -> dict[str, TopicConfig]:
    """The broker's topics without system topics (and without retry/DLQ topics unless ``special``)."""
    response = await rpc.server(broker_addr, RemotingCommand.request(RequestCode.GET_ALL_TOPIC_CONFIG))
    check(response, "topic configs", broker_addr)
    try:
        wrapper = read_topic_config_wrapper(
            Fields(fastjson.loads(response.body), "TopicConfigSerializeWrapper")
        )
    except CodecError as exc:
        raise AdminError(f"unreadable topic configs from {broker_addr}: {exc}") from exc
    return {
        name: config
        for name, config in wrapper.topic_config_table.items()
        if not is_system_topic(name) and (special or not (is_retry_topic(name) or is_dlq_topic(name)))
    }


async def topic_config(rpc: AdminRpc, topic: str, broker_addr: str) -> TopicConfig:
    """One broker's config of ``topic``, attributes included (GET_TOPIC_CONFIG, 5.x); a 4.x broker, which
    lacks that request, is read through its whole table (GET_ALL_TOPIC_CONFIG)."""
    _checked_topic(topic)
    request = RemotingCommand.request(RequestCode.GET_TOPIC_CONFIG, GetTopicConfigRequestHeader(topic=topic))
    response = await rpc.server(broker_addr, request)
    if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        found = (await user_topics(rpc, broker_addr, special=True)).get(topic)
        if found is None:
            raise TopicNotFoundError(topic)
        return found
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        raise TopicNotFoundError(topic)
    check(response, f"config of topic {topic!r}", broker_addr)
    try:
        return TopicConfigAndQueueMapping.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable config of topic {topic!r} from {broker_addr}: {exc}") from exc


async def delete_topic(rpc: AdminRpc, topic: str, *, cluster: str | None = None) -> TopicDeleted:
    """Delete ``topic`` from every broker (masters and slaves) of ``cluster`` -- of every cluster when
    ``None`` -- and then from every NameServer."""
    _checked_topic(topic)
    brokers = await cluster_brokers(rpc, cluster)
    header = DeleteTopicRequestHeader(topic=topic)
    for broker in brokers:
        response = await rpc.server(
            broker.addr, RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_BROKER, header)
        )
        check(response, f"deleting topic {topic!r}", broker.addr)
    namesrv_header = DeleteTopicFromNamesrvRequestHeader(topic=topic, cluster_name=cluster)
    answers = await rpc.every_namesrv(
        lambda: RemotingCommand.request(RequestCode.DELETE_TOPIC_IN_NAMESRV, namesrv_header)
    )
    for addr, answer in answers:
        if isinstance(answer, Exception):
            raise answer
        check(answer, f"deleting topic {topic!r}", addr)
    return TopicDeleted(topic, tuple(b.addr for b in brokers), tuple(addr for addr, _ in answers))


async def topic_status(rpc: AdminRpc, topic: str) -> TopicStatus:
    """Min/max offset and last store time of every queue, from each broker of the topic's route."""
    route = await topic_route(rpc, topic)
    rows: list[QueueOffsets] = []
    put_tps: float | None = None
    for data in route.broker_datas:
        addr = preferred_addr(data)
        if addr is None:
            continue
        request = RemotingCommand.request(
            RequestCode.GET_TOPIC_STATS_INFO, GetTopicStatsInfoRequestHeader(topic=topic)
        )
        response = await rpc.server(addr, request)
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            continue  # the route is older than the broker's tables; the topic is gone there
        check(response, f"status of topic {topic!r}", addr)
        try:
            table = TopicStatsTable.from_json(response.body)
        except CodecError as exc:
            raise AdminError(f"unreadable topic stats from {addr}: {exc}") from exc
        for queue, offsets in table.offset_table.items():
            rows.append(
                QueueOffsets(
                    broker_name=queue.broker_name or data.broker_name or "",
                    queue_id=queue.queue_id,
                    min_offset=offsets.min_offset,
                    max_offset=offsets.max_offset,
                    last_updated_ms=offsets.last_update_timestamp,
                )
            )
        if table.topic_put_tps is not None:
            put_tps = (put_tps or 0.0) + table.topic_put_tps
    if not rows and not route.broker_datas:
        raise TopicNotFoundError(topic)
    rows.sort(key=lambda r: (r.broker_name, r.queue_id))
    return TopicStatus(topic, tuple(rows), put_tps)


async def update_topic_perm(
    rpc: AdminRpc, topic: str, perm: int, *, cluster: str | None = None, broker_addr: str | None = None
) -> list[str]:
    """Change the topic's permission on one broker or every master of a cluster, keeping its queues.

    As mqadmin ``updateTopicPerm``: the queue counts and system flag come from the route, and a broker
    whose permission is already ``perm`` is left alone. Returns the addresses written.
    """
    _checked_topic(topic)
    if perm not in (PERM_READ, PERM_WRITE, PERM_READ | PERM_WRITE):
        raise AdminError(f"perm must be 2 (write), 4 (read) or 6 (read and write), not {perm}")
    if (cluster is None) == (broker_addr is None):
        raise AdminError("name either a cluster or a broker address to change the topic's perm on")
    route = await topic_route(rpc, topic)
    queues = {q.broker_name: q for q in route.queue_datas}
    names = {addr: data.broker_name for data in route.broker_datas for addr in data.broker_addrs.values()}
    if broker_addr is not None:
        targets = [broker_addr]
    else:
        targets = [b.addr for b in await cluster_brokers(rpc, cluster, masters_only=True)]
    written: list[str] = []
    for addr in targets:
        queue = queues.get(names.get(addr))
        if queue is None:
            if broker_addr is not None:
                raise AdminError(f"topic {topic!r} has no queues on broker {addr}")
            continue
        if queue.perm == perm:
            continue
        header = CreateTopicRequestHeader(
            topic=topic,
            default_topic=AUTO_CREATE_TOPIC,
            read_queue_nums=queue.read_queue_nums,
            write_queue_nums=queue.write_queue_nums,
            perm=perm,
            topic_filter_type=TOPIC_FILTER_TYPES[0],
            topic_sys_flag=queue.topic_sys_flag or 0,
            order=False,
        )
        response = await rpc.server(
            addr, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        )
        check(response, f"changing perm of topic {topic!r}", addr)
        written.append(addr)
    return written
