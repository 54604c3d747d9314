"""Helpers for exercising a broker: over the wire (a broker on a temporary store and a thin client), or
in-process (:func:`open_parts`: the parts a broker's handlers take, with no server at all).

Used by this project's tests and handy for trying a broker by hand. :class:`BrokerClient` builds requests
the way Java clients build them (V2 send headers, pull sys flags, heartbeat bodies) but stays a thin layer
over :class:`~rocketmq_wire.transport.RemotingClient`: every call returns the raw response command.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from broker.broker import Broker
from broker.clients import ClientChannel, ConsumerManager, ProducerManager
from broker.clock import Clock, ManualClock
from broker.config import BrokerConfig
from broker.flow_control import SendFlowControl
from broker.ha.service import HighAvailability
from broker.ha.sync import SlaveSynchronizer
from broker.locks import RebalanceLockManager
from broker.long_polling import PullRequestHoldService
from broker.message_service import MessageService
from broker.parts import BrokerParts, Clients, Metadata, Services, Storage
from broker.pop.request_modes import MessageRequestModeManager
from broker.pop.service import PopService
from broker.registration import ChangeAnnouncer
from broker.schedule import ScheduleMessageService
from broker.sql92 import ExpressionCompiler
from broker.stats import BrokerStats
from broker.store import ConsumerOffsetStore, MessageStore, TopicConfigStore
from broker.subscription_groups import SubscriptionGroupManager
from broker.timer import build_timer
from broker.topic_config_manager import TopicConfigManager
from broker.transaction import TransactionalMessageService
from rocketmq_wire import RemotingCommand, RequestCode
from rocketmq_wire.bodies.heartbeat import ConsumerData, HeartbeatData, ProducerData, SubscriptionData
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.pull import PullMessageRequestHeader
from rocketmq_wire.headers.send import SendMessageRequestHeader, SendMessageRequestHeaderV2
from rocketmq_wire.headers.topic import CreateTopicRequestHeader
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.batch import BatchEntry, encode_batch
from rocketmq_wire.message.ids import UniqueIdGenerator
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.transport import Connection, Handler, RemotingClient


def config_for_tests(store: Path, **overrides: Any) -> BrokerConfig:
    """A config for a broker on loopback, any free port, small store files."""
    settings: dict[str, Any] = {
        "listen_host": "127.0.0.1",
        "listen_port": 0,
        "store_path_root_dir": str(store),
        "mapped_file_size_commit_log": 4 * 1024 * 1024,
        "mapped_file_size_consume_queue": 1000 * 20,
        # Apache's 200 ms lets a loaded 2-core CI machine shed sends as busy, and a oneway send shed so is
        # simply lost (as on Apache's broker): tests that are not about flow control must not depend on
        # the machine's load. Flow-control tests set their own value.
        "wait_time_mills_in_send_queue": 1000,
    }
    settings.update(overrides)
    return BrokerConfig(**settings)


@contextlib.asynccontextmanager
async def running_broker(
    store: Path, *, clock: Clock | None = None, **overrides: Any
) -> AsyncIterator[Broker]:
    broker = Broker(config_for_tests(store, **overrides), clock=clock)
    await broker.start()
    try:
        yield broker
    finally:
        await broker.close()


class UnreachableClients:
    """A :class:`~broker.clients.ClientChannel` for parts that must not reach clients: a call fails."""

    async def invoke(self, conn: Connection, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        raise AssertionError(f"request {cmd.code} sent to a client; give open_parts a channel")

    async def invoke_oneway(self, conn: Connection, cmd: RemotingCommand) -> None:
        raise AssertionError(f"oneway {cmd.code} sent to a client; give open_parts a channel")


async def _nothing_to_register() -> None:
    """What the parts' announcer "registers" with: there are no NameServers in-process."""


async def _no_producer_to_ask(*_: object) -> bool:
    """Transaction check-backs in-process: no producer can be asked."""
    return False


