"""The pull consumer: the caller asks for messages when it wants them (Java's ``DefaultLitePullConsumer``).

Usage::

    async with PullConsumer("Reports", "ns:9876") as consumer:
        consumer.subscribe("Orders", "paid")        # or: consumer.assign(queues)
        while True:
            for message in await consumer.poll(timeout=1.0):
                ...

Either ``subscribe`` (the group shares the topic's queues, as push consumers do) or ``assign`` (exactly these
queues, no group coordination). Behind ``poll`` one fetcher task per queue long-polls the broker and buffers
what it gets, within Java's limits (per queue and in total); ``poll`` hands out one queue's batch at a time,
in offset order. Progress is committed automatically every 5 s (``auto_commit``), on ``commit()`` and on
``close()``; ``seek*`` moves a queue elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from client.stats import StatsCallback
from client.telemetry import Observation, OtelOptions
from client.timers import run_periodically
from consumer import commands, direct, running_info
from consumer.allocate import AllocateStrategy, sorted_queues
from consumer.config import AllocateStrategyName, ConsumerConfig
from consumer.core import ConsumerCore, merged_config, parse_message_model
from consumer.errors import ConsumerError, ConsumerStateError, InvalidOffsetError
from consumer.lite_fetcher import LiteFetcher, PolledBatch
from consumer.offset_store import ReadOffsetType
from consumer.positioning import consume_from_where, timestamp_ms
from consumer.rebalance import QueueOwner, RebalanceListener, Rebalancer
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.running_info import PROP_CONSUMER_START_TIMESTAMP, ConsumerRunningInfo
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.message import MessageExt
from rocketmq_wire.transport import Connection, Handler, RemotingError

logger = logging.getLogger("consumer.lite_pull")


class PullConsumer:
    """A consumer the caller drives with :meth:`poll`.

    ``message_model``, ``allocate_strategy`` and ``consume_from`` work as for :class:`~consumer.PushConsumer`
    (they only matter with ``subscribe``). ``auto_commit`` commits the offsets of what ``poll`` returned every
    ``auto_commit_interval_ms`` (at the next ``poll``); without it, call :meth:`commit`.
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
        auto_commit: bool = True,
        config: ConsumerConfig | None = None,
        rebalance_listener: RebalanceListener | None = None,
        rng: random.Random | None = None,
        namespace: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        pull_batch_size: int | None = None,
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
                "pull_batch_size": pull_batch_size,
            },
        )
        self._core = ConsumerCore(
            group,
            namesrv,
            config=settings,
            model=parse_message_model(message_model),
            consume_type=ConsumeType.CONSUME_ACTIVELY,
            consume_from=consume_from_where(consume_from),
            timestamp_ms=timestamp_ms(consume_timestamp),
            rng=rng,
        )
        self._strategy, self._strategy_label = running_info.chosen_strategy(
            self._core, allocate_strategy, allocate_queues
        )
        self.auto_commit = auto_commit
        self._rebalance_listener = rebalance_listener
        self._mode: str | None = None
        self._assigned_wanted: list[MessageQueue] = []
        self._fetcher = LiteFetcher(self._core, self._subscription_for)
        self._rebalancer: Rebalancer | None = None
        self._stop = asyncio.Event()
        self._timers: list[asyncio.Task[None]] = []
        self._next_auto_commit = 0.0
        self._state = "created"
        self._observation = Observation(
            role="pull_consumer",
            client_id=lambda: self.client_id,
            stats_cb=stats_cb,
            stats_interval_s=stats_interval_s,
            otel=otel,
            group=group,
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
    def client_id(self) -> str:
        return self._core.client.client_id if self._core.started else ""

    def _set_mode(self, mode: str) -> None:
        if self._mode is not None and self._mode != mode:
            raise ConsumerStateError("subscribe and assign are mutually exclusive")
        self._mode = mode

    def subscribe(self, topic: str, expression: str | None = None, *, sql: str | None = None) -> None:
        """Share ``topic``'s queues with the group, keeping messages whose tag ``expression`` names (``"*"``
        or nothing: all) or, with ``sql`` instead, whose properties satisfy that SQL92 expression (evaluated
        by the brokers; ``start`` asks them first, as for :meth:`PushConsumer.subscribe`)."""
        self._set_mode("subscribe")
        added = self._core.subscribe(topic, expression, sql)
        if self._state == "running":
            self._core.client.spawn(self._after_subscription_change(added), "subscription-change")

    def unsubscribe(self, topic: str) -> None:
        wire = self._core.wire_topic(topic)
        if self._core.subscriptions.unsubscribe(wire) and self._state == "running" and self._rebalancer:
            self._core.client.spawn(self._rebalancer.release_all(wire), "unsubscribe")

    def assign(self, queues: Iterable[MessageQueue]) -> None:
        """Read exactly ``queues`` (replacing any earlier assignment), without group coordination."""
        wanted = sorted_queues({self._core.wire_queue(_as_queue(q)) for q in queues})
        if not wanted:
            raise ValueError("assign needs at least one queue")
        self._set_mode("assign")
        self._assigned_wanted = wanted
        if self._state == "running":
            self._apply_assignment()

    def assignment(self) -> list[MessageQueue]:
        """The queues read now, as the user names their topics."""
        return sorted_queues(self._core.user_queue(q) for q in self._fetcher.queues)

    def pause(self, queues: Iterable[MessageQueue]) -> None:
        """Stop fetching ``queues`` (what is buffered is still returned) until :meth:`resume`."""
        for queue in queues:
            state = self._fetcher.queues.get(self._core.wire_queue(_as_queue(queue)))
            if state is not None:
                self._fetcher.pause(state)

    def resume(self, queues: Iterable[MessageQueue]) -> None:
        for queue in queues:
            state = self._fetcher.queues.get(self._core.wire_queue(_as_queue(queue)))
            if state is not None:
                self._fetcher.resume(state)

    # -- lifecycle -----------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        if self._state != "created":
            raise ConsumerStateError(f"the consumer was already started ({self._state})")
        core = self._core
        self._state = "starting"
        handlers: dict[int, Handler] = {
            RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: self._on_ids_changed,
            RequestCode.RESET_CONSUMER_CLIENT_OFFSET: self._on_reset_offset,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self._on_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self._on_consume_directly,
        }
        await core.open(handlers, self._topics)
        try:
            await self._start_parts()
        except BaseException:
            self._stop.set()
            await asyncio.gather(*self._timers, return_exceptions=True)
            self._state = "stopped"
            await core.close()
            raise
        self._state = "running"
        self._observation.start()
        self._fetcher.start()
        if self._mode == "assign":
            self._apply_assignment()
        loop = asyncio.get_running_loop()
        self._next_auto_commit = loop.time() + core.config.auto_commit_interval_ms / 1000
        logger.info("pull consumer %s started as client %s", core.wire_group, core.client.client_id)

    async def _start_parts(self) -> None:
        core = self._core
        self._stop.clear()
        loop = asyncio.get_running_loop()
        config = core.config
        self._timers = [
            loop.create_task(
                run_periodically(
                    config.persist_offset_interval_ms, self._persist_offsets, "offsets", self._stop
                )
            )
        ]
        await core.refresh_subscribed_routes()
        if self._mode == "subscribe":
            await core.check_filters()
            await core.client.heartbeat_all()
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
            )
            self._timers.append(
                loop.create_task(self._rebalancer.run(self._stop, config.rebalance_interval_ms))
            )

    async def close(self) -> None:
        """Stop fetching, commit the offsets of what was polled (with ``auto_commit``), leave the group."""
        if self._state != "running":
            self._state = "stopped"
            return
        self._state = "stopping"
        core = self._core
        self._stop.set()
        if self._rebalancer is not None:
            self._rebalancer.stop()
        await asyncio.gather(*self._timers, return_exceptions=True)
        owned = list(self._fetcher.queues)
        await self._fetcher.stop()
        if self.auto_commit:
            self._commit_consumed()
        try:
            await core.offsets.persist_all(owned, oneway=False)
        except Exception:
            logger.exception("group %s: committing offsets at close failed", core.wire_group)
        await self._observation.stop()
        await core.close()
        self._fetcher.queues.clear()
        self._state = "stopped"
        logger.info("pull consumer %s (client %s) closed", core.wire_group, core.client.client_id)

    shutdown = close

    # -- consuming -----------------------------------------------------------------------------------------

    async def poll(self, timeout: float = 5.0) -> list[MessageExt]:
        """The next batch of one queue's messages, waiting at most ``timeout`` seconds; ``[]`` if none came.

        Messages of a queue come in offset order; a later batch of the same queue continues where the
        previous one ended.
        """
        batch = await self.poll_batch(timeout)
        return [] if batch is None else batch.messages

    async def poll_batch(self, timeout: float = 5.0) -> PolledBatch | None:
        """Like :meth:`poll`, but also says which queue the batch is from (to commit exact positions with
        ``commit({queue: offset})``); ``None`` when nothing came within ``timeout`` seconds."""
        self._check_running()
        if timeout < 0:
            raise ValueError("timeout must not be negative")
        loop = asyncio.get_running_loop()
        if self.auto_commit and loop.time() >= self._next_auto_commit:
            self._commit_consumed()
            self._next_auto_commit = loop.time() + self.config.auto_commit_interval_ms / 1000
        batch = await self._fetcher.take(timeout)
        if batch is None:
            return None
        messages = self._core.user_messages(batch.messages)
        self._observer.received(self._core.group, messages)
        return PolledBatch(self._core.user_queue(batch.queue), messages)

    def stats(self) -> dict[str, Any] | None:
        """This consumer's statistics now (see ``client.stats``), or None without a ``stats_cb``; a pull
        consumer knows what it received, not how its caller processed it."""
        return self._observation.snapshot()

    async def commit(
        self, offsets: Mapping[MessageQueue, int] | None = None, *, persist: bool = True
    ) -> None:
        """Commit ``offsets`` (queue -> next offset to consume), or everything polled so far; with
        ``persist`` (the default) wait until the brokers (or the local file) have it."""
        self._check_running()
        core = self._core
        if offsets is None:
            queues = self._commit_consumed()
        else:
            queues = []
            for queue, offset in offsets.items():
                wire = core.wire_queue(_as_queue(queue))
                core.offsets.update(wire, offset, increase_only=False)
                queues.append(wire)
        if persist and queues:
            if core.local_offsets:
                await core.offsets.persist_all(list(self._fetcher.queues) + queues, oneway=False)
            else:
                for queue in queues:
                    await core.offsets.persist(queue)

    async def committed(self, queue: MessageQueue) -> int:
        """The group's committed offset of ``queue`` (this consumer's latest if it holds one, else the
        broker's); -1 when there is none."""
        self._check_running()
        return await self._core.offsets.read(
            self._core.wire_queue(_as_queue(queue)), ReadOffsetType.MEMORY_THEN_STORE
        )

    # -- positioning ---------------------------------------------------------------------------------------

    async def seek(self, queue: MessageQueue, offset: int) -> None:
        """Continue ``queue`` at ``offset`` (between its min and max offset): buffered messages of it are
        dropped and its consumed offset is set there."""
        self._check_running()
        wire = self._core.wire_queue(_as_queue(queue))
        if wire not in self._fetcher.queues:
            raise ConsumerStateError(f"{queue} is not assigned to this consumer")
        low, high = await self._core.min_offset(wire), await self._core.max_offset(wire)
        if not low <= offset <= high:
            raise InvalidOffsetError(f"seek offset {offset} of {queue} is outside [{low}, {high}]")
        state = self._fetcher.queues.get(wire)
        if state is None:
            raise ConsumerStateError(f"{queue} was released while seeking")
        self._fetcher.move(state, offset)
        self._core.offsets.update(wire, offset, increase_only=False)

    async def seek_to_begin(self, queue: MessageQueue) -> int:
        """Seek to the queue's first stored message; returns that offset."""
        self._check_running()
        offset = await self._core.min_offset(self._core.wire_queue(_as_queue(queue)))
        await self.seek(queue, offset)
        return offset

    async def seek_to_end(self, queue: MessageQueue) -> int:
        """Seek past the queue's last message (only new messages follow); returns that offset."""
        self._check_running()
        offset = await self._core.max_offset(self._core.wire_queue(_as_queue(queue)))
        await self.seek(queue, offset)
        return offset

    async def seek_by_timestamp(self, queue: MessageQueue, timestamp: Any) -> int:
        """Seek to the first message stored at or after ``timestamp`` (epoch ms, datetime, ISO text or
        ``yyyyMMddHHmmss``), as the broker's SEARCH_OFFSET_BY_TIMESTAMP finds it; returns that offset."""
        offset = await self.offset_for_timestamp(queue, timestamp)
        await self.seek(queue, offset)
        return offset

    async def offset_for_timestamp(self, queue: MessageQueue, timestamp: Any) -> int:
        self._check_running()
        return await self._core.search_offset(
            self._core.wire_queue(_as_queue(queue)), timestamp_ms(timestamp)
        )

    async def min_offset(self, queue: MessageQueue) -> int:
        self._check_running()
        return await self._core.min_offset(self._core.wire_queue(_as_queue(queue)))

    async def max_offset(self, queue: MessageQueue) -> int:
        self._check_running()
        return await self._core.max_offset(self._core.wire_queue(_as_queue(queue)))

    async def fetch_message_queues(self, topic: str) -> list[MessageQueue]:
        """Every readable queue of ``topic`` (for ``assign``)."""
        self._check_running()
        queues = await self._core.client.routes.refresh(self._core.wire_topic(topic))
        if queues is None:
            raise ConsumerError(f"topic {topic!r} does not exist on any NameServer")
        return [self._core.user_queue(q) for q in queues]

    # -- internals: assignment -----------------------------------------------------------------------------

    def _check_running(self) -> None:
        if self._state != "running":
            raise ConsumerStateError(f"the consumer is not running ({self._state}); call start() first")

    def _topics(self) -> list[str]:
        if self._mode == "assign":
            return sorted({q.topic or "" for q in self._assigned_wanted})
        return self._core.subscriptions.topics()

    def _subscription_for(self, topic: str) -> SubscriptionData | None:
        return self._core.subscriptions.get(topic) if self._mode == "subscribe" else None

    def _apply_assignment(self) -> None:
        wanted = set(self._assigned_wanted)
        for queue in list(self._fetcher.queues):
            if queue not in wanted:
                self._core.client.spawn(self._fetcher.remove(queue), "stop-fetcher")
        for queue in self._assigned_wanted:
            if queue not in self._fetcher.queues:
                self._fetcher.add(queue)

    def _owned(self, topic: str) -> set[MessageQueue]:
        return {queue for queue in self._fetcher.queues if queue.topic == topic}

    async def _release(self, queue: MessageQueue) -> bool:
        state = await self._fetcher.remove(queue)
        if state is None:
            return True
        offsets = self._core.offsets
        if self.auto_commit and state.consume_offset >= 0:
            offsets.update(queue, state.consume_offset, increase_only=False)
        try:
            await offsets.persist(queue)
        except (ConsumerError, RemotingError) as exc:
            logger.warning("committing the offset of released %s failed: %s", queue, exc)
        offsets.remove(queue)
        self._core.puller.forget(queue)
        return True

    async def _acquire(self, queue: MessageQueue) -> bool:
        self._core.offsets.remove(queue)
        self._fetcher.add(queue)
        return True

    async def _changed(self, topic: str, all_queues: list[MessageQueue], owned: list[MessageQueue]) -> None:
        """Nothing to announce: lite pulls carry their subscription."""

    def _user_listener(self, topic: str, all_queues: list[MessageQueue], owned: list[MessageQueue]) -> None:
        if self._rebalance_listener is not None:
            core = self._core
            self._rebalance_listener(
                core.user_queue(MessageQueue(topic=topic)).topic or topic,
                [core.user_queue(q) for q in all_queues],
                [core.user_queue(q) for q in owned],
            )

    def _commit_consumed(self) -> list[MessageQueue]:
        """Move every queue's consumed offset into the offset store (persisted by the timer)."""
        consumed = self._fetcher.consumed()
        for queue, offset in consumed.items():
            self._core.offsets.update(queue, offset, increase_only=False)
        return list(consumed)

    async def _persist_offsets(self) -> None:
        await self._core.offsets.persist_all(list(self._fetcher.queues))

    async def _after_subscription_change(self, added: SubscriptionData) -> None:
        core = self._core
        await core.refresh_subscribed_routes()
        if await core.refused_while_running(added):
            if self._rebalancer is not None:
                await self._rebalancer.release_all(added.topic or "")
            return
        await core.client.heartbeat_all()
        if self._rebalancer is not None:
            self._rebalancer.request()

    async def _on_reset_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        table = self._core.reset_request(request)
        if table and self._state == "running":
            self._core.client.spawn(self._reset_offsets(table), "reset-offsets")
        return None

    async def _reset_offsets(self, table: dict[MessageQueue, int]) -> None:
        """An operator reset the group's offsets: held queues move there as by :meth:`seek` (without the
        range check: the broker computed them), and the new offsets are committed."""
        offsets = self._core.offsets
        for queue, offset in table.items():
            state = self._fetcher.queues.get(queue)
            if state is not None:
                self._fetcher.move(state, offset)
            offsets.update(queue, offset, increase_only=False)
        try:
            await offsets.persist_all(list(self._fetcher.queues) + list(table), oneway=False)
        except (ConsumerError, RemotingError) as exc:
            logger.warning("committing reset offsets failed: %s", exc)

    async def _on_ids_changed(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if self._rebalancer is not None:
            self._rebalancer.request()
        return None

    # -- what operators ask (relayed by a broker) ----------------------------------------------------------

    async def running_info(self) -> ConsumerRunningInfo:
        """What GET_CONSUMER_RUNNING_INFO answers (without ``jstack``), as Java's lite pull consumer does:
        settings by their Java names and subscriptions, and from 5.x on the queues read and their windows
        (no per-topic figures: Java keeps none for this consumer)."""
        core = self._core
        fields = [
            *running_info.lite_fields(core, self._strategy_label, self.auto_commit),
            *running_info.client_fields(core),
            (PROP_CONSUMER_START_TIMESTAMP, core.start_timestamp_ms),
            *running_info.instance_fields(core, core.consume_type),
        ]
        held = (
            [(queue, state.pq) for queue, state in self._fetcher.queues.items()]
            if commands.is_v5(core.config.version)
            else []
        )
        return await running_info.build(core, running_info.java_properties(fields), held, with_status=False)

    async def _on_running_info(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return await running_info.answer(request, self._core, self.running_info)

    async def _on_consume_directly(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        """Only push consumers have a listener to hand the message to; Java's client answers a lite pull
        consumer's group as one it does not run."""
        core = self._core
        return await direct.answer(request, group=core.wire_group, version=core.config.version, consume=None)


def _as_queue(queue: Any) -> MessageQueue:
    """Accept the wire ``MessageQueue`` or anything with the same three attributes (the producer's)."""
    if isinstance(queue, MessageQueue):
        return queue
    return MessageQueue(topic=queue.topic, broker_name=queue.broker_name, queue_id=queue.queue_id)
