"""What a test sees of a running RocketMQ cluster, wherever its servers run.

:class:`RocketMQCluster` is the same object for the embedded NameServer and Brokers (:func:`start_embedded`)
and for Apache's servers in a container (:func:`attach`): addresses, a ready blocking producer and admin
for sync tests, fresh asyncio clients for async ones, topic creation that returns once the NameServer
routes the topic, and a read of a topic that returns once enough messages are there.

Everything the cluster does itself runs on one event loop in a thread of its own (the embedded servers too),
so a session-scoped cluster serves every test whatever event loop the test runs on: sync tests block on it,
async tests await it (the ``*_async`` methods) without blocking their own loop. :meth:`RocketMQCluster.close`
stops the clients it made, the servers or container it owns, and that thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar

from rocketmq_wire.transport.loop_thread import LoopThread

if TYPE_CHECKING:
    from admin import Admin, BlockingAdmin
    from broker.local_cluster import LocalCluster, LocalClusterSettings
    from producer import BlockingProducer, Producer
    from rocketmq_wire.message import MessageExt

logger = logging.getLogger("rocketmq_testing.cluster")

T = TypeVar("T")

#: A check of the NameServer's answers, and how a backend waits until it holds (or raises TimeoutError).
RouteWait = Callable[[Callable[[], Awaitable[bool]], float], Awaitable[None]]

DEFAULT_QUEUES = 4
#: Seconds a topic may take to appear in the NameServer's route, or messages to arrive, by default: long
#: enough for a loaded CI machine, short enough that a test which will never see them fails soon.
DEFAULT_TIMEOUT_S = 15.0
#: Between two looks at the NameServer or a topic when nothing can be waited on.
POLL_PAUSE_S = 0.1
#: The producer group of :attr:`RocketMQCluster.producer`.
PRODUCER_GROUP = "rocketmq-testing-producer"
#: What every thread of the clusters' own loops is called (a test can check none is left).
THREAD_NAME = "rocketmq-testing-cluster"


class MessagesNotArrived(AssertionError):
    """Fewer messages than a test waited for were in the topic when its time was up."""


def unique_group(prefix: str) -> str:
    """A consumer or producer group nobody else uses (reads of a topic must not share offsets)."""
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


async def _poll_until(check: Callable[[], Awaitable[bool]], timeout_s: float) -> None:
    """Ask ``check`` again every :data:`POLL_PAUSE_S` until it holds; a backend with no registration
    events to wait on (a container) waits this way."""
    async with asyncio.timeout(timeout_s):
        while not await check():
            await asyncio.sleep(POLL_PAUSE_S)


class RocketMQCluster:
    """A running NameServer and its brokers, as a test uses them.

    Build one with :func:`start_embedded` or :func:`attach` (or take the ``rocketmq_cluster`` fixture);
    use it in a ``with`` block or call :meth:`close`.
    """

    def __init__(
        self,
        thread: LoopThread,
        *,
        namesrv_addr: str,
        cluster_name: str,
        broker_addrs: dict[str, str],
        wait_for_route: RouteWait,
        stop: Callable[[], Coroutine[Any, Any, None]] | None = None,
    ) -> None:
        self._thread = thread
        self._namesrv_addr = namesrv_addr
        self._cluster_name = cluster_name
        self._broker_addrs = dict(broker_addrs)
        self._wait_for_route = wait_for_route
        self._stop = stop
        self._lock = threading.Lock()
        self._producer: BlockingProducer | None = None
        self._admin: BlockingAdmin | None = None
        self._helper: Admin | None = None
        self._closed = False

    # -- what the servers are ----------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        """``host:port`` of the NameServer: what producers, consumers and the admin are given."""
        return self._namesrv_addr

    @property
    def cluster_name(self) -> str:
        return self._cluster_name

    @property
    def broker_addrs(self) -> dict[str, str]:
        """Broker name -> the address it registered (a copy)."""
        return dict(self._broker_addrs)

    # -- ready clients -----------------------------------------------------------------------------------

    @property
    def producer(self) -> BlockingProducer:
        """A started blocking producer (group :data:`PRODUCER_GROUP`), made on first use, shut down by
        :meth:`close`. Async tests use :meth:`async_producer` instead."""
        with self._lock:
            self._check_open()
            if self._producer is None:
                from producer import BlockingProducer

                made = BlockingProducer(PRODUCER_GROUP, self._namesrv_addr)
                made.start()
                self._producer = made
            return self._producer

    @property
    def admin(self) -> BlockingAdmin:
        """A started blocking admin client, made on first use, closed by :meth:`close`."""
        with self._lock:
            self._check_open()
            if self._admin is None:
                from admin import BlockingAdmin

                made = BlockingAdmin(self._namesrv_addr)
                made.start()
                self._admin = made
            return self._admin

    def async_producer(self, group: str | None = None, **settings: Any) -> Producer:
        """A new asyncio producer for this cluster, not started: ``async with cluster.async_producer() as
        p:`` in an async test (it belongs to the test's event loop, which a shared one could not)."""
        from producer import Producer

        return Producer(group or unique_group("rocketmq-testing"), self._namesrv_addr, **settings)

    def async_admin(self) -> Admin:
        """A new asyncio admin client for this cluster, not started: ``async with cluster.async_admin()``."""
        from admin import Admin

        return Admin(self._namesrv_addr)

    # -- topics and messages -----------------------------------------------------------------------------

    def create_topic(
        self, name: str, queues: int = DEFAULT_QUEUES, *, timeout: float = DEFAULT_TIMEOUT_S, **settings: Any
    ) -> None:
        """Create ``name`` with ``queues`` read and write queues on every broker of the cluster, and return
        once the NameServer routes it so (the next send or subscription finds every queue). ``settings``
        go to :meth:`admin.Admin.create_topic` (``order=True``, ``attributes={...}``)."""
        self._run(self._create_topic(name, queues, timeout, settings))

    async def create_topic_async(
        self, name: str, queues: int = DEFAULT_QUEUES, *, timeout: float = DEFAULT_TIMEOUT_S, **settings: Any
    ) -> None:
        """:meth:`create_topic` for async tests: awaits without blocking the test's event loop."""
        await self._await(self._create_topic(name, queues, timeout, settings))

    def wait_for_messages(
        self, topic: str, count: int, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> list[MessageExt]:
        """Every message of ``topic`` (read from each queue's start by a consumer group of its own), once
        there are at least ``count``; ordered by broker (its store address), queue and queue offset. Raises
        :class:`MessagesNotArrived` (an ``AssertionError``) when fewer are there after ``timeout`` s."""
        return self._run(self._read(topic, count, timeout))

    async def wait_for_messages_async(
        self, topic: str, count: int, *, timeout: float = DEFAULT_TIMEOUT_S
    ) -> list[MessageExt]:
        """:meth:`wait_for_messages` for async tests: awaits without blocking the test's event loop."""
        return await self._await(self._read(topic, count, timeout))

    # -- lifecycle ---------------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Shut the clients down, stop the servers (or container) and the cluster's thread; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            producer, admin = self._producer, self._admin
            self._producer = self._admin = None
        try:
            if producer is not None:
                producer.shutdown()
            if admin is not None:
                admin.close()
            self._thread.run(self._close_on_loop())
        finally:
            self._thread.stop()

    async def _close_on_loop(self) -> None:
        helper, self._helper = self._helper, None
        try:
            if helper is not None:
                await helper.close()
        finally:
            if self._stop is not None:
                await self._stop()

    # -- on the cluster's loop ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("this RocketMQ cluster was closed")

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise RuntimeError("this RocketMQ cluster was closed")
        return self._thread.run(coro)

    async def _await(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise RuntimeError("this RocketMQ cluster was closed")
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._thread.loop))

    async def _admin_on_loop(self) -> Admin:
        """The cluster's own asyncio admin (topic creation, route checks), on the cluster's loop."""
        if self._helper is None:
            from admin import Admin

            helper = Admin(self._namesrv_addr)
            await helper.start()
            self._helper = helper
        return self._helper

    async def _create_topic(self, name: str, queues: int, timeout: float, settings: dict[str, Any]) -> None:
        from admin import TopicNotFoundError

        admin = await self._admin_on_loop()
        written = await admin.create_topic(
            name, cluster=self._cluster_name, read_queue_nums=queues, write_queue_nums=queues, **settings
        )
        on = [broker for broker, addr in self._broker_addrs.items() if addr in written]

        async def routed() -> bool:
            try:
                route = await admin.topic_route(name)
            except TopicNotFoundError:
                return False
            counts = {data.broker_name: data.write_queue_nums for data in route.queue_datas}
            return all(counts.get(broker) == queues for broker in on)

        try:
            await self._wait_for_route(routed, timeout)
        except TimeoutError:
            raise TimeoutError(
                f"topic {name} was created on {written}, but the NameServer {self._namesrv_addr} did not "
                f"route {queues} queues on each within {timeout:.0f} s"
            ) from None

    async def _read(self, topic: str, count: int, timeout: float) -> list[MessageExt]:
        from consumer import ConsumeFromWhere, ConsumerError, MessageQueue, PullConsumer

        deadline = time.monotonic() + timeout
        found: list[MessageExt] = []
        queues: list[MessageQueue] = []
        consumer = PullConsumer(
            unique_group("rocketmq-testing-reader"),
            self._namesrv_addr,
            consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
            auto_commit=False,
        )
        async with consumer:
            while len(found) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise MessagesNotArrived(
                        f"{len(found)} of {count} messages of {topic} were there after {timeout:.0f} s "
                        f"(queues read: {sorted((q.broker_name, q.queue_id) for q in queues)})"
                    )
                # The route grows when a topic is created by its first send, or reaches a second broker.
                latest: list[MessageQueue] = []
                with contextlib.suppress(ConsumerError):
                    latest = await consumer.fetch_message_queues(topic)
                added = [queue for queue in latest if queue not in queues]
                if added:
                    queues = [*queues, *added]
                    consumer.assign(queues)
                    for queue in added:
                        await consumer.seek_to_begin(queue)
                if not queues:
                    await asyncio.sleep(min(POLL_PAUSE_S, left))
                    continue
                found += await consumer.poll(timeout=min(left, 1.0))
        return sorted(found, key=lambda m: (m.store_host, m.queue_id, m.queue_offset))


def start_embedded(
    store_dir: Path,
    *,
    brokers: int = 1,
    cluster_name: str = "DefaultCluster",
    broker_name: str = "broker-a",
    **broker_settings: Any,
) -> RocketMQCluster:
    """The project's NameServer and ``brokers`` Brokers (named ``broker-a``, ``broker-b``, ...) on loopback,
    on free ports, storing under ``store_dir``, served from the returned cluster's thread.

    ``broker_settings`` are :class:`broker.BrokerConfig` fields by their Python names. The send queue's
    wait (``wait_time_mills_in_send_queue``) defaults to 1 s rather than Apache's 200 ms: a test machine
    busy with other work would otherwise see sends refused as busy.
    """
    from broker.local_cluster import LocalClusterSettings

    settings = LocalClusterSettings(
        store_dir=store_dir,
        cluster_name=cluster_name,
        broker_name=broker_name,
        brokers=brokers,
        broker_settings={"wait_time_mills_in_send_queue": 1000, **broker_settings},
    )
    thread = LoopThread(THREAD_NAME)
    try:
        local = thread.run(_start_local(settings))
    except BaseException:
        thread.stop()
        raise

    async def stop() -> None:
        await local.close()

    return RocketMQCluster(
        thread,
        namesrv_addr=local.namesrv_address,
        cluster_name=cluster_name,
        broker_addrs=local.broker_addresses,
        wait_for_route=local.wait_for_route,
        stop=stop,
    )


async def _start_local(settings: LocalClusterSettings) -> LocalCluster:
    """Make and start the servers on the cluster's loop (their sockets and events belong to it)."""
    from broker.local_cluster import LocalCluster

    local = LocalCluster(settings)
    await local.start()
    return local


def attach(
    namesrv_addr: str,
    *,
    cluster_name: str = "DefaultCluster",
    stop: Callable[[], None] | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
) -> RocketMQCluster:
    """A cluster running elsewhere (a container, a test environment): its brokers are read from the
    NameServer; ``stop`` (run by :meth:`RocketMQCluster.close`, in a worker thread) ends it."""
    thread = LoopThread(THREAD_NAME)
    try:
        brokers = thread.run(_brokers_of(namesrv_addr, cluster_name, timeout))
    except BaseException:
        thread.stop()
        raise

    async def stop_async() -> None:
        if stop is not None:
            await asyncio.to_thread(stop)

    return RocketMQCluster(
        thread,
        namesrv_addr=namesrv_addr,
        cluster_name=cluster_name,
        broker_addrs=brokers,
        wait_for_route=_poll_until,
        stop=stop_async,
    )


async def _brokers_of(namesrv_addr: str, cluster_name: str, timeout: float) -> dict[str, str]:
    """Name -> master address of every broker of ``cluster_name`` that has registered a master."""
    from admin import Admin

    found: dict[str, str] = {}
    async with Admin(namesrv_addr) as admin:

        async def registered() -> bool:
            info = await admin.cluster_info()
            for name in info.cluster_addr_table.get(cluster_name, []):
                data = info.broker_addr_table.get(name)
                master = None if data is None else data.master_addr()
                if master:
                    found[name] = master
            return bool(found)

        try:
            await _poll_until(registered, timeout)
        except TimeoutError:
            raise TimeoutError(
                f"no broker of cluster {cluster_name} registered with {namesrv_addr} within {timeout:.0f} s"
            ) from None
    return found
