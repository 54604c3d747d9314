"""One client instance per event loop and client id, as Apache's ``MQClientInstance`` is.

Why it exists: a broker keys clients by client id (``ip@instanceName``). Java gives every producer, consumer
and admin that share a client id ONE ``MQClientInstance``: one connection per broker, one NameServer client
and topic route table, one heartbeat naming every group of the client id (``HeartbeatData`` with its
``producerDataSet`` and ``consumerDataSet``), one route refresh for the union of their topics. When each of
ours had its own, two producers configured with the same ``instance_name`` announced the same client id over
two connections with two heartbeats, each listing one group: the broker's connection table kept whichever
came last, and ``producerConnection``/``consumerConnection`` and transaction checks went astray.

So producers and consumers (and the admin, with an instance name of its own, as Java's admin has) join a
:class:`ClientInstance` by group; the instance holds the :class:`RemotingClient`, answers requests brokers
send the client by handing them to the member of the group they name, and closes when its last member
leaves (reference counted). A second member with a group already present is refused, as Java refuses
"The producer group has been created before".

Instances live in a registry keyed by the running event loop, then the client id: two event loops (two
threads, e.g. two blocking producers) never share connections or timers, which belong to one loop; producers
with different instance names get different instances, as in Java. Settings that belong to the instance
(serialization, version and signing of its heartbeats and route requests, TLS, intervals) are those of the
member that created it, again as in Java; each member still stamps and signs its own requests with its own
settings (``member_rpc``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
import random
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from client.errors import BrokerVersionError, ClientStateError, DuplicateGroupError
from client.heartbeat import heartbeat_body, heartbeat_request, unregister_request
from client.identity import client_id, default_instance_name, resolve_ip
from client.namesrv import NameServerClient
from client.replies import ReplyWaiters
from client.rpc import ClientRpc
from client.settings import ClientSettings
from client.timers import run_periodically
from rocketmq_wire.bodies.heartbeat import ConsumerData
from rocketmq_wire.bodies.route import MASTER_ID, TopicRouteData
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import const as props
from rocketmq_wire.message import decode_message
from rocketmq_wire.topics import CLIENT_INNER_PRODUCER_GROUP
from rocketmq_wire.transport import Connection, Handler, Outcome, RemotingClient, RemotingError

logger = logging.getLogger("client.instance")


class MemberKind(enum.Enum):
    """What a member is: it decides which heartbeat set it is in and which UNREGISTER_CLIENT it sends."""

    PRODUCER = "producer"
    CONSUMER = "consumer"
    ADMIN = "admin"


def _no_topics() -> list[str]:
    return []


def _ignore_route(topic: str, route: TopicRouteData | None) -> None:
    return None


@dataclasses.dataclass(eq=False)
class Member:
    """One producer, consumer or admin on an instance.

    ``handlers`` serve the requests brokers send to the member (by request code); ``topics()`` are the topics
    whose routes the periodic refresh fetches for it, and ``on_route(topic, route)`` hands it each fetched
    route (``None``: the NameServers no longer know the topic). ``consumer_data()`` is a consumer's entry in
    the heartbeat.
    """

    kind: MemberKind
    group: str
    handlers: Mapping[int, Handler] = dataclasses.field(default_factory=dict)
    topics: Callable[[], Iterable[str]] = _no_topics
    on_route: Callable[[str, TopicRouteData | None], None] = _ignore_route
    consumer_data: Callable[[], ConsumerData | None] | None = None


#: Instances by event loop, then client id. Weak in the loop, so a closed and dropped loop takes its
#: (necessarily dead) instances with it instead of handing them to a later loop.
_REGISTRY: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, ClientInstance]] = (
    weakref.WeakKeyDictionary()
)


def instances() -> dict[str, ClientInstance]:
    """The open instances of the running event loop, by client id (a snapshot)."""
    return dict(_REGISTRY.get(asyncio.get_running_loop(), {}))


def join_instance(
    client_id: str,
    namesrv_addrs: list[str],
    settings: ClientSettings,
    member: Member,
    *,
    rng: random.Random | None = None,
) -> ClientInstance:
    """The instance of ``client_id`` on the running loop, created if there is none, with ``member`` on it.

    Raises :class:`DuplicateGroupError` when the instance already has a member of that kind and group (an
    instance created for the occasion is then dropped again).
    """
    loop = asyncio.get_running_loop()
    by_id = _REGISTRY.setdefault(loop, {})
    instance = by_id.get(client_id)
    created = instance is None
    if instance is None:
        instance = ClientInstance(client_id, namesrv_addrs, settings, rng=rng or random.Random())
        by_id[client_id] = instance
    try:
        instance.register(member)
    except DuplicateGroupError:
        if created:
            del by_id[client_id]
        raise
    if created:
        instance.start()
    elif namesrv_addrs != instance.namesrv.addresses:
        logger.warning(
            "client %s: a member asked for NameServers %s; the instance keeps %s (one instance, one list)",
            client_id,
            namesrv_addrs,
            instance.namesrv.addresses,
        )
    return instance


def join_standalone(
    namesrv_addrs: list[str],
    settings: ClientSettings,
    name: str,
    *,
    rng: random.Random | None = None,
) -> tuple[ClientInstance, Member]:
    """A client instance of its own for a tool that registers no group with brokers (the admin, the Spark
    source), under a fresh instance name unless ``settings`` names one; returns it with the tool's member,
    which :meth:`ClientInstance.leave` takes to close it.

    Java's admin has such an instance too: NameServer fail-over and connections as every client has them,
    no heartbeat (the instance sends none without a producer or consumer).
    """
    member = Member(MemberKind.ADMIN, name)
    instance = join_instance(
        client_id(resolve_ip(settings.client_ip), settings.instance_name or default_instance_name()),
        namesrv_addrs,
        settings,
        member,
        rng=rng,
    )
    return instance, member


def _request_group(request: RemotingCommand) -> str | None:
    """The group a broker's request is about: the header's group, or for a transaction check the producer
    group stamped in the message (Java's ``ClientRemotingProcessor`` picks the member the same way)."""
    if request.code == RequestCode.CHECK_TRANSACTION_STATE:
        try:
            message, _ = decode_message(request.body)
        except CodecError:
            return None
        return message.get_property(props.PGROUP)
    fields = request.fields()
    for name in ("consumerGroup", "group", "producerGroup"):
        if name in fields:
            return fields[name]
    return None


class ClientInstance:
    """Connections, NameServer client, route table and heartbeats shared by the members of one client id.

    Use :func:`join_instance` and :meth:`leave`; constructing one directly bypasses the registry.
    """

    def __init__(
        self, client_id: str, namesrv_addrs: list[str], settings: ClientSettings, *, rng: random.Random
    ) -> None:
        self.client_id = client_id
        self.settings = settings
        self._loop = asyncio.get_running_loop()
        self.remoting = RemotingClient(ssl=settings.ssl)
        self.rpc = ClientRpc(self.remoting, settings)
        self.namesrv = NameServerClient(self.rpc, namesrv_addrs, settings.namesrv_timeout_ms, rng)
        #: Requests of this instance's producers waiting for their reply (request-reply).
        self.replies = ReplyWaiters(settings.version)
        self.remoting.register(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, self.replies.handle_push)
        self._members: list[Member] = []
        self._routes: dict[str, TopicRouteData] = {}
        self._brokers: dict[str, dict[int, str]] = {}
        #: Each broker's release as its last heartbeat answer gave it (Java's ``brokerVersionTable``).
        self._broker_versions: dict[str, int] = {}
        self._inflight: dict[str, asyncio.Task[TopicRouteData | None]] = {}
        self._stop = asyncio.Event()
        self._timers: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[object]] = set()
        self._had_groups = False
        self.closed = False

    # -- members ------------------------------------------------------------------------------------------

    @property
    def members(self) -> list[Member]:
        return list(self._members)

    def producer_groups(self) -> list[str]:
        return sorted(m.group for m in self._members if m.kind is MemberKind.PRODUCER)

    def consumer_groups(self) -> list[str]:
        return sorted(m.group for m in self._members if m.kind is MemberKind.CONSUMER)

    def register(self, member: Member) -> None:
        """Add ``member``; its request handlers are served from now on."""
        if self.closed:
            raise ClientStateError(f"client instance {self.client_id} is closed")
        if member.kind is not MemberKind.ADMIN and any(
            m.kind is member.kind and m.group == member.group for m in self._members
        ):
            raise DuplicateGroupError(
                f"The {member.kind.value} group[{member.group}] has been created before on client "
                f"{self.client_id}, specify another name please."
            )
        self._members.append(member)
        if member.kind is not MemberKind.ADMIN:
            self._had_groups = True
        for code in member.handlers:
            self.remoting.register(code, self._serve(int(code)))

    async def leave(self, member: Member) -> None:
        """Remove ``member``: UNREGISTER_CLIENT for its group at every known broker, then, if it was the last
        member, close the instance (timers, the internal producer group, connections)."""
        if member not in self._members:
            return
        self._members.remove(member)
        for code in member.handlers:
            if not any(code in m.handlers for m in self._members):
                self.remoting.unregister(code)
        last = not self._members
        if last:
            by_id = _REGISTRY.get(self._loop)
            if by_id is not None and by_id.get(self.client_id) is self:
                del by_id[self.client_id]
            self.closed = True
            self._stop.set()
            await asyncio.gather(*self._timers, return_exceptions=True)
            await self._cancel_background()
        if member.kind is MemberKind.PRODUCER:
            await self._unregister(lambda: unregister_request(self.client_id, member.group))
        elif member.kind is MemberKind.CONSUMER:
            await self._unregister(lambda: unregister_request(self.client_id, consumer_group=member.group))
        if last:
            if self._had_groups:
                await self._unregister(
                    lambda: unregister_request(self.client_id, CLIENT_INNER_PRODUCER_GROUP)
                )
            await self._close_routes()
            await self.remoting.close()
            logger.info("client instance %s closed", self.client_id)

    def member_rpc(self, settings: ClientSettings) -> ClientRpc:
        """A request stamper for one member: its own serialization, version and credentials over the
        instance's connections."""
        return ClientRpc(self.remoting, settings)

    def _serve(self, code: int) -> Handler:
        async def handle(request: RemotingCommand, conn: Connection) -> Outcome:
            candidates = [m for m in self._members if code in m.handlers]
            if len(candidates) == 1:
                return await candidates[0].handlers[code](request, conn)
            group = _request_group(request)
            for member in candidates:
                if member.group == group:
                    return await member.handlers[code](request, conn)
            logger.warning(
                "client %s: request %d from %s is for group %s, which has no member here",
                self.client_id,
                code,
                conn.remote_address,
                group,
            )
            if request.is_oneway:
                return None
            remark = f"The group <{group}> not exist in this client {self.client_id}"
            response = request.make_response(ResponseCode.SYSTEM_ERROR, remark)
            response.version = self.settings.version
            return response

        return handle

    # -- timers -------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the route refresh and heartbeat rounds; connections open lazily."""
        settings = self.settings
        self._timers = [
            self._loop.create_task(
                run_periodically(
                    settings.poll_namesrv_interval_ms, self.refresh_routes, "route refresh", self._stop
                )
            ),
            self._loop.create_task(
                run_periodically(
                    settings.heartbeat_interval_ms, self.send_heartbeats, "heartbeat", self._stop
                )
            ),
        ]

    def spawn(self, coro: Coroutine[Any, Any, object], name: str) -> None:
        """Run ``coro`` in the background until it ends or the instance closes."""
        task: asyncio.Task[object] = self._loop.create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _cancel_background(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)

    async def _close_routes(self) -> None:
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- routes -------------------------------------------------------------------------------------------

    def route(self, topic: str) -> TopicRouteData | None:
        """The topic's route as last fetched by any member."""
        return self._routes.get(topic)

    def address(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        return self._brokers.get(broker_name, {}).get(broker_id)

    def master_or_any(self, broker_name: str) -> tuple[str, int] | None:
        """The master's address, else any slave's (with its id): reading is allowed from either."""
        addrs = self._brokers.get(broker_name)
        if not addrs:
            return None
        if MASTER_ID in addrs:
            return addrs[MASTER_ID], MASTER_ID
        broker_id = min(addrs)
        return addrs[broker_id], broker_id

    def broker_addresses(self) -> dict[str, dict[int, str]]:
        """Every broker seen in any route: name -> {broker id: address} (Java's ``brokerAddrTable``)."""
        return {name: dict(addrs) for name, addrs in self._brokers.items()}

    def master_addresses(self) -> list[str]:
        return [addrs[MASTER_ID] for addrs in self._brokers.values() if MASTER_ID in addrs]

    def all_addresses(self) -> list[str]:
        return [addr for addrs in self._brokers.values() for addr in addrs.values()]

    async def fetch_route(self, topic: str) -> TopicRouteData | None:
        """The topic's route from the NameServers now (``None``: unknown to them); concurrent callers, of any
        member, share one request. Raises :class:`~client.errors.NameServerError` when no NameServer
        answered."""
        task = self._inflight.get(topic)
        if task is None:
            task = self._loop.create_task(self._fetch(topic))
            self._inflight[topic] = task
            task.add_done_callback(lambda done: self._fetch_done(topic, done))
        return await asyncio.shield(task)

    def _fetch_done(self, topic: str, task: asyncio.Task[TopicRouteData | None]) -> None:
        if self._inflight.get(topic) is task:
            del self._inflight[topic]
        if not task.cancelled() and task.exception() is not None:
            logger.debug("route fetch of topic %s failed: %s", topic, task.exception())

    async def _fetch(self, topic: str) -> TopicRouteData | None:
        route = await self.namesrv.get_route(topic)
        if route is None:
            self._routes.pop(topic, None)
            return None
        self._routes[topic] = route
        self._learn_brokers(route)
        return route

    def _learn_brokers(self, route: TopicRouteData) -> None:
        for data in route.broker_datas:
            if data.broker_name is None:
                continue
            known = self._brokers.get(data.broker_name, {})
            new = [(bid, addr) for bid, addr in data.broker_addrs.items() if known.get(bid) != addr]
            self._brokers[data.broker_name] = dict(data.broker_addrs)
            for broker_id, addr in new:
                self._on_new_broker(addr, broker_id)

    def _on_new_broker(self, addr: str, broker_id: int) -> None:
        """Introduce the client to a broker before its first send or pull there."""
        if self._stop.is_set() or not self._had_groups:
            return
        if broker_id != MASTER_ID and not self.consumer_groups():
            return
        self.spawn(self._beat(addr, self.heartbeat_body()), f"heartbeat-{addr}")

    async def refresh_routes(self) -> None:
        """One round of the periodic refresh: each topic any member wants, fetched once and handed to every
        member that wants it."""
        wanted: dict[str, list[Member]] = {}
        for member in list(self._members):
            for topic in member.topics():
                wanted.setdefault(topic, []).append(member)
        for topic, members in wanted.items():
            try:
                route = await self.fetch_route(topic)
            except Exception as exc:  # one bad topic or a NameServer outage must not stop the round
                logger.warning("route refresh of topic %s failed: %s", topic, exc)
                continue
            for member in members:
                try:
                    member.on_route(topic, route)
                except Exception:
                    logger.exception(
                        "client %s: group %s failed to take topic %s's route",
                        self.client_id,
                        member.group,
                        topic,
                    )

    # -- heartbeats ---------------------------------------------------------------------------------------

    def heartbeat_body(self) -> bytes:
        """One heartbeat for every group on the instance: producers by name plus the internal producer group,
        consumers by group name."""
        consumers = []
        for member in sorted(self._members, key=lambda m: m.group):
            if member.kind is MemberKind.CONSUMER and member.consumer_data is not None:
                data = member.consumer_data()
                if data is not None:
                    consumers.append(data)
        return heartbeat_body(self.client_id, self.producer_groups(), consumers, self.settings.version)

    async def send_heartbeats(self) -> int:
        """Heartbeat every master (and, when a consumer is on the instance, every slave) now; returns how many
        brokers accepted. An instance without producers or consumers (an admin's) sends none."""
        if not any(m.kind is not MemberKind.ADMIN for m in self._members):
            return 0
        addrs = self.all_addresses() if self.consumer_groups() else self.master_addresses()
        if not addrs:
            return 0
        body = self.heartbeat_body()
        results = await asyncio.gather(*(self._beat(addr, body) for addr in addrs))
        return sum(results)

    async def _beat(self, addr: str, body: bytes) -> bool:
        """One heartbeat to ``addr``; failures are logged and reported as ``False``, never raised."""
        cmd = heartbeat_request(body, self.settings.version)
        try:
            response = await self.rpc.invoke(addr, cmd, self.settings.request_timeout_ms)
        except RemotingError as exc:
            logger.warning("heartbeat to broker %s failed: %s", addr, exc)
            return False
        self._broker_versions[addr] = response.version
        if response.code != ResponseCode.SUCCESS:
            logger.warning(
                "broker %s refused the heartbeat: code %d %s", addr, response.code, response.remark
            )
            return False
        return True

    async def broker_version(self, addr: str) -> int:
        """The ``MQVersion`` number of the broker at ``addr``, asking it with a heartbeat when no answer of
        its has been seen yet (a member about to use a 5.x-only feature there must know first).

        Raises :class:`~rocketmq_wire.transport.RemotingError` when the broker cannot be reached.
        """
        known = self._broker_versions.get(addr)
        if known is not None:
            return known
        cmd = heartbeat_request(self.heartbeat_body(), self.settings.version)
        response = await self.rpc.invoke(addr, cmd, self.settings.request_timeout_ms)
        self._broker_versions[addr] = response.version
        return response.version

    async def require_broker_version(
        self,
        addr: str,
        minimum: int,
        feature: str,
        error: type[BrokerVersionError] = BrokerVersionError,
    ) -> None:
        """Raise ``error`` (a :class:`~client.errors.BrokerVersionError`; each role has its own) unless the
        broker at ``addr`` runs ``minimum`` (an ``MQVersion`` number) or later."""
        error.check(feature, addr, await self.broker_version(addr), minimum)

    async def _unregister(self, build: Callable[[], RemotingCommand]) -> None:
        """One UNREGISTER_CLIENT at every known broker, masters and slaves, best effort (a broker also notices
        the connection closing; this makes it immediate)."""

        async def one(addr: str) -> None:
            cmd = build()
            try:
                response = await self.rpc.invoke(addr, cmd, self.settings.request_timeout_ms)
            except RemotingError as exc:
                logger.info("unregistering from broker %s failed: %s", addr, exc)
                return
            if response.code != ResponseCode.SUCCESS:
                logger.info("broker %s refused to unregister: %s", addr, response.remark)

        await asyncio.gather(*(one(addr) for addr in self.all_addresses()))
