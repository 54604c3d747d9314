"""The asyncio admin client: one object holding the connections, with a method per mqadmin operation.

Each operation lives in a module of its own (``cluster``, ``topics``, ``brokers``, ``consumers``,
``messages``) as a function of the request layer; this class owns that layer (one remoting client, so one
connection per server, and its signing credentials) and gives the functions a stable home.
"""

from __future__ import annotations

import ssl as ssl_module
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Self

from admin import brokers, cluster, consumers, messages, topics
from admin.errors import AdminError
from admin.models import (
    BrokerAddress,
    ClientConnection,
    ConsumerConnections,
    ConsumerProgress,
    OffsetReset,
    PullResult,
    TopicDeleted,
    TopicStatus,
)
from admin.rpc import AdminRpc
from producer.namesrv import parse_namesrv_list
from rocketmq_wire.bodies import ClusterInfo, ConsumerRunningInfo, TopicRouteData
from rocketmq_wire.codes import SerializeType
from rocketmq_wire.headers.base import JAVA_LONG_MAX as LONG_MAX
from rocketmq_wire.message import MessageExt
from rocketmq_wire.topics import TOOLS_CONSUMER_GROUP

#: Timeout of each request, as the brief of the command line tools has it (mqadmin itself waits 20 s).
DEFAULT_TIMEOUT_MS = 3000


