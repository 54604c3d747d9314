"""Finding stored messages: by offset message id, by key or unique key through the brokers' index, and
reading a queue directly with a pull.

An offset id names the broker that stored the message and the commit-log offset, so it is one request to
that broker. A key says nothing of where, so a key query asks every broker of the topic's route and merges
what they find; each broker's index may also hold other keys hashing alike, so the answers are filtered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from admin.cluster import preferred_addr, topic_route
from admin.consumers import _offset_at
from admin.errors import AdminError, MessageNotFoundError, RequestRefusedError, UnreachableError
from admin.models import PullResult, PullStatus
from admin.rpc import AdminRpc, check
from admin.topics import topic_status
from rocketmq_wire.bodies import QueryConsumeQueueResponseBody
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import JAVA_LONG_MAX as LONG_MAX
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.headers.query import (
    UNIQUE_KEY_QUERY,
    QueryConsumeQueueRequestHeader,
    QueryMessageRequestHeader,
    ViewMessageRequestHeader,
)
from rocketmq_wire.message import MessageExt, decode_messages, decode_offset_msg_id
from rocketmq_wire.message.sysflag import build_pull_sys_flag
from rocketmq_wire.topics import TOOLS_CONSUMER_GROUP, TRACE_TOPIC
from rocketmq_wire.trace import TraceContext, TraceType, decode_trace_data, encode_trace_context

#: mqadmin's ``maxNum`` for a key query and for a unique-key query.
KEY_QUERY_MAX_NUM = 64
UNIQUE_KEY_QUERY_MAX_NUM = 32

_PULL_STATUS: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


def _decode(body: bytes, addr: str) -> list[MessageExt]:
    try:
        return decode_messages(body)
    except CodecError as exc:
        raise AdminError(f"unreadable messages from {addr}: {exc}") from exc


async def view_message(rpc: AdminRpc, offset_msg_id: str, topic: str | None = None) -> MessageExt:
    """The message an offset id (a send result's ``offset_msg_id``) points at, from the broker that
    stored it."""
    try:
        where = decode_offset_msg_id(offset_msg_id)
    except CodecError as exc:
        raise AdminError(f"{offset_msg_id!r} is not an offset message id: {exc}") from exc
    header = ViewMessageRequestHeader(topic=topic, offset=where.offset)
    response = await rpc.server(
        where.address, RemotingCommand.request(RequestCode.VIEW_MESSAGE_BY_ID, header)
    )
    if response.code != ResponseCode.SUCCESS:
        raise MessageNotFoundError(
            f"broker {where.address} has no message at commit-log offset {where.offset}"
            + (f": {response.remark}" if response.remark else "")
        )
    messages = _decode(response.body, where.address)
    if not messages:
        raise MessageNotFoundError(f"broker {where.address} sent no message for offset {where.offset}")
    return messages[0]


async def query_messages(
    rpc: AdminRpc,
    topic: str,
    key: str,
    *,
    unique: bool = False,
    max_num: int | None = None,
    begin_ms: int = 0,
    end_ms: int = LONG_MAX,
) -> list[MessageExt]:
    """Messages of ``topic`` whose KEYS include ``key`` (or, with ``unique``, whose unique id is ``key``)
    stored between ``begin_ms`` and ``end_ms``, from every broker of the route, oldest first."""
    route = await topic_route(rpc, topic)
    if max_num is None:
        max_num = UNIQUE_KEY_QUERY_MAX_NUM if unique else KEY_QUERY_MAX_NUM
    header = QueryMessageRequestHeader(
        topic=topic, key=key, max_num=max_num, begin_timestamp=begin_ms, end_timestamp=end_ms
    )
    found: list[MessageExt] = []
    for data in route.broker_datas:
        addr = preferred_addr(data)
        if addr is None:
            continue
        request = RemotingCommand.request(
            RequestCode.QUERY_MESSAGE, header, ext_fields={UNIQUE_KEY_QUERY: "true" if unique else "false"}
        )
        response = await rpc.server(addr, request)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            continue
        check(response, f"query of key {key!r}", addr)
        for message in _decode(response.body, addr):
            if (message.unique_id == key) if unique else (key in message.keys):
                found.append(message)
    found.sort(key=lambda m: (m.store_timestamp, m.store_host, m.commit_log_offset))
    return found


_TRACE_ORDER = {
    TraceType.PUB: 0,
    TraceType.END_TRANSACTION: 1,
    TraceType.SUB_BEFORE: 2,
    TraceType.SUB_AFTER: 3,
}


async def query_trace(rpc: AdminRpc, msg_id: str, trace_topic: str = TRACE_TOPIC) -> list[TraceContext]:
    """The trace records of message ``msg_id`` (its unique id) in ``trace_topic``, found by key, as Java's
    client and this project write them (``rocketmq_wire.trace``); oldest first."""
    found: list[TraceContext] = []
    seen: set[str] = set()
    for message in await query_messages(rpc, trace_topic, msg_id):
        for ctx in decode_trace_data(message.body.decode("utf-8", errors="replace")):
            if not ctx.beans or ctx.beans[0].msg_id != msg_id:
                continue
            identity = encode_trace_context(ctx)
            if identity in seen:
                continue
            seen.add(identity)
            found.append(ctx)
    found.sort(key=lambda ctx: (ctx.timestamp, _TRACE_ORDER[ctx.trace_type]))
    return found


async def get_message(rpc: AdminRpc, msg_id: str, topic: str | None = None) -> MessageExt:
    """A message by either kind of id.

    With a topic, the id is first looked up as a unique id (the ``msgId`` producers report) and then as an
    offset id; without one it can only be an offset id. (Both kinds are 32 hex digits for IPv4 hosts, so
    the text alone does not say which it is.)
    """
    if topic is not None:
        matches = await query_messages(rpc, topic, msg_id, unique=True)
        if matches:
            return matches[0]
    try:
        decode_offset_msg_id(msg_id)
    except CodecError:
        where = f" in topic {topic!r}" if topic is not None else " (pass the topic to look up a unique id)"
        raise MessageNotFoundError(f"no message with id {msg_id}{where}") from None
    try:
        return await view_message(rpc, msg_id, topic)
    except (UnreachableError, RequestRefusedError) as exc:
        raise MessageNotFoundError(f"no message with id {msg_id}: {exc}") from exc


async def pull(
    rpc: AdminRpc,
    topic: str,
    queue_id: int,
    offset: int,
    *,
    broker_name: str | None = None,
    max_nums: int = 32,
    group: str = TOOLS_CONSUMER_GROUP,
    expression: str = "*",
) -> PullResult:
    """Read up to ``max_nums`` messages of one queue from ``offset`` (PULL_MESSAGE without holding the
    request: an empty queue answers at once). Nothing is committed for ``group``."""
    route = await topic_route(rpc, topic)
    datas = [d for d in route.broker_datas if broker_name is None or d.broker_name == broker_name]
    if not datas:
        raise AdminError(f"topic {topic!r} has no queues on broker {broker_name!r}")
    if len(datas) > 1:
        names = ", ".join(sorted(d.broker_name or "" for d in datas))
        raise AdminError(f"topic {topic!r} is on several brokers ({names}): name the broker")
    addr = preferred_addr(datas[0])
    if addr is None:
        raise AdminError(f"broker {datas[0].broker_name!r} has no address in the route")
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=max_nums,
        sys_flag=build_pull_sys_flag(subscription=True),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=expression,
        sub_version=0,
        expression_type="TAG",
    )
    response = await rpc.server(addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header))
    status = _PULL_STATUS.get(response.code)
    if status is None:
        check(response, f"pull from {topic}:{queue_id}", addr)
        raise AdminError(f"unexpected pull answer {response.code} from {addr}")
    try:
        answer = response.read_header(PullMessageResponseHeader)
    except CodecError as exc:
        raise AdminError(f"unreadable pull answer from {addr}: {exc}") from exc
    messages = _decode(response.body, addr) if status is PullStatus.FOUND else []
    return PullResult(
        status=status,
        next_begin_offset=int(answer.next_begin_offset or 0),
        min_offset=int(answer.min_offset or 0),
        max_offset=int(answer.max_offset or 0),
        messages=tuple(messages),
    )


async def message_at(
    rpc: AdminRpc, topic: str, queue_id: int, offset: int, *, broker_name: str | None = None
) -> MessageExt:
    """The message stored at ``offset`` of one queue (mqadmin ``queryMsgByOffset``: a pull of one)."""
    result = await pull(rpc, topic, queue_id, offset, broker_name=broker_name, max_nums=1)
    for message in result.messages:
        if message.queue_offset == offset:
            return message
    raise MessageNotFoundError(
        f"no message at offset {offset} of {topic}:{queue_id} (queue holds {result.min_offset}.."
        f"{result.max_offset - 1}; pull said {result.status.value})"
    )


async def messages_in_range(
    rpc: AdminRpc,
    topic: str,
    queue_id: int,
    begin: int,
    end: int | None = None,
    *,
    broker_name: str | None = None,
    batch: int = 32,
    expression: str = "*",
) -> list[MessageExt]:
    """Messages of one queue with ``begin <= offset < end`` (to the queue's end when ``end`` is None),
    pulled batch by batch without committing anything (mqadmin ``printMsgByQueue``/``consumeMessage``)."""
    found: list[MessageExt] = []
    offset = begin
    while end is None or offset < end:
        wanted = batch if end is None else max(1, min(batch, end - offset))
        result = await pull(
            rpc, topic, queue_id, offset, broker_name=broker_name, max_nums=wanted, expression=expression
        )
        found.extend(m for m in result.messages if end is None or m.queue_offset < end)
        if result.status is PullStatus.OFFSET_ILLEGAL and offset < result.min_offset:
            offset = result.min_offset  # the start was already deleted: go on from the first kept one
            continue
        if result.next_begin_offset <= offset or result.status is PullStatus.NO_NEW_MSG:
            break
        offset = result.next_begin_offset
    return found


async def consume_messages(
    rpc: AdminRpc,
    topic: str,
    *,
    broker_name: str | None = None,
    queue_id: int | None = None,
    offset: int | None = None,
    begin_ms: int | None = None,
    end_ms: int | None = None,
    count: int = 128,
    on_queue: Callable[[int, int], None] | None = None,
) -> list[MessageExt]:
    """Read up to ``count`` messages without committing anything (mqadmin ``consumeMessage``).

    With ``broker_name``, ``queue_id`` and ``offset``: that queue from that offset. Otherwise every queue
    of the topic (or of the broker/queue named), from the first message stored at ``begin_ms`` (the
    queue's start when None) to the last stored before ``end_ms`` (its end). ``on_queue(done, total)``
    reports progress queue by queue.
    """
    if count <= 0:
        raise AdminError("read at least one message")
    if offset is not None and (broker_name is None or queue_id is None):
        raise AdminError("an offset needs the broker name and the queue id")
    status = await topic_status(rpc, topic)
    route = await topic_route(rpc, topic)
    addrs = {d.broker_name: preferred_addr(d) for d in route.broker_datas}
    queues = [
        q
        for q in status.queues
        if (broker_name is None or q.broker_name == broker_name)
        and (queue_id is None or q.queue_id == queue_id)
    ]
    if not queues:
        raise AdminError(f"topic {topic!r} has no such queue ({broker_name or '*'}:{queue_id or '*'})")
    found: list[MessageExt] = []
    for done, queue in enumerate(queues, 1):
        addr = addrs.get(queue.broker_name)
        if len(found) >= count or addr is None:
            break
        if offset is not None:
            begin: int = offset
        elif begin_ms is not None:
            begin = await _offset_at(rpc, addr, topic, queue.queue_id, begin_ms)
        else:
            begin = queue.min_offset
        end = queue.max_offset
        if end_ms is not None:
            end = min(end, await _offset_at(rpc, addr, topic, queue.queue_id, end_ms))
        end = min(end, begin + count - len(found))
        if end > begin:
            found.extend(
                await messages_in_range(rpc, topic, queue.queue_id, begin, end, broker_name=queue.broker_name)
            )
        if on_queue is not None:
            on_queue(done, len(queues))
    return found[:count]


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumeQueueAnswer:
    """A broker's answer to QUERY_CONSUME_QUEUE: its remark (set when the index is past the end) and
    the entries (``None`` then)."""

    broker_addr: str
    remark: str | None
    body: QueryConsumeQueueResponseBody | None


async def query_consume_queue(
    rpc: AdminRpc,
    topic: str,
    queue_id: int,
    *,
    index: int = 0,
    count: int = 10,
    group: str | None = None,
    broker_addr: str | None = None,
) -> list[ConsumeQueueAnswer]:
    """Raw consume-queue entries of one queue from each broker of the topic (or from ``broker_addr``),
    as mqadmin ``queryCq`` asks for them."""
    if broker_addr is not None:
        addrs = [broker_addr]
    else:
        route = await topic_route(rpc, topic)
        addrs = [a for a in (preferred_addr(d) for d in route.broker_datas) if a is not None]
    header = QueryConsumeQueueRequestHeader(
        topic=topic, queue_id=queue_id, index=index, count=count, consumer_group=group
    )
    answers: list[ConsumeQueueAnswer] = []
    for addr in addrs:
        response = await rpc.server(addr, RemotingCommand.request(RequestCode.QUERY_CONSUME_QUEUE, header))
        check(response, f"consume queue {queue_id}@{topic}", addr)
        body = None
        if response.body:
            try:
                body = QueryConsumeQueueResponseBody.from_json(response.body)
            except CodecError as exc:
                raise AdminError(f"unreadable consume queue from {addr}: {exc}") from exc
        answers.append(ConsumeQueueAnswer(addr, response.remark, body))
    return answers
