"""The push consumer: the group's queues are shared among its members and their messages handed to a
handler as they arrive (Java's ``DefaultMQPushConsumer``).

Usage::

    consumer = PushConsumer("OrderHandlers", "ns1:9876;ns2:9876")
    consumer.subscribe("Orders", "created || paid")
    consumer.register_listener(handle)          # async def handle(messages, context) -> ConsumeStatus
    await consumer.start()
    ...
    await consumer.shutdown()                   # commits what was handled, leaves the group

The parts: :mod:`.rebalance` decides the queues, a :class:`~consumer.queue_reader.QueueReader` per queue
pulls, :mod:`.consume_concurrently` or :mod:`.consume_orderly` calls the handler, :mod:`.offset_store`
commits every 5 s and at shutdown.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any, Self

from client.stats import StatsCallback
from client.telemetry import NO_OBSERVER, Observation, OtelOptions
from client.timers import run_periodically
from client.trace import TraceDispatcher
from consumer import commands, direct, running_info
from consumer.allocate import AllocateStrategy, sorted_queues
from consumer.config import AllocateStrategyName, ConsumerConfig
from consumer.consume_concurrently import ConcurrentConsumeService
from consumer.consume_orderly import OrderlyConsumeService
from consumer.core import ConsumerCore, merged_config, parse_message_model
from consumer.errors import BrokerVersionError, ConsumerError, ConsumerStateError
from consumer.listener import ConsumeStatus
from consumer.observed import observed_handler
from consumer.pop_queues import PopQueues
from consumer.pop_requests import INIT_MODE_MAX, INIT_MODE_MIN
from consumer.positioning import consume_from_where, timestamp_ms
from consumer.process_queue import ProcessQueue
from consumer.queue_locks import QueueLocks
from consumer.queue_reader import QueueReader, ReaderHooks
from consumer.rebalance import QueueOwner, RebalanceListener, Rebalancer
from consumer.subscription import tag_filter
from consumer.trace import traced_handler
from producer import ProducerConfig, start_trace_dispatcher
from rocketmq_wire import features
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.pop import MessageQueueAssignment
from rocketmq_wire.bodies.running_info import (
    PROP_CONSUME_ORDERLY,
    PROP_CONSUMER_START_TIMESTAMP,
    PROP_THREADPOOL_CORE_SIZE,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
)
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.consumer import NotifyConsumerIdsChangedRequestHeader
from rocketmq_wire.message import MessageExt, sysflag
from rocketmq_wire.transport import Connection, Handler, RemotingError

logger = logging.getLogger("consumer.push")

#: ``async def handler(messages, context) -> ConsumeStatus``; ``context`` is a
#: :class:`~consumer.listener.ConsumeConcurrentlyContext` or, for orderly handlers, a
#: :class:`~consumer.listener.ConsumeOrderlyContext`.
MessageHandler = Any


class PushConsumer:
    """A member of a consumer group whose messages are pushed to a handler.

    ``message_model``: CLUSTERING (each message to one member; progress kept by the brokers) or BROADCASTING
    (every member gets everything; progress kept in a local file). ``allocate_strategy``: ``averagely``,
    ``circle``, ``by_config`` (with ``allocate_queues``) or any :class:`~consumer.allocate.AllocateStrategy`.
    ``consume_from``: where a queue the group never committed on starts -- ``LAST_OFFSET``, ``FIRST_OFFSET``
    or ``TIMESTAMP`` (then ``consume_timestamp``, by default 30 minutes ago).
    """

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        message_model: MessageModel | str = MessageModel.CLUSTERING,
        allocate_strategy: AllocateStrategyName | str | AllocateStrategy = AllocateStrategyName.AVERAGELY,
        allocate_queues: Sequence[MessageQueue] = (),
        consume_from: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        consume_timestamp: Any = None,
        config: ConsumerConfig | None = None,
        rebalance_listener: RebalanceListener | None = None,
        rng: random.Random | None = None,
        namespace: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        max_reconsume_times: int | None = None,
        consume_workers: int | None = None,
        consume_batch_max_size: int | None = None,
        pull_batch_size: int | None = None,
        enable_msg_trace: bool | None = None,
        trace_topic: str | None = None,
        client_rebalance: bool | None = None,
        stats_cb: StatsCallback | None = None,
        stats_interval_s: float | None = None,
        otel: OtelOptions | bool | None = None,
    ) -> None:
        settings = merged_config(
            config,
            {
                "namespace": namespace,
                "access_key": access_key,
                "secret_key": secret_key,
                "max_reconsume_times": max_reconsume_times,
                "consume_workers": consume_workers,
                "consume_batch_max_size": consume_batch_max_size,
                "pull_batch_size": pull_batch_size,
                "enable_msg_trace": enable_msg_trace,
                "trace_topic": trace_topic,
                "client_rebalance": client_rebalance,
            },
        )
        self._core = ConsumerCore(
            group,
            namesrv,
            config=settings,
            model=parse_message_model(message_model),
            consume_type=ConsumeType.CONSUME_PASSIVELY,
            consume_from=consume_from_where(consume_from),
            timestamp_ms=timestamp_ms(consume_timestamp),
            rng=rng,
        )
        self._strategy, self._strategy_label = running_info.chosen_strategy(
            self._core, allocate_strategy, allocate_queues
        )
        self._rebalance_listener = rebalance_listener
        self._handler: MessageHandler | None = None
        self._orderly = False
        self._readers: dict[MessageQueue, QueueReader] = {}
        self._pending_start: list[QueueReader] = []
        self._announced: dict[str, int] = {}
        self._reannouncing: asyncio.Task[Any] | None = None
        self._service: ConcurrentConsumeService | OrderlyConsumeService | None = None
        self._locks: QueueLocks | None = None
        self._rebalancer: Rebalancer | None = None
        self._stop = asyncio.Event()
        self._timers: list[asyncio.Task[None]] = []
        self._paused = False
        self._state = "created"
        self._tracer: TraceDispatcher | None = None
        self._pop_queues: PopQueues | None = None
        self._observation = Observation(
            role="push_consumer",
            client_id=lambda: self.client_id,
            stats_cb=stats_cb,
            stats_interval_s=stats_interval_s,
            otel=otel,
            group=group,
            lag=self._lag,
        )
        self._observer = self._observation.observer

    # -- configuration -------------------------------------------------------------------------------------

    @property
    def group(self) -> str:
        return self._core.group

    @property
    def config(self) -> ConsumerConfig:
        return self._core.config

    @property
    def message_model(self) -> MessageModel:
        return self._core.model

    def _lag(self) -> int | None:
        """Messages the broker holds beyond this consumer's committed offsets, over the queues it reads
        whose max offset a pull answer has told; None when none has yet."""
        committed = self._core.offsets.snapshot()
        lag: int | None = None
        for queue, reader in list(self._readers.items()):
            done = committed.get(queue)
            if reader.broker_max_offset is None or done is None:
                continue
            lag = (lag or 0) + max(0, reader.broker_max_offset - done)
        return lag

    def stats(self) -> dict[str, Any] | None:
        """This consumer's statistics now (see ``client.stats``), or None without a ``stats_cb``."""
        return self._observation.snapshot()

    @property
    def client_id(self) -> str:
        """``ip@instance``, how brokers and the other members know this consumer (set by ``start``)."""
        return self._core.client.client_id if self._core.started else ""

    def subscribe(self, topic: str, expression: str | None = None, *, sql: str | None = None) -> None:
        """Receive ``topic``'s messages whose tag ``expression`` names (``"TagA || TagB"``; ``"*"`` or
        nothing: all), or, with ``sql`` instead, those whose properties satisfy that SQL92 expression
        (``"a > 5 AND region = 'eu'"``, evaluated by the brokers, see docs/sql92-filters.md).

        ``start`` first asks each broker of the topic whether it serves a SQL92 filter and raises
        :class:`~consumer.errors.FilterRefusedError` if one refuses; subscribing while running checks in the
        background and withdraws a refused subscription, logging why.
        """
        added = self._core.subscribe(topic, expression, sql)
        if self._state == "running":
            self._core.client.spawn(self._after_subscription_change(added), "subscription-change")

    def unsubscribe(self, topic: str) -> None:
        wire = self._core.wire_topic(topic)
        if self._core.subscriptions.unsubscribe(wire) and self._state == "running" and self._rebalancer:
            self._core.client.spawn(self._rebalancer.release_all(wire), "unsubscribe")

    def register_listener(self, handler: MessageHandler, *, orderly: bool = False) -> None:
        """``async def handler(messages, context) -> ConsumeStatus``; ``orderly`` consumes each queue in
        order, one batch at a time (clustering: under a broker lock)."""
        if self._state != "created":
            raise ConsumerStateError("register the listener before starting the consumer")
        self._handler = handler
        self._orderly = orderly

    def assignment(self) -> list[MessageQueue]:
        """The queues this consumer reads now (retry queues included), as the user names their topics;
        POP queues too (queue id -1: every queue of the topic on that broker)."""
        pulled = [q for q, r in self._readers.items() if not r.pq.dropped]
        popped = self._pop_queues.queues() if self._pop_queues is not None else []
        return sorted_queues(self._core.user_queue(q) for q in [*pulled, *popped])

    @property
    def broker_rebalance(self) -> bool:
        """Whether the brokers assign this consumer's queues (and may have it POP): ``client_rebalance``
        off, and consuming concurrently in clustering mode -- Java's orderly and broadcasting consumers
        always share in the client."""
        return (
            not self._core.config.client_rebalance
            and not self._orderly
            and self._core.model == MessageModel.CLUSTERING
        )

    def suspend(self) -> None:
        """Stop pulling (messages already pulled are still handled) until :meth:`resume`."""
        self._paused = True

    def resume(self) -> None:
        self._paused = False

    # -- lifecycle -----------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    async def start(self) -> None:
        """Join the group: heartbeat the brokers, rebalance, start pulling and consuming."""
        if self._state != "created":
            raise ConsumerStateError(f"the consumer was already started ({self._state})")
        if self._handler is None:
            raise ConsumerStateError("register a listener before starting the consumer")
        core = self._core
        if core.model == MessageModel.CLUSTERING:
            core.subscriptions.add_retry(core.wire_group)
        self._state = "starting"
        handlers: dict[int, Handler] = {
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._on_ids_changed,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET: self._on_reset_offset,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self._on_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self._on_consume_directly,
        }
        await core.open(handlers, core.subscriptions.topics)
        try:
            await self._start_tracer()
            await self._start_parts()
        except BaseException:
            self._stop.set()
            if self._rebalancer is not None:
                self._rebalancer.stop()
            await asyncio.gather(*self._timers, return_exceptions=True)
            if self._service is not None:
                await self._service.shutdown(0)
            self._state = "stopped"
            await self._stop_tracer()
            await core.close()
            raise
        self._state = "running"
        self._observation.start()
        logger.info(
            "push consumer %s started as client %s (%s, %s)",
            core.wire_group,
            core.client.client_id,
            core.model.value,
            "orderly" if self._orderly else "concurrently",
        )

    async def _start_parts(self) -> None:
        core = self._core
        self._locks = QueueLocks(core.client, core.wire_group)
        self._service = self._make_service()
        self._service.start()
        await core.refresh_subscribed_routes()
        await core.check_filters()
        if self.broker_rebalance:
            await self._check_broker_rebalance()
            self._pop_queues = PopQueues(
                core,
                handler=self._wrapped_handler(),
                paused=lambda: self._paused,
                received=lambda messages: self._observer.received(core.group, messages),
                init_mode=INIT_MODE_MIN
                if core.consume_from == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
                else INIT_MODE_MAX,
            )
            self._pop_queues.start()
        self._rebalancer = Rebalancer(
            client=core.client,
            group=core.wire_group,
            model=core.model,
            strategy=self._strategy,
            topics=core.subscriptions.topics,
            owner=QueueOwner(
                owned=self._owned, release=self._release, acquire=self._acquire, changed=self._changed
            ),
            listener=self._user_listener,
            assignment=self._query_assignment if self._pop_queues is not None else None,
            pop_owner=self._pop_queues.owner() if self._pop_queues is not None else None,
        )
        await self._announce()
        self._stop.clear()
        loop = asyncio.get_running_loop()
        config = core.config
        self._timers = [
            loop.create_task(self._rebalancer.run(self._stop, config.rebalance_interval_ms)),
            loop.create_task(
                run_periodically(
                    config.persist_offset_interval_ms, self._persist_offsets, "offsets", self._stop
                )
            ),
        ]
        if self._orderly and core.model == MessageModel.CLUSTERING:
            self._timers.append(
                loop.create_task(
                    run_periodically(config.lock_interval_ms, self._lock_all, "locks", self._stop)
                )
            )

    async def shutdown(self) -> None:
        """Stop pulling, let handler calls under way finish, commit, leave the group; idempotent."""
        if self._state != "running":
            self._state = "stopped"
            return
        self._state = "stopping"
        core = self._core
        self._stop.set()
        if self._rebalancer is not None:
            self._rebalancer.stop()
        await asyncio.gather(*self._timers, return_exceptions=True)
        readers = list(self._readers.values())
        await asyncio.gather(*(reader.stop() for reader in readers))
        if self._pop_queues is not None:
            await self._pop_queues.stop()
        assert self._service is not None
        await self._service.shutdown(core.config.await_termination_ms)
        owned = [queue for queue, reader in self._readers.items() if not reader.pq.dropped]
        for reader in readers:
            reader.pq.drop()
        try:
            await core.offsets.persist_all(owned, oneway=False)
        except Exception:
            logger.exception("group %s: committing offsets at shutdown failed", core.wire_group)
        if self._orderly and core.model == MessageModel.CLUSTERING:
            await self._queue_locks().unlock(owned)
        await self._stop_tracer()
        await self._observation.stop()
        await core.close()
        self._readers.clear()
        self._state = "stopped"
        logger.info("push consumer %s (client %s) shut down", core.wire_group, core.client.client_id)

    async def rebalance(self) -> None:
        """Run a rebalance round now (brokers trigger them when members come and go; this is for tests and
        operators who cannot wait for the next round)."""
        if self._rebalancer is None:
            raise ConsumerStateError("the consumer is not started")
        await self._rebalancer.rebalance()

    # -- broker-side assignment ----------------------------------------------------------------------------

    async def _check_broker_rebalance(self) -> None:
        """Refuse at start what a 4.x broker cannot do: it has no QUERY_ASSIGNMENT."""
        client = self._core.client
        for topic in self._core.subscriptions.topics():
            for queue in await client.queues_of(topic) or []:
                found = client.routes.master_or_any(queue.broker_name or "")
                if found is not None:
                    await client.instance.require_broker_version(
                        found[0],
                        features.POP_CONSUMPTION,
                        "a broker-side rebalance (client_rebalance=False)",
                        error=BrokerVersionError,
                    )

    async def _query_assignment(self, topic: str) -> list[MessageQueueAssignment] | None:
        core = self._core
        addr = core.client.routes.any_broker_of(topic)
        if addr is None:
            logger.warning("group %s: no broker known for topic %s", core.wire_group, topic)
            return None
        try:
            return await core.client.api.query_assignment(
                addr,
                topic,
                group=core.wire_group,
                client_id=core.client.client_id,
                strategy_name=self._strategy_label,
                message_model=core.model.value,
            )
        except (ConsumerError, RemotingError) as exc:
            logger.warning(
                "group %s: broker %s gave no assignment of %s: %s", core.wire_group, addr, topic, exc
            )
            return None

    # -- queue ownership (rebalance hooks) -----------------------------------------------------------------

    def _owned(self, topic: str) -> set[MessageQueue]:
        return {queue for queue in self._readers if queue.topic == topic}

    async def _release(self, queue: MessageQueue) -> bool:
        reader = self._readers.get(queue)
        if reader is None:
            return True
        reader.pq.drop()
        if self._orderly and self._core.model == MessageModel.CLUSTERING:
            try:
                async with asyncio.timeout(1):
                    await reader.pq.consume_lock.acquire()
            except TimeoutError:
                logger.info("%s is still being consumed in order; releasing it later", queue)
                return False
            try:
                await self._remove(queue, reader)
                await self._queue_locks().unlock([queue])
            finally:
                reader.pq.consume_lock.release()
            return True
        await self._remove(queue, reader)
        return True

    async def _remove(self, queue: MessageQueue, reader: QueueReader) -> None:
        await reader.stop()
        self._readers.pop(queue, None)
        self._core.puller.forget(queue)
        offsets = self._core.offsets
        try:
            await offsets.persist(queue)
        except (ConsumerError, RemotingError) as exc:
            logger.warning("committing the offset of released %s failed: %s", queue, exc)
        offsets.remove(queue)

    async def _acquire(self, queue: MessageQueue) -> bool:
        core = self._core
        locked = False
        if self._orderly and core.model == MessageModel.CLUSTERING:
            locked = queue in await self._queue_locks().lock([queue])
            if not locked:
                return False
        core.offsets.remove(queue)
        offset = await core.start_offset(queue)
        if offset is None or offset < 0:
            return False
        pq = ProcessQueue()
        pq.mark_locked(locked)
        reader = QueueReader(
            queue,
            pq,
            offset,
            config=core.config,
            puller=core.puller,
            offsets=core.offsets,
            hooks=self._reader_hooks(),
            orderly=self._orderly,
            commit_offsets=core.model == MessageModel.CLUSTERING,
        )
        self._readers[queue] = reader
        self._pending_start.append(reader)
        return True

    async def _changed(self, topic: str, all_queues: list[MessageQueue], owned: list[MessageQueue]) -> None:
        """New queues start pulling only after the brokers heard the new subscription version, so no pull
        is refused as "subscription not latest"."""
        subscription = self._core.subscriptions.get(topic)
        if subscription is not None:
            subscription.sub_version = max(subscription.sub_version + 1, time.time_ns() // 1_000_000)
        await self._announce()
        pending, self._pending_start = self._pending_start, []
        for reader in pending:
            if not reader.pq.dropped:
                reader.start()

    def _user_listener(self, topic: str, all_queues: list[MessageQueue], owned: list[MessageQueue]) -> None:
        if self._rebalance_listener is not None:
            core = self._core
            self._rebalance_listener(
                core.user_queue(MessageQueue(topic=topic)).topic or topic,
                [core.user_queue(q) for q in all_queues],
                [core.user_queue(q) for q in owned],
            )

    # -- pulling -------------------------------------------------------------------------------------------

    def _reader_hooks(self) -> ReaderHooks:
        return ReaderHooks(
            spec_for=self._pull_spec,
            tags_for=lambda queue: tag_filter(self._core.subscriptions.get(queue.topic or "")),
            deliver=self._deliver,
            offset_moved=self._offset_moved,
            paused=lambda: self._paused,
            unknown_to_broker=self._reannounce,
            pulled=lambda queue, rt_ms, count: self._core.stats.pulled(queue.topic or "", rt_ms, count),
        )

    def _pull_spec(self, queue: MessageQueue) -> commands.PullSpec | None:
        core = self._core
        subscription = core.subscriptions.get(queue.topic or "")
        if subscription is None:
            return None
        config = core.config
        post = config.post_subscription_when_pull and not subscription.class_filter_mode
        return commands.PullSpec(
            group=core.wire_group,
            max_nums=config.pull_batch_size,
            sys_flag=sysflag.build_pull_sys_flag(
                suspend=True, subscription=post, class_filter=subscription.class_filter_mode
            ),
            commit_offset=0,
            suspend_timeout_ms=config.broker_suspend_max_ms or 15_000,
            subscription=subscription.sub_string if post else None,
            sub_version=self._announced.get(queue.topic or "", 0),
            expression_type=subscription.expression_type,
            max_msg_bytes=config.pull_batch_size_bytes if commands.is_v5(config.version) else None,
        )

    def _deliver(
        self, messages: list[MessageExt], pq: ProcessQueue, queue: MessageQueue, dispatch: bool
    ) -> None:
        service = self._service
        self._observer.received(self._core.group, messages)
        if isinstance(service, OrderlyConsumeService):
            service.submit(messages, pq, queue, dispatch)
        elif service is not None:
            service.submit(messages, pq, queue)

    async def _offset_moved(self, queue: MessageQueue, next_offset: int) -> None:
        """The broker says the queue's offset is out of range: commit the offset it suggests, give the
        queue up and let the next round take it again from there."""
        offsets = self._core.offsets
        offsets.update_and_freeze(queue, next_offset)
        try:
            await offsets.persist(queue)
        except (ConsumerError, RemotingError) as exc:
            logger.warning("committing the corrected offset of %s failed: %s", queue, exc)
        moved = self._readers.pop(queue, None)
        if moved is not None:
            self._core.client.spawn(moved.stop(), "stop-reader")
        offsets.remove(queue)
        if self._rebalancer is not None:
            self._rebalancer.request()

    # -- consuming -----------------------------------------------------------------------------------------

    def _make_service(self) -> ConcurrentConsumeService | OrderlyConsumeService:
        core = self._core
        handler = self._wrapped_handler()
        if self._orderly:
            return OrderlyConsumeService(
                group=core.wire_group,
                model=core.model,
                handler=handler,
                config=core.config,
                offsets=core.offsets,
                send_back=self._send_back,
                lock_one=self._lock_one,
                stats=core.stats,
            )
        return ConcurrentConsumeService(
            group=core.wire_group,
            model=core.model,
            handler=handler,
            config=core.config,
            offsets=core.offsets,
            send_back=self._send_back,
            stats=core.stats,
            held_queues=self._held_queues,
        )

    def _held_queues(self) -> list[tuple[MessageQueue, ProcessQueue]]:
        return [(queue, reader.pq) for queue, reader in self._readers.items()]

    def _wrapped_handler(self) -> Any:
        """The user's handler, seeing topics and queues without the namespace (and traced when enabled)."""
        handler = self._handler
        core = self._core
        if self._observer is not NO_OBSERVER:
            handler = observed_handler(handler, self._observer, core.group)
        if core.config.namespace:
            inner = handler

            async def call(messages: list[MessageExt], context: Any) -> ConsumeStatus | None:
                context.message_queue = core.user_queue(context.message_queue)
                assert inner is not None
                return await inner(core.user_messages(messages), context)  # type: ignore[no-any-return]

            handler = call
        if self._tracer is not None:
            handler = traced_handler(handler, self._tracer, core.group, lambda: self.client_id)
        return handler

    # -- message trace -------------------------------------------------------------------------------------

    @property
    def trace_dispatcher(self) -> TraceDispatcher | None:
        """The dispatcher writing this consumer's trace records, when ``enable_msg_trace`` is on."""
        return self._tracer

    async def _start_tracer(self) -> None:
        config = self._core.config
        if not config.enable_msg_trace:
            return
        carrier = ProducerConfig(  # the trace producer reaches the cluster as this consumer does
            access_key=config.access_key,
            secret_key=config.secret_key,
            security_token=config.security_token,
            ssl=config.ssl,
            client_ip=config.client_ip,
            serialize_type=config.serialize_type,
            version=config.version,
        )
        try:
            self._tracer = await start_trace_dispatcher(
                self._core.namesrv_addresses,
                self._core.wire_group,
                owner=self,
                trace_topic=config.trace_topic,
                config=carrier,
            )
        except Exception as exc:  # tracing never keeps the consumer from working
            logger.warning("group %s: no message trace, its dispatcher failed: %s", self._core.group, exc)

    async def _stop_tracer(self) -> None:
        tracer, self._tracer = self._tracer, None
        if tracer is not None:
            await tracer.shutdown()

    async def _send_back(self, message: MessageExt, queue: MessageQueue, delay_level: int) -> bool:
        core = self._core
        message.topic = core.wire_topic(message.topic)
        try:
            addr = await core.client.master_of(queue)
            await core.client.api.send_back(
                addr,
                message,
                group=core.wire_group,
                delay_level=delay_level,
                max_reconsume_times=core.config.concurrent_max_reconsume_times()
                if not self._orderly
                else core.config.orderly_max_reconsume_times(),
                broker_name=queue.broker_name,
            )
        except (ConsumerError, RemotingError) as exc:
            logger.warning("sending message %s back failed: %s", message.client_msg_id, exc)
            return False
        return True

    # -- locks (orderly, clustering) -----------------------------------------------------------------------

    def _queue_locks(self) -> QueueLocks:
        assert self._locks is not None, "the consumer is not started"
        return self._locks

    async def _lock_one(self, queue: MessageQueue) -> bool:
        locked = queue in await self._queue_locks().lock([queue])
        reader = self._readers.get(queue)
        if reader is not None:
            reader.pq.mark_locked(locked)
        return locked

    async def _lock_all(self) -> None:
        """Renew the locks of every owned queue (every 20 s); a queue whose lock was lost stops consuming."""
        owned = [queue for queue, reader in self._readers.items() if not reader.pq.dropped]
        held = await self._queue_locks().lock_all(owned)
        for queue in owned:
            reader = self._readers.get(queue)
            if reader is not None:
                reader.pq.mark_locked(queue in held)

    # -- background ----------------------------------------------------------------------------------------

    async def _announce(self) -> None:
        """Heartbeat every broker; pulls then carry the subscription versions the brokers now know."""
        versions = {data.topic or "": data.sub_version for data in self._core.subscriptions.data()}
        await self._core.client.heartbeat_all()
        self._announced.update(versions)

    def _reannounce(self) -> None:
        """Heartbeat soon, once, however many readers ask (a restarted broker forgot the group)."""
        if self._reannouncing is None or self._reannouncing.done():
            self._reannouncing = self._core.client.spawn(self._announce(), "reannounce")

    async def _persist_offsets(self) -> None:
        owned = [queue for queue, reader in self._readers.items() if not reader.pq.dropped]
        await self._core.offsets.persist_all(owned)

    async def _after_subscription_change(self, added: SubscriptionData) -> None:
        core = self._core
        await core.refresh_subscribed_routes()
        if await core.refused_while_running(added):
            if self._rebalancer is not None:
                await self._rebalancer.release_all(added.topic or "")
            return
        await self._announce()
        if self._rebalancer is not None:
            self._rebalancer.request()

    async def _on_ids_changed(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            group = request.read_header(NotifyConsumerIdsChangedRequestHeader).consumer_group
        except Exception:
            group = None
        logger.info("group %s changed (broker %s); rebalancing", group, conn.remote_address)
        if self._rebalancer is not None:
            self._rebalancer.request()
        return None

    async def _on_reset_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        table = self._core.reset_request(request)
        if table and self._state == "running":
            self._core.client.spawn(self._reset_offsets(table), "reset-offsets")
        return None

    # -- what operators ask (relayed by a broker) ----------------------------------------------------------

    async def running_info(self) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO answers (without ``jstack``): settings by their Java names,
        subscriptions, every held queue, per-topic pull and consume figures."""
        core = self._core
        fields = [
            *running_info.push_fields(core, self._strategy_label),
            *running_info.client_fields(core),
            (PROP_CONSUME_ORDERLY, self._orderly),
            (PROP_THREADPOOL_CORE_SIZE, core.config.consume_workers),
            (PROP_CONSUMER_START_TIMESTAMP, core.start_timestamp_ms),
            *running_info.instance_fields(core, core.consume_type),
        ]
        properties = running_info.java_properties(fields)
        return await running_info.build(core, properties, self._held_queues(), with_status=True)

    async def _on_running_info(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return await running_info.answer(request, self._core, self.running_info)

    async def consume_directly(
        self, message: MessageExt, broker_name: str | None = None
    ) -> ConsumeMessageDirectlyResult:
        """Hand ``message`` (as stored, topic on the wire) to the listener alone, outside the normal flow,
        and report how it went -- what CONSUME_MESSAGE_DIRECTLY answers."""
        if self._handler is None:
            raise ConsumerStateError("no listener is registered")
        return await direct.consume_directly(
            self._wrapped_handler(),
            message,
            group=self._core.wire_group,
            broker_name=broker_name,
            orderly=self._orderly,
        )

    async def _on_consume_directly(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        core = self._core
        return await direct.answer(
            request, group=core.wire_group, version=core.config.version, consume=self.consume_directly
        )

    async def _reset_offsets(self, table: dict[MessageQueue, int]) -> None:
        """Move queues to the offsets an operator reset them to (Java's ``resetOffset``): stop pulling, drop
        what is held, commit the new offsets, and let the next round take the queues again from there."""
        offsets = self._core.offsets
        self.suspend()
        try:
            for queue in table:
                reader = self._readers.get(queue)
                if reader is not None:
                    reader.pq.drop()
            for queue, offset in table.items():
                offsets.update_and_freeze(queue, offset)
                try:
                    await offsets.persist(queue)
                except (ConsumerError, RemotingError) as exc:
                    logger.warning("committing the reset offset of %s failed: %s", queue, exc)
                reader = self._readers.pop(queue, None)
                if reader is not None:
                    await reader.stop()
                offsets.remove(queue)
        finally:
            self.resume()
            if self._rebalancer is not None:
                self._rebalancer.request()