class Admin:
    """Administers a RocketMQ cluster through its NameServers: ``async with Admin("ns:9876") as admin``.

    ``namesrv`` is Java's ``namesrvAddr`` (``"host:port;host:port"``) or a list. With ``access_key`` and
    ``secret_key`` every request is signed for brokers with ACL enabled. Every request waits at most
    ``timeout_ms``. Failures raise :class:`~admin.errors.AdminError` subclasses.
    """

    def __init__(
        self,
        namesrv: str | Sequence[str],
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        ssl: ssl_module.SSLContext | None = None,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        try:
            self.namesrv_addresses = parse_namesrv_list(
                namesrv if isinstance(namesrv, str) else list(namesrv)
            )
        except ValueError as exc:
            raise AdminError(str(exc)) from None
        if timeout_ms <= 0:
            raise AdminError("timeout_ms must be positive")
        self._settings = (access_key, secret_key, security_token, timeout_ms, ssl, serialize_type)
        self._rpc: AdminRpc | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Set up the request layer; nothing connects until the first request."""
        if self._closed:
            raise AdminError("this admin client was closed; create a new one")
        if self._rpc is None:
            access_key, secret_key, token, timeout_ms, ssl, serialize_type = self._settings
            try:
                self._rpc = AdminRpc(
                    self.namesrv_addresses,
                    timeout_ms=timeout_ms,
                    access_key=access_key,
                    secret_key=secret_key,
                    security_token=token,
                    ssl=ssl,
                    serialize_type=serialize_type,
                )
            except ValueError as exc:
                raise AdminError(str(exc)) from None

    async def close(self) -> None:
        """Close every connection; idempotent."""
        self._closed = True
        if self._rpc is not None:
            await self._rpc.close()

    @property
    def rpc(self) -> AdminRpc:
        """The request layer, for requests this class has no method for."""
        if self._rpc is None:
            raise AdminError("the admin client is not started (use `async with Admin(...)` or start())")
        return self._rpc

    # -- NameServer ------------------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return await cluster.cluster_info(self.rpc)

    async def brokers(
        self, cluster_name: str | None = None, *, masters_only: bool = False
    ) -> list[BrokerAddress]:
        """Every broker process of a cluster (of all clusters when ``None``)."""
        return await cluster.cluster_brokers(self.rpc, cluster_name, masters_only=masters_only)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """Raises :class:`~admin.errors.TopicNotFoundError` when no NameServer knows the topic."""
        return await cluster.topic_route(self.rpc, topic)

    async def topic_list(self) -> list[str]:
        return await cluster.topic_list(self.rpc)

    async def kv_get(self, namespace: str, key: str) -> str | None:
        return await cluster.kv_get(self.rpc, namespace, key)

    async def kv_list(self, namespace: str) -> dict[str, str]:
        return await cluster.kv_list(self.rpc, namespace)

    async def kv_put(self, namespace: str, key: str, value: str) -> list[str]:
        return await cluster.kv_put(self.rpc, namespace, key, value)

    async def kv_delete(self, namespace: str, key: str) -> list[str]:
        return await cluster.kv_delete(self.rpc, namespace, key)

    # -- topics ----------------------------------------------------------------------------------------

    async def create_topic(
        self,
        topic: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        read_queue_nums: int = topics.DEFAULT_QUEUE_NUMS,
        write_queue_nums: int = topics.DEFAULT_QUEUE_NUMS,
        perm: int = topics.DEFAULT_PERM,
        order: bool = False,
    ) -> list[str]:
        """Create or update on every master of ``cluster`` or on ``broker_addr``; returns the addresses."""
        return await topics.create_topic(
            self.rpc,
            topic,
            cluster=cluster,
            broker_addr=broker_addr,
            read_queue_nums=read_queue_nums,
            write_queue_nums=write_queue_nums,
            perm=perm,
            order=order,
        )

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> TopicDeleted:
        return await topics.delete_topic(self.rpc, topic, cluster=cluster)

    async def topic_status(self, topic: str) -> TopicStatus:
        return await topics.topic_status(self.rpc, topic)

    # -- brokers ---------------------------------------------------------------------------------------

    async def broker_runtime_stats(self, broker_addr: str) -> dict[str, str]:
        return await brokers.runtime_stats(self.rpc, broker_addr)

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        return await brokers.broker_config(self.rpc, broker_addr)

    async def update_broker_config(self, broker_addr: str, settings: Mapping[str, str]) -> None:
        await brokers.update_broker_config(self.rpc, broker_addr, settings)

    # -- groups ----------------------------------------------------------------------------------------

    async def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        return await consumers.consumer_progress(self.rpc, group, topic)

    async def consumer_connections(self, group: str) -> ConsumerConnections:
        return await consumers.consumer_connections(self.rpc, group)

    async def consumer_running_info(
        self, group: str, client_id: str, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """One member's own report (GET_CONSUMER_RUNNING_INFO, relayed by a broker of the group)."""
        return await consumers.consumer_running_info(self.rpc, group, client_id, jstack=jstack)

    async def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        return await consumers.producer_connections(self.rpc, group, topic)

    async def update_consumer_offset(
        self, group: str, topic: str, queue_id: int, offset: int, *, broker_name: str | None = None
    ) -> str:
        return await consumers.update_consumer_offset(
            self.rpc, group, topic, queue_id, offset, broker_name=broker_name
        )

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> list[OffsetReset]:
        return await consumers.reset_offset_by_time(self.rpc, group, topic, timestamp_ms, force=force)

    # -- messages --------------------------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str, topic: str | None = None) -> MessageExt:
        return await messages.view_message(self.rpc, offset_msg_id, topic)

    async def get_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return await messages.get_message(self.rpc, msg_id, topic)

    async def query_by_key(
        self, topic: str, key: str, *, max_num: int | None = None, begin_ms: int = 0, end_ms: int = LONG_MAX
    ) -> list[MessageExt]:
        return await messages.query_messages(
            self.rpc, topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms
        )

    async def query_by_unique_key(self, topic: str, unique_key: str) -> list[MessageExt]:
        return await messages.query_messages(self.rpc, topic, unique_key, unique=True)

    async def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        broker_name: str | None = None,
        max_nums: int = 32,
        group: str = TOOLS_CONSUMER_GROUP,
    ) -> PullResult:
        return await messages.pull(
            self.rpc, topic, queue_id, offset, broker_name=broker_name, max_nums=max_nums, group=group
        )
