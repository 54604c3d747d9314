"""Telling NameServers this broker exists and which topics it serves (Apache's ``BrokerOuterAPI``).

REGISTER_BROKER carries the whole topic table (a ``TopicConfigSerializeWrapper`` in plain JSON, its CRC32 in
the header) and goes to every configured NameServer at start, every ``registerNameServerPeriod`` and after
each topic change; UNREGISTER_BROKER goes out on shutdown. A NameServer that is down only costs a log line:
the next cycle tries again. The answer's ``ORDER_TOPIC_CONFIG`` table tells the broker which topics are
ordered, which matters when its write permission is taken away.

A request that made a topic (a send to a new topic, UPDATE_AND_CREATE_TOPIC, a heartbeat that brings a retry
topic) is answered only once the round after it has ended, as Apache registers inside such a request: whoever
has the answer can find the route.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import zlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

from broker.config import BrokerConfig
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.namesrv import (
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
)
from rocketmq_wire.perm import is_readable, is_writeable
from rocketmq_wire.transport import RemotingClient, RemotingError

log = logging.getLogger("broker.registration")

T = TypeVar("T")

#: Apache clamps the registration period to this range.
MIN_PERIOD_MS = 10_000
MAX_PERIOD_MS = 60_000


@dataclasses.dataclass(frozen=True, slots=True)
class RegistrationResult:
    namesrv: str
    ok: bool
    master_addr: str | None = None
    ha_server_addr: str | None = None
    order_topics: frozenset[str] = frozenset()
    error: str | None = None


def body_crc32(body: bytes) -> int:
    """``UtilAll.crc32``: CRC-32 with the sign bit cleared."""
    return zlib.crc32(body) & 0x7FFFFFFF


class NameServerRegistration:
    def __init__(self, config: BrokerConfig, topics: TopicConfigManager, client: RemotingClient) -> None:
        self._config = config
        self._topics = topics
        self._client = client
        self.last_results: list[RegistrationResult] = []
        self._listeners: list[Callable[[list[RegistrationResult]], None]] = []

    def on_registered(self, listener: Callable[[list[RegistrationResult]], None]) -> None:
        """Call ``listener(results)`` after every registration round (monitoring, tests)."""
        self._listeners.append(listener)

    @property
    def period_ms(self) -> int:
        return max(MIN_PERIOD_MS, min(self._config.register_name_server_period, MAX_PERIOD_MS))

    def _register_request(self) -> RemotingCommand:
        config = self._config
        wrapper = self._topics.wrapper()
        permission = config.broker_permission
        if not (is_readable(permission) and is_writeable(permission)):
            # A broker made read-only (or write-only) through brokerPermission shows every topic so: this is
            # how operators drain a broker, clients follow the routes. 5.x keeps what the topic itself
            # forbids (4.x put the broker's permission in its place).
            for topic in wrapper.topic_config_table.values():
                topic.perm &= permission
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode(compressed=False)
        header = RegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=config.broker_addr,
            cluster_name=config.broker_cluster_name,
            ha_server_addr=config.ha_server_addr,
            broker_id=config.broker_id,
            compressed=False,
            body_crc32=body_crc32(body),
        )
        return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)

    async def register_all(self) -> list[RegistrationResult]:
        """Register with every NameServer at once; returns how each one answered."""
        addrs = self._config.namesrv_addrs
        if not addrs:
            return []
        results = list(await asyncio.gather(*(self._register_one(addr) for addr in addrs)))
        order_topics: set[str] = set()
        for result in results:
            order_topics |= result.order_topics
        if any(result.ok for result in results):
            self._topics.order_topics = frozenset(order_topics)
        self.last_results = results
        for listener in list(self._listeners):
            try:
                listener(results)
            except Exception:
                log.exception("registration listener failed")
        return results

    async def _register_one(self, addr: str) -> RegistrationResult:
        request = self._register_request()
        try:
            answer = await self._client.invoke(addr, request, self._config.register_broker_timeout_mills)
        except RemotingError as exc:
            log.warning("registering with NameServer %s failed: %s", addr, exc)
            return RegistrationResult(addr, False, error=str(exc))
        if answer.code != ResponseCode.SUCCESS:
            log.warning("NameServer %s refused the registration: %d %s", addr, answer.code, answer.remark)
            return RegistrationResult(addr, False, error=f"{answer.code} {answer.remark}")
        try:
            header = answer.read_header(RegisterBrokerResponseHeader)
            table = KVTable.from_json(answer.body).table if answer.body else {}
        except CodecError as exc:
            log.warning("NameServer %s answered the registration with something unreadable: %s", addr, exc)
            return RegistrationResult(addr, True)
        log.debug("registered with NameServer %s", addr)
        return RegistrationResult(addr, True, header.master_addr, header.ha_server_addr, frozenset(table))

    async def unregister_all(self) -> None:
        config = self._config
        header = UnRegisterBrokerRequestHeader(
            broker_name=config.broker_name,
            broker_addr=config.broker_addr,
            cluster_name=config.broker_cluster_name,
            broker_id=config.broker_id,
        )

        async def one(addr: str) -> None:
            try:
                answer = await self._client.invoke(
                    addr, RemotingCommand.request(RequestCode.UNREGISTER_BROKER, header), 3000
                )
            except RemotingError as exc:
                log.warning("unregistering from NameServer %s failed: %s", addr, exc)
                return
            if answer.code == ResponseCode.SUCCESS:
                log.info("unregistered from NameServer %s", addr)
            else:
                log.warning("NameServer %s refused to unregister us: %d %s", addr, answer.code, answer.remark)

        await asyncio.gather(*(one(addr) for addr in config.namesrv_addrs))


class ChangeAnnouncer:
    """Registers again after each topic change (one round at a time; changes made during a round get one
    more round) and lets a request wait for the round that covers its change.

    Apache registers inside the request that created or changed a topic -- a send to a new topic, a consumer's
    retry topic, UPDATE_AND_CREATE_TOPIC -- so a client that has its answer finds the topic's route at the
    NameServers straight away (send, then subscribe). A processor here keeps that promise by reading
    :attr:`changes` before its work and awaiting :meth:`announced_since` after it.
    """

    def __init__(self, register: Callable[[], Awaitable[object]]) -> None:
        self._register = register
        self._task: asyncio.Task[None] | None = None
        self._again = False
        #: Topic changes seen so far; a processor compares readings to learn whether its request made one.
        self.changes = 0
        self._covered = 0
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    def changed(self) -> None:
        self.changes += 1
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.create_task(self._rounds(), name="register-on-change")

    async def announced_since(self, seen: int) -> None:
        """Return at once if nothing changed since ``seen``; else once a round begun after the latest change
        has ended. A round that a NameServer refused or missed counts too: as in Apache, the answer then goes
        out anyway and the route follows with the next periodic registration."""
        if self.changes == seen or self._covered >= self.changes or self._task is None:
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append((self.changes, waiter))
        await waiter

    async def announcing(self, work: Awaitable[T]) -> T:
        """``work``'s result, once the NameServers have heard of any topic change it made."""
        seen = self.changes
        result = await work
        await self.announced_since(seen)
        return result

    async def close(self) -> None:
        """Stop the round under way (shutdown); whoever waits for it is let go."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._release(self.changes)

    async def _rounds(self) -> None:
        while True:
            self._again = False
            covering = self.changes
            try:
                await self._register()
            except Exception:
                log.exception("registering after a topic change failed")
            self._covered = covering
            self._release(covering)
            if not self._again:
                return

    def _release(self, covered: int) -> None:
        still: list[tuple[int, asyncio.Future[None]]] = []
        for target, waiter in self._waiters:
            if target > covered:
                still.append((target, waiter))
            elif not waiter.done():
                waiter.set_result(None)
        self._waiters = still