@contextlib.asynccontextmanager
async def open_parts(
    store: Path,
    *,
    clock: Clock | None = None,
    channel: ClientChannel | None = None,
    **overrides: Any,
) -> AsyncIterator[BrokerParts]:
    """A broker's running parts on a store under ``store``, without a broker: for driving handlers directly.

    The store is opened and started, the topic and offset tables loaded, as a starting broker does; nothing
    listens and nothing registers. The clock is a :class:`ManualClock` unless one is given; ``channel``
    stands for the clients' connections (by default, calling a client fails). A pull held for long polling
    is dropped when due: the hold service here knows no processor to hand it back to.
    """
    config = config_for_tests(store, **overrides)
    config.validate()
    clock = clock or ManualClock()
    stats = BrokerStats(clock)
    Path(config.store_path_root_dir).mkdir(parents=True, exist_ok=True)
    message_store = MessageStore(
        config.store_path_root_dir, config.store_config(), store_host=config.store_host, clock=clock.now_ms
    )
    await asyncio.to_thread(message_store.open)
    await message_store.start()
    topics = TopicConfigManager(config, TopicConfigStore(config.config_dir, clock=clock.now_ms))
    topics.load()
    offsets = ConsumerOffsetStore(config.config_dir, clock=clock.now_ms)
    offsets.load()
    groups = SubscriptionGroupManager(config.auto_create_subscription_group, clock=clock.now_ms)
    messages = MessageService(message_store, stats)
    schedule = ScheduleMessageService(
        messages, config.delay_levels_ms(), clock, config.config_dir, topics.__contains__, config.store_host
    )
    timer = build_timer(messages, clock, config, topics.__contains__)
    timer.load()
    holder = PullRequestHoldService(clock, lambda request, conn: None)
    pop = PopService(
        config_dir=config.config_dir,
        clock=clock,
        store=message_store,
        messages=messages,
        offsets=offsets,
        topics=topics,
        store_host=config.store_host,
    )
    pop.load()
    request_modes = MessageRequestModeManager(config.config_dir)
    request_modes.load()
    announcer = ChangeAnnouncer(_nothing_to_register)
    namesrv_client = RemotingClient()
    synchronizer = SlaveSynchronizer(
        config=config, client=namesrv_client, topics=topics, groups=groups, offsets=offsets, schedule=schedule
    )
    try:
        yield BrokerParts(
            config=config,
            clock=clock,
            stats=stats,
            config_version=DataVersion(timestamp=clock.now_ms(), counter=0),
            on_config_changed=lambda keys: None,
            storage=Storage(
                store=message_store,
                messages=messages,
                schedule=schedule,
                transactions=TransactionalMessageService(
                    messages, offsets, config, clock, _no_producer_to_ask
                ),
                timer=timer,
            ),
            metadata=Metadata(topics=topics, groups=groups, offsets=offsets),
            clients=Clients(
                consumers=ConsumerManager(lambda group, members: None),
                producers=ProducerManager(),
                locks=RebalanceLockManager(clock, config.rebalance_lock_max_live_time),
                channel=channel or UnreachableClients(),
            ),
            services=Services(
                announcer=announcer,
                unique_ids=UniqueIdGenerator(config.broker_ip1, clock=clock.now_ms),
                pull_holder=holder,
                send_flow_control=SendFlowControl(config, message_store),
                ha=HighAvailability(
                    config=config,
                    clock=clock,
                    store=message_store,
                    messages=messages,
                    synchronizer=synchronizer,
                ),
                acl=None,
                filters=ExpressionCompiler(),
                pop=pop,
                request_modes=request_modes,
            ),
        )
    finally:
        await timer.stop()
        await announcer.close()
        await holder.close()
        await namesrv_client.close()
        await message_store.stop()


def message_properties(
    tags: str | None = None,
    keys: Iterable[str] = (),
    extra: Mapping[str, str] | None = None,
    *,
    delay_level: int = 0,
    unique_id: str | None = None,
) -> str:
    """A producer's properties string (5.x style, trailing separator)."""
    properties: dict[str, str] = {}
    if tags:
        properties[const.TAGS] = tags
    key_list = list(keys)
    if key_list:
        properties[const.KEYS] = " ".join(key_list)
    properties[const.WAIT] = "true"
    properties.update(extra or {})
    if delay_level:
        properties[const.DELAY] = str(delay_level)
    if unique_id:
        properties[const.UNIQ_KEY] = unique_id
    return encode_properties(properties)


def _subscription(topic: str, expression: str) -> SubscriptionData:
    subscription = build_subscription(topic, expression, "TAG")
    subscription.sub_version = 1
    return subscription


