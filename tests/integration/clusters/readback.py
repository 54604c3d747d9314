"""Reading every message of a topic back, two independent ways.

:func:`read_topic` uses the project's :class:`consumer.PullConsumer` (every queue assigned, each from its
first offset), as an application would. :func:`read_topic_raw` sends plain PULL_MESSAGE requests built from
``rocketmq_wire`` headers and decodes the bodies with :func:`~rocketmq_wire.message.decode_messages`: it
shares no code with the consumer, so a scenario comparing the two catches a bug that producer and consumer
of one project could otherwise cancel out. Both return messages ordered by queue, then queue offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from ssl import SSLContext

from consumer import ConsumeFromWhere, ConsumerConfig, ConsumerError, MessageQueue, PullConsumer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.message import MessageExt, decode_messages, sysflag
from rocketmq_wire.transport import RemotingClient
from tests.integration.clusters.model import unique_name
from tests.integration.clusters.probe import topic_route

PULL_TIMEOUT_MS = 5000
#: How long to wait between rounds when fewer messages than expected are there yet (e.g. delayed ones).
ROUND_PAUSE_S = 0.1


class ReadBackError(AssertionError):
    """Fewer messages arrived than expected before the deadline, or a pull failed outright."""


def _queues(route: TopicRouteData) -> list[tuple[str, str, int]]:
    """(broker name, master address, queue id) of every readable queue."""
    masters = {data.broker_name: data.master_addr() for data in route.broker_datas}
    queues = []
    for queue_data in route.queue_datas:
        addr = masters.get(queue_data.broker_name)
        if addr and queue_data.broker_name:
            queues += [(queue_data.broker_name, addr, qid) for qid in range(queue_data.read_queue_nums or 0)]
    return queues


async def pull_once(
    client: RemotingClient,
    addr: str,
    group: str,
    topic: str,
    queue_id: int,
    offset: int,
    expression: str = "*",
) -> tuple[list[MessageExt], int]:
    """One PULL_MESSAGE: the messages found (possibly none) and the offset to pull from next."""
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue_id,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=sysflag.build_pull_sys_flag(subscription=True),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=expression,
        sub_version=0,
        expression_type="TAG",
    )
    response = await client.invoke(
        addr, RemotingCommand.request(RequestCode.PULL_MESSAGE, header), PULL_TIMEOUT_MS
    )
    if response.code == ResponseCode.SUCCESS:
        found = response.read_header(PullMessageResponseHeader)
        return decode_messages(response.body), int(found.next_begin_offset or offset)
    if response.code in (ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY):
        return [], offset
    if response.code == ResponseCode.PULL_OFFSET_MOVED:
        moved = response.read_header(PullMessageResponseHeader)
        return [], int(moved.next_begin_offset or offset)
    raise ReadBackError(
        f"PULL_MESSAGE {topic}/{queue_id}@{offset} from {addr}: {response.code} {response.remark}"
    )


def _ordered(messages: list[MessageExt]) -> list[MessageExt]:
    return sorted(messages, key=lambda m: (m.queue_id, m.queue_offset))


async def read_topic(
    namesrv: str,
    topic: str,
    expected: int,
    *,
    group: str | None = None,
    timeout_s: float = 15.0,
    ssl: SSLContext | None = None,
) -> list[MessageExt]:
    """Every message of ``topic`` through a :class:`~consumer.PullConsumer` (over TLS with ``ssl``), once at
    least ``expected`` have arrived (polling until ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    found: list[MessageExt] = []
    consumer = PullConsumer(
        group or unique_name("readback"),
        namesrv,
        consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        auto_commit=False,
        config=ConsumerConfig(ssl=ssl),
    )
    async with consumer:
        queues: list[MessageQueue] = []
        while not queues:
            try:
                queues = await consumer.fetch_message_queues(topic)
            except ConsumerError as exc:  # the broker has not registered the new topic yet
                if time.monotonic() >= deadline:
                    raise ReadBackError(f"no route to {topic} within {timeout_s:.0f} s: {exc}") from exc
                await asyncio.sleep(ROUND_PAUSE_S)
        consumer.assign(queues)
        for queue in queues:
            await consumer.seek_to_begin(queue)
        while len(found) < expected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ReadBackError(
                    f"{len(found)} of {expected} messages of {topic} arrived within {timeout_s:.0f} s "
                    f"(queues {sorted((q.broker_name, q.queue_id) for q in queues)})"
                )
            found += await consumer.poll(timeout=min(remaining, 1.0))
            # A topic created by its first sends may reach a second broker's route later: read that too.
            with contextlib.suppress(ConsumerError):
                latest = await consumer.fetch_message_queues(topic)
                added = [q for q in latest if q not in queues]
                if added:
                    queues = [*queues, *added]
                    consumer.assign(queues)
                    for queue in added:
                        await consumer.seek_to_begin(queue)
    return _ordered(found)


async def read_topic_raw(
    namesrv: str, topic: str, expected: int, *, group: str | None = None, timeout_s: float = 15.0
) -> list[MessageExt]:
    """Every message of ``topic`` by plain PULL_MESSAGE requests, once at least ``expected`` have arrived.

    The route comes from the NameServer; each readable queue is pulled from offset 0 with the subscription
    in the request (brokers build it from there when the subscription flag is set: no heartbeat needed).
    """
    group = group or f"readback-{topic}"[:120]
    deadline = time.monotonic() + timeout_s
    offsets: dict[tuple[str, int], int] = {}
    found: dict[tuple[str, int], list[MessageExt]] = {}
    async with RemotingClient() as client:
        while True:
            route = await topic_route(client, namesrv, topic)
            for broker_name, addr, queue_id in _queues(route) if route else []:
                key = (broker_name, queue_id)
                while True:
                    offset = offsets.get(key, 0)
                    batch, next_offset = await pull_once(client, addr, group, topic, queue_id, offset)
                    offsets[key] = next_offset
                    found.setdefault(key, []).extend(batch)
                    if not batch and next_offset == offset:  # moved past deleted messages: read on
                        break
            count = sum(len(messages) for messages in found.values())
            if count >= expected:
                return _ordered([message for messages in found.values() for message in messages])
            if time.monotonic() >= deadline:
                raise ReadBackError(
                    f"{count} of {expected} messages of {topic} arrived within {timeout_s:.0f} s "
                    f"(route: {'none' if route is None else _queues(route)})"
                )
            await asyncio.sleep(ROUND_PAUSE_S)
