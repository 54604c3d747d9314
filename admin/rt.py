"""Send round trips measured from this client, what mqadmin ``checkMsgSendRT``, ``clusterRT`` and
``sendMsgStatus`` do: they send real messages with an ordinary producer and time each send.

The producer group is named after the current time, as mqadmin names it, so that it never collides with a
real group. As in mqadmin, the average leaves the first send out (it pays for the route and connection).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence

from admin.cluster import cluster_info
from admin.errors import AdminError
from admin.rpc import AdminRpc
from producer import Message, MessageQueue, Producer, ProducerError

logger = logging.getLogger("admin.rt")


@dataclasses.dataclass(frozen=True, slots=True)
class SendTiming:
    """One timed send: where it went, whether it succeeded, how long it took."""

    broker_name: str
    queue_id: int
    ok: bool
    rt_ms: float
    msg_id: str | None = None
    error: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class SendRtReport:
    topic: str
    sends: tuple[SendTiming, ...]

    @property
    def avg_rt_ms(self) -> float:
        """Mean round trip without the first send (mqadmin's ``Avg RT``); 0 with fewer than two sends."""
        later = [s.rt_ms for s in self.sends[1:]]
        return sum(later) / len(later) if later else 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRt:
    """One broker's line of mqadmin ``clusterRT``: sends to the topic named after the broker."""

    cluster: str
    broker_name: str
    avg_rt_ms: float
    success: int
    failed: int


@dataclasses.dataclass(frozen=True, slots=True)
class SendCredentials:
    """What the timing producer needs to reach and sign for the cluster the admin client talks to."""

    namesrv: Sequence[str]
    access_key: str | None = None
    secret_key: str | None = None
    timeout_ms: float = 3000


def body_of_size(size: int) -> bytes:
    """A body of ``size`` bytes (mqadmin repeats ``a``)."""
    if size <= 0:
        raise AdminError("the message size must be positive")
    return b"a" * size


def _producer(credentials: SendCredentials) -> Producer:
    return Producer(
        str(time.time_ns() // 1_000_000),
        list(credentials.namesrv),
        access_key=credentials.access_key,
        secret_key=credentials.secret_key,
        send_timeout_ms=credentials.timeout_ms,
    )


async def _timed(producer: Producer, message: Message, queue: MessageQueue | None) -> SendTiming:
    start = time.perf_counter()
    try:
        result = await producer.send(message, queue=queue)
    except ProducerError as exc:
        rt = (time.perf_counter() - start) * 1000
        where = queue or MessageQueue(topic=message.topic, broker_name="", queue_id=-1)
        return SendTiming(where.broker_name, where.queue_id, False, rt, error=str(exc))
    rt = (time.perf_counter() - start) * 1000
    sent_to = result.message_queue
    return SendTiming(sent_to.broker_name, sent_to.queue_id, True, rt, msg_id=result.msg_id)


async def check_send_rt(
    credentials: SendCredentials, topic: str, amount: int = 100, size: int = 128
) -> SendRtReport:
    """Send ``amount`` messages of ``size`` bytes to the topic's queues in turn, timing each."""
    if amount <= 0:
        raise AdminError("send at least one message")
    body = body_of_size(size)
    async with _producer(credentials) as producer:
        try:
            queues = await producer.fetch_publish_queues(topic)
        except ProducerError as exc:
            raise AdminError(f"no queues to send to for topic {topic!r}: {exc}") from exc
        if not queues:
            raise AdminError(f"topic {topic!r} has no writable queue")
        sends = [await _timed(producer, Message(topic, body), queues[i % len(queues)]) for i in range(amount)]
    return SendRtReport(topic, tuple(sends))


async def send_status(
    credentials: SendCredentials, broker_name: str, count: int = 1, size: int = 128
) -> SendRtReport:
    """``count`` timed sends to the topic named after the broker (mqadmin ``sendMsgStatus``)."""
    if count <= 0:
        raise AdminError("send at least one message")
    body = body_of_size(size)
    async with _producer(credentials) as producer:
        sends = [await _timed(producer, Message(broker_name, body), None) for _ in range(count)]
    return SendRtReport(broker_name, tuple(sends))


async def cluster_rt(
    rpc: AdminRpc,
    credentials: SendCredentials,
    cluster: str | None = None,
    amount: int = 100,
    size: int = 128,
) -> list[BrokerRt]:
    """Per broker of ``cluster`` (of every cluster), ``amount`` timed sends to its own topic."""
    if amount <= 0:
        raise AdminError("send at least one message")
    info = await cluster_info(rpc)
    if cluster is not None and cluster not in info.cluster_addr_table:
        raise AdminError(f"cluster [{cluster}] not exist")
    names = [cluster] if cluster is not None else sorted(info.cluster_addr_table)
    body = body_of_size(size)
    rows: list[BrokerRt] = []
    async with _producer(credentials) as producer:
        for name in names:
            for broker_name in sorted(info.cluster_addr_table[name]):
                sends = [await _timed(producer, Message(broker_name, body), None) for _ in range(amount)]
                report = SendRtReport(broker_name, tuple(sends))
                ok = sum(1 for s in sends if s.ok)
                rows.append(BrokerRt(name, broker_name, report.avg_rt_ms, ok, len(sends) - ok))
    return rows