class BrokerClient:
    """Requests to one broker over one connection."""

    def __init__(self, address: str, handlers: Mapping[int, Handler] | None = None) -> None:
        self.address = address
        self.client = RemotingClient(handlers=handlers)
        self.timeout_ms = 5000

    async def __aenter__(self) -> BrokerClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self.client.close()

    async def request(
        self, code: int, header: CommandHeader | None = None, body: bytes = b"", **attrs: Any
    ) -> RemotingCommand:
        command = RemotingCommand.request(code, header, body, **attrs)
        return await self.client.invoke(self.address, command, self.timeout_ms)

    async def oneway(self, code: int, header: CommandHeader | None = None, body: bytes = b"") -> None:
        await self.client.invoke_oneway(self.address, RemotingCommand.request(code, header, body))

    async def create_topic(self, topic: str, queues: int = 4, perm: int = 6) -> RemotingCommand:
        """UPDATE_AND_CREATE_TOPIC with ``queues`` read and write queues."""
        header = CreateTopicRequestHeader(
            topic=topic,
            default_topic="TBW102",
            read_queue_nums=queues,
            write_queue_nums=queues,
            perm=perm,
            topic_filter_type="SINGLE_TAG",
            topic_sys_flag=0,
            order=False,
        )
        return await self.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)

    async def send(
        self,
        topic: str,
        body: bytes,
        *,
        queue_id: int = 0,
        properties: str | None = None,
        tags: str | None = None,
        keys: Iterable[str] = (),
        group: str = "test-producer",
        sys_flag: int = 0,
        born_timestamp: int = 0,
        reconsume_times: int = 0,
        max_reconsume_times: int | None = None,
        v1: bool = False,
        default_topic_queue_nums: int = 4,
    ) -> RemotingCommand:
        """SEND_MESSAGE_V2 (or SEND_MESSAGE with ``v1``) of one message."""
        header = SendMessageRequestHeaderV2(
            producer_group=group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=default_topic_queue_nums,
            queue_id=queue_id,
            sys_flag=sys_flag,
            born_timestamp=born_timestamp,
            flag=0,
            properties=properties if properties is not None else message_properties(tags, keys),
            reconsume_times=reconsume_times,
            unit_mode=False,
            max_reconsume_times=max_reconsume_times,
            batch=False,
        )
        if v1:
            v1_header: SendMessageRequestHeader = header.to_v1()
            return await self.request(RequestCode.SEND_MESSAGE, v1_header, body)
        return await self.request(RequestCode.SEND_MESSAGE_V2, header, body)

    async def send_batch(
        self, topic: str, entries: list[tuple[bytes, str]], *, queue_id: int = 0, group: str = "test-producer"
    ) -> RemotingCommand:
        """SEND_BATCH_MESSAGE of (body, properties string) entries."""
        header = SendMessageRequestHeaderV2(
            producer_group=group,
            topic=topic,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=queue_id,
            sys_flag=0,
            born_timestamp=0,
            flag=0,
            properties=encode_properties({const.WAIT: "true"}),
            reconsume_times=0,
            unit_mode=False,
            batch=True,
        )
        body = encode_batch(BatchEntry(entry_body, properties) for entry_body, properties in entries)
        return await self.request(RequestCode.SEND_BATCH_MESSAGE, header, body)

    async def pull(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        max_nums: int = 32,
        subscription: str | None = "*",
        suspend_ms: int | None = None,
        commit_offset: int | None = None,
        sub_version: int = 0,
    ) -> RemotingCommand:
        """PULL_MESSAGE; ``subscription=None`` leaves the subscription to the group's heartbeat."""
        flag = sysflag.build_pull_sys_flag(
            commit_offset=commit_offset is not None,
            suspend=suspend_ms is not None,
            subscription=subscription is not None,
        )
        header = PullMessageRequestHeader(
            consumer_group=group,
            topic=topic,
            queue_id=queue_id,
            queue_offset=offset,
            max_msg_nums=max_nums,
            sys_flag=flag,
            commit_offset=commit_offset or 0,
            suspend_timeout_millis=suspend_ms or 0,
            subscription=subscription,
            sub_version=sub_version,
            expression_type="TAG",
        )
        return await self.request(RequestCode.PULL_MESSAGE, header)

    async def heartbeat(
        self,
        client_id: str,
        *,
        producer_groups: Iterable[str] = (),
        consumer_groups: Mapping[str, Mapping[str, str]] | None = None,
        message_model: str = "CLUSTERING",
    ) -> RemotingCommand:
        """HEART_BEAT; ``consumer_groups`` maps a group to {topic: subscription expression}."""
        consumers = [
            ConsumerData(
                group_name=group,
                consume_type="CONSUME_PASSIVELY",
                message_model=message_model,
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                subscription_data_set=[
                    _subscription(topic, expression) for topic, expression in subscriptions.items()
                ],
            )
            for group, subscriptions in (consumer_groups or {}).items()
        ]
        body = HeartbeatData(
            client_id=client_id,
            producer_data_set=[ProducerData(group_name=group) for group in producer_groups],
            consumer_data_set=consumers,
        ).to_json()
        return await self.request(RequestCode.HEART_BEAT, body=body)
