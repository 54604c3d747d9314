"""Reading a topic queue by queue: its route, each queue's offset bounds, and pulls of an offset range.

This is the little the source needs from a consumer, kept in one module so that it can be swapped for the
project's pull consumer: no rebalancing, no subscription, no committed offsets -- Spark decides which
ranges are read and keeps its own progress. Requests go through the producer's RPC layer, which applies
the header serialization, version and ACL signing, and routes come from the producer's NameServer client
(with its failover); the bytes are parsed only by ``rocketmq_wire``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import AsyncGenerator, Iterable
from types import TracebackType

from producer.config import ProducerConfig
from producer.errors import ProducerError
from producer.namesrv import NameServerClient
from producer.rpc import ProducerRpc
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.offset import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
)
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.message import MessageExt, decode_messages
from rocketmq_wire.message.sysflag import build_pull_sys_flag
from rocketmq_wire.perm import is_readable
from rocketmq_wire.topics import wrap_namespace
from rocketmq_wire.transport import RemotingClient, RemotingError
from spark_connector.errors import SourceReadError
from spark_connector.offsets import QueueKey
from spark_connector.options import ConnectionOptions

logger = logging.getLogger("spark_connector.pull")


@dataclasses.dataclass(frozen=True, order=True)
class QueueAddress:
    """A readable queue of the topic and the broker (master) that serves it."""

    broker_name: str
    queue_id: int
    broker_addr: str

    @property
    def key(self) -> QueueKey:
        return (self.broker_name, self.queue_id)


class TopicReader:
    """Metadata requests and pulls for one topic over one connection pool; ``async with`` closes it."""

    def __init__(self, connection: ConnectionOptions, topic: str, *, timeout_ms: float = 10_000) -> None:
        config = ProducerConfig(
            namespace=connection.namespace,
            access_key=connection.access_key,
            secret_key=connection.secret_key,
        )
        self.topic = topic
        self.wire_topic = wrap_namespace(connection.namespace, topic)
        self.timeout_ms = timeout_ms
        self._client = RemotingClient()
        self._rpc = ProducerRpc(self._client, config)
        self._namesrv = NameServerClient(self._rpc, list(connection.namesrv), timeout_ms, random.Random())

    async def __aenter__(self) -> TopicReader:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._client.close()

    async def queues(self) -> list[QueueAddress]:
        """Every readable queue of the topic, sorted by broker name then queue id."""
        try:
            route = await self._namesrv.get_route(self.wire_topic)
        except ProducerError as exc:
            raise SourceReadError(f"could not get the route of topic {self.wire_topic!r}: {exc}") from exc
        if route is None:
            raise SourceReadError(
                f"topic {self.wire_topic!r} does not exist (no NameServer has a route for it)"
            )
        addresses = {}
        for broker in route.broker_datas:
            addr = broker.master_addr() or next(iter(broker.broker_addrs.values()), None)
            if broker.broker_name and addr:
                addresses[broker.broker_name] = addr
        result: list[QueueAddress] = []
        for data in route.queue_datas:
            name = data.broker_name
            if name is None or name not in addresses or not is_readable(data.perm):
                continue
            result.extend(
                QueueAddress(name, queue_id, addresses[name]) for queue_id in range(data.read_queue_nums)
            )
        return sorted(result)

    async def _offset_response(
        self, queue: QueueAddress, code: int, header: CommandHeader
    ) -> RemotingCommand:
        response = await self._invoke(queue, RemotingCommand.request(code, header))
        if response.code != ResponseCode.SUCCESS:
            raise SourceReadError(
                f"broker {queue.broker_name} ({queue.broker_addr}) refused the offset of queue "
                f"{queue.queue_id}: code {response.code} {response.remark or ''}".rstrip()
            )
        return response

    async def min_offset(self, queue: QueueAddress) -> int:
        """The first offset the broker still stores for ``queue``."""
        header = GetMinOffsetRequestHeader(topic=self.wire_topic, queue_id=queue.queue_id)
        response = await self._offset_response(queue, RequestCode.GET_MIN_OFFSET, header)
        return int(response.read_header(GetMinOffsetResponseHeader).offset or 0)

    async def max_offset(self, queue: QueueAddress) -> int:
        """The offset the next message stored in ``queue`` will get."""
        header = GetMaxOffsetRequestHeader(topic=self.wire_topic, queue_id=queue.queue_id)
        response = await self._offset_response(queue, RequestCode.GET_MAX_OFFSET, header)
        return int(response.read_header(GetMaxOffsetResponseHeader).offset or 0)

    async def bounds(self, queues: Iterable[QueueAddress]) -> tuple[dict[QueueKey, int], dict[QueueKey, int]]:
        """The first offset still stored and the offset the next message will get, per queue."""
        listed = list(queues)
        lows = await asyncio.gather(*(self.min_offset(q) for q in listed))
        highs = await asyncio.gather(*(self.max_offset(q) for q in listed))
        return (
            {q.key: low for q, low in zip(listed, lows, strict=True)},
            {q.key: high for q, high in zip(listed, highs, strict=True)},
        )

    async def pull_range(
        self, queue: QueueAddress, start: int, end: int, *, group: str, batch_size: int = 32
    ) -> AsyncGenerator[list[MessageExt], None]:
        """The messages at offsets ``start`` (inclusive) to ``end`` (exclusive), one list per pull.

        Offsets the broker no longer has are skipped with a warning (retention deleted them), as is the end
        of the range when the queue turns out to hold fewer messages than ``end`` promised.
        """
        offset = start
        flag = build_pull_sys_flag(subscription=True)
        while offset < end:
            header = PullMessageRequestHeader(
                consumer_group=group,
                topic=self.wire_topic,
                queue_id=queue.queue_id,
                queue_offset=offset,
                max_msg_nums=min(batch_size, end - offset),
                sys_flag=flag,
                commit_offset=0,
                suspend_timeout_millis=0,
                subscription="*",
                sub_version=0,
                expression_type="TAG",
            )
            response = await self._invoke(queue, RemotingCommand.request(RequestCode.PULL_MESSAGE, header))
            code = response.code
            if code not in (
                ResponseCode.SUCCESS,
                ResponseCode.PULL_NOT_FOUND,
                ResponseCode.PULL_RETRY_IMMEDIATELY,
                ResponseCode.PULL_OFFSET_MOVED,
            ):
                raise SourceReadError(
                    f"broker {queue.broker_name} refused to pull queue {queue.queue_id} at offset {offset}: "
                    f"code {code} {response.remark or ''}".rstrip()
                )
            answer = response.read_header(PullMessageResponseHeader)
            next_offset = int(answer.next_begin_offset if answer.next_begin_offset is not None else offset)
            if code == ResponseCode.SUCCESS:
                try:
                    messages = decode_messages(response.body)
                except CodecError as exc:
                    raise SourceReadError(
                        f"broker {queue.broker_name} sent unreadable messages for queue {queue.queue_id} "
                        f"at offset {offset}: {exc}"
                    ) from exc
                wanted = [m for m in messages if offset <= m.queue_offset < end]
                if wanted:
                    yield wanted
                if messages:
                    next_offset = max(next_offset, messages[-1].queue_offset + 1)
            elif code == ResponseCode.PULL_NOT_FOUND and next_offset <= offset:
                logger.warning(
                    "%s queue %d has no message at offset %d, short of %d; ending the range early",
                    queue.broker_name,
                    queue.queue_id,
                    offset,
                    end,
                )
                return
            elif code == ResponseCode.PULL_OFFSET_MOVED:
                logger.warning(
                    "%s queue %d: offset %d is no longer stored, continuing at %d",
                    queue.broker_name,
                    queue.queue_id,
                    offset,
                    next_offset,
                )
            if next_offset <= offset:
                raise SourceReadError(
                    f"broker {queue.broker_name} made no progress pulling queue {queue.queue_id} at offset "
                    f"{offset} (code {code}, next offset {next_offset})"
                )
            offset = next_offset

    async def _invoke(self, queue: QueueAddress, command: RemotingCommand) -> RemotingCommand:
        try:
            return await self._rpc.invoke(queue.broker_addr, command, self.timeout_ms)
        except RemotingError as exc:
            raise SourceReadError(
                f"broker {queue.broker_name} at {queue.broker_addr} did not answer: {exc}"
            ) from exc
