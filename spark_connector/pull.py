"""Reading a topic queue by queue: its route, each queue's offset bounds, and pulls of an offset range.

The source needs bounded reads -- exactly the offsets Spark planned, no prefetching past them, no group
membership, no committed offsets -- so it does not run a consumer; it uses the consumer package's
request builders, broker calls, pull-answer handling and filters (``consumer.commands``,
``consumer.broker_api``, ``consumer.fetch``, ``consumer.filters``) directly. With a tag or SQL92 filter
every pull carries it as a consumer's subscription does, and the broker returns only the matching
messages of the range (``NO_MATCHED_MSG`` moves the offset on past the others); for SQL92 the driver asks
the brokers first, as a consumer does when it starts.
Connections, routes (with NameServer fail-over) and request signing are the client core's: each reader
joins a client instance of its own (``client.instance.join_standalone``, as the admin does), on the event
loop it first reads on, and leaves it when closed.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncGenerator, Iterable
from types import TracebackType

from client.errors import ClientError
from client.instance import ClientInstance, Member, join_standalone
from client.settings import ClientSettings
from consumer import commands, filters
from consumer.broker_api import BrokerApi
from consumer.errors import ConsumerError, FilterRefusedError
from consumer.fetch import PullStatus, decode_found
from rocketmq_wire.bodies.heartbeat import SUB_ALL
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.bodies.topic_config import TopicList
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import DEFAULT_VERSION, RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import MessageExt
from rocketmq_wire.message.sysflag import build_pull_sys_flag
from rocketmq_wire.perm import is_readable
from rocketmq_wire.topics import without_namespace, wrap_namespace
from rocketmq_wire.transport import RemotingError
from spark_connector.errors import DataLossError, SourceReadError
from spark_connector.offsets import TopicQueue
from spark_connector.options import ConnectionOptions

logger = logging.getLogger("spark_connector.pull")

#: The reader's member name on its client instance (it registers no group with brokers).
READER_NAME = "spark_connector_reader"


@dataclasses.dataclass(frozen=True, order=True)
class QueueAddress:
    """A readable queue of the topic and the broker (master) that serves it."""

    broker_name: str
    queue_id: int
    broker_addr: str
    #: The topic as the query names it (without the namespace).
    topic: str = ""

    @property
    def key(self) -> TopicQueue:
        return (self.topic, self.broker_name, self.queue_id)


class TopicReader:
    """Metadata requests and pulls for one topic over one client instance; ``async with`` closes it.

    It may be made outside an event loop (a Spark task makes it, then runs its reads on a loop of its own):
    the instance is joined on first use. ``filter_sql`` / ``filter_tags``: pull only the messages this SQL92
    or tag expression selects (else every message).
    """

    def __init__(
        self,
        connection: ConnectionOptions,
        topic: str,
        *,
        timeout_ms: float = 10_000,
        filter_sql: str | None = None,
        filter_tags: str | None = None,
    ) -> None:
        self.topic = topic
        self.wire_topic = wrap_namespace(connection.namespace, topic)
        self.timeout_ms = timeout_ms
        self.namespace = connection.namespace
        self.subscription = (
            build_subscription(self.wire_topic, filter_tags or SUB_ALL)
            if filter_sql is None
            else filters.sql_subscription(self.wire_topic, filter_sql)
        )
        self._namesrv_addrs = list(connection.namesrv)
        self._settings = ClientSettings(
            access_key=connection.access_key,
            secret_key=connection.secret_key,
            ssl=connection.ssl_context(),
            request_timeout_ms=timeout_ms,
            namesrv_timeout_ms=timeout_ms,
        )
        self._joined: tuple[ClientInstance, Member] | None = None
        self._api_of_instance: BrokerApi | None = None

    def _instance(self) -> ClientInstance:
        if self._joined is None:
            self._joined = join_standalone(self._namesrv_addrs, self._settings, READER_NAME)
        return self._joined[0]

    @property
    def _api(self) -> BrokerApi:
        if self._api_of_instance is None:
            self._api_of_instance = BrokerApi(
                self._instance().rpc, timeout_ms=self.timeout_ms, version=DEFAULT_VERSION
            )
        return self._api_of_instance

    async def __aenter__(self) -> TopicReader:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        joined, self._joined = self._joined, None
        self._api_of_instance = None
        if joined is not None:
            instance, member = joined
            await instance.leave(member)

    async def _route(self) -> TopicRouteData:
        try:
            route = await self._instance().namesrv.get_route(self.wire_topic)
        except ClientError as exc:
            raise SourceReadError(f"could not get the route of topic {self.wire_topic!r}: {exc}") from exc
        if route is None:
            raise SourceReadError(
                f"topic {self.wire_topic!r} does not exist (no NameServer has a route for it)"
            )
        return route

    async def check_filter(self, group: str) -> None:
        """Ask each broker of the topic whether it serves the filter (CHECK_CLIENT_CONFIG, as a consumer does
        at start); a refusal is a :class:`SourceReadError` naming the option, the broker and its answer.
        Nothing is asked without a filter."""
        if not filters.needs_check(self.subscription):
            return
        route = await self._route()
        try:
            await filters.check_filter(
                self._api, route, self.subscription, group=group, client_id=self._instance().client_id
            )
        except FilterRefusedError as exc:
            raise SourceReadError(f"option 'filter.sql': {exc}") from exc

    async def topic_names(self) -> list[str]:
        """Every topic the NameServers know (GET_ALL_TOPIC_LIST_FROM_NAMESERVER), namespace removed; topics of
        other namespaces are left out."""
        request = RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER)
        try:
            response = await self._instance().namesrv.invoke(request)
        except (ClientError, RemotingError) as exc:
            raise SourceReadError(f"could not list the NameServers' topics: {exc}") from exc
        if response.code != ResponseCode.SUCCESS:
            raise SourceReadError(f"the NameServer refused the topic list: {response.code} {response.remark}")
        try:
            names = TopicList.from_json(response.body).topic_list
        except CodecError as exc:
            raise SourceReadError(f"the NameServer's topic list is unreadable: {exc}") from exc
        prefix = f"{self.namespace}%" if self.namespace else None
        if prefix is not None:
            return sorted(
                without_namespace(name, self.namespace) for name in names if name.startswith(prefix)
            )
        return sorted(name for name in names if "%" not in name)

    async def exists(self) -> bool:
        """Whether the NameServers route the topic (a deleted one has no route any more)."""
        try:
            return await self._instance().namesrv.get_route(self.wire_topic) is not None
        except ClientError as exc:
            raise SourceReadError(f"could not get the route of topic {self.wire_topic!r}: {exc}") from exc

    async def queues(self) -> list[QueueAddress]:
        """Every readable queue of the topic, sorted by broker name then queue id."""
        route = await self._route()
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
            addr = addresses[name]
            result.extend(
                QueueAddress(name, queue_id, addr, self.topic) for queue_id in range(data.read_queue_nums)
            )
        return sorted(result)

    def _wire_queue(self, queue: QueueAddress) -> MessageQueue:
        return MessageQueue(topic=self.wire_topic, broker_name=queue.broker_name, queue_id=queue.queue_id)

    async def min_offset(self, queue: QueueAddress) -> int:
        """The first offset the broker still stores for ``queue``."""
        try:
            return await self._api.min_offset(queue.broker_addr, self._wire_queue(queue))
        except (ConsumerError, RemotingError) as exc:
            raise self._failed(queue, "its first offset", exc) from exc

    async def max_offset(self, queue: QueueAddress) -> int:
        """The offset the next message stored in ``queue`` will get."""
        try:
            return await self._api.max_offset(queue.broker_addr, self._wire_queue(queue))
        except (ConsumerError, RemotingError) as exc:
            raise self._failed(queue, "its last offset", exc) from exc

    async def search_offset(self, queue: QueueAddress, timestamp_ms: int) -> int:
        """The offset of the first message of ``queue`` stored at or after ``timestamp_ms``
        (SEARCH_OFFSET_BY_TIMESTAMP)."""
        try:
            return await self._api.search_offset(queue.broker_addr, self._wire_queue(queue), timestamp_ms)
        except (ConsumerError, RemotingError) as exc:
            raise self._failed(queue, f"the offset at time {timestamp_ms}", exc) from exc

    async def bounds(
        self, queues: Iterable[QueueAddress]
    ) -> tuple[dict[TopicQueue, int], dict[TopicQueue, int]]:
        """The first offset still stored and the offset the next message will get, per queue."""
        listed = list(queues)
        lows = await asyncio.gather(*(self.min_offset(q) for q in listed))
        highs = await asyncio.gather(*(self.max_offset(q) for q in listed))
        return (
            {q.key: low for q, low in zip(listed, lows, strict=True)},
            {q.key: high for q, high in zip(listed, highs, strict=True)},
        )

    async def pull_range(
        self,
        queue: QueueAddress,
        start: int,
        end: int,
        *,
        group: str,
        batch_size: int = 32,
        fail_on_data_loss: bool = False,
    ) -> AsyncGenerator[list[MessageExt], None]:
        """The messages at offsets ``start`` (inclusive) to ``end`` (exclusive), one list per pull.

        Offsets the broker no longer has (retention deleted them since the range was planned) raise
        :class:`DataLossError` with ``fail_on_data_loss``, else they are skipped with a warning; the end of
        the range is skipped too when the queue turns out to hold fewer messages than ``end`` promised.
        """
        wire_queue = self._wire_queue(queue)
        offset = start
        while offset < end:
            spec = commands.PullSpec(
                group=group,
                max_nums=min(batch_size, end - offset),
                sys_flag=build_pull_sys_flag(subscription=True),
                commit_offset=0,
                suspend_timeout_ms=0,
                subscription=self.subscription.sub_string,
                sub_version=filters.pull_sub_version(self.subscription),
                expression_type=self.subscription.expression_type,
            )
            try:
                result = await self._api.pull(
                    queue.broker_addr, commands.pull_request(spec, wire_queue, offset), self.timeout_ms
                )
                messages = decode_found(result, None)
            except (ConsumerError, RemotingError) as exc:
                raise self._failed(queue, f"a pull at offset {offset}", exc) from exc
            next_offset = result.next_begin_offset
            if result.status is PullStatus.FOUND:
                wanted = [m for m in messages if offset <= m.queue_offset < end]
                if wanted:
                    yield wanted
                if messages:
                    next_offset = max(next_offset, messages[-1].queue_offset + 1)
            elif result.status is PullStatus.NO_NEW_MSG and next_offset <= offset:
                logger.warning(
                    "%s queue %d has no message at offset %d, short of %d; ending the range early",
                    queue.broker_name,
                    queue.queue_id,
                    offset,
                    end,
                )
                return
            elif result.status is PullStatus.OFFSET_ILLEGAL:
                if fail_on_data_loss:
                    raise DataLossError(
                        self.topic, queue.broker_name, queue.queue_id, offset, next_offset, during="read"
                    )
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
                    f"{offset} ({result.status.value}, next offset {next_offset})"
                )
            offset = next_offset

    def _failed(self, queue: QueueAddress, what: str, exc: Exception) -> SourceReadError:
        return SourceReadError(
            f"broker {queue.broker_name} ({queue.broker_addr}) could not serve {what} of queue "
            f"{queue.queue_id} of topic {self.wire_topic!r}: {exc}"
        )
