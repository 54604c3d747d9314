"""Every request the admin client sends goes through here: one place that signs, fails over between
NameServers and turns transport failures into :class:`~admin.errors.UnreachableError`.

Connections, NameServer fail-over and route look-ups are those of a client instance of its own
(:mod:`client.instance`, as Java's admin has its own ``MQClientInstance``): one NameServer at a time,
moving on when it cannot be reached. Signing and stamping are the client core's (``client.rpc``), so a
request is signed exactly the way a producer or consumer signs it.
"""

from __future__ import annotations

import logging
import random
import ssl as ssl_module
from collections.abc import Callable, Sequence

from admin.errors import AdminError, RequestRefusedError, UnreachableError
from client.errors import ClientError, RouteRefusedError
from client.instance import ClientInstance, join_standalone
from client.settings import ClientSettings
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.codes import ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("admin.rpc")


#: Java's ``DefaultMQAdminExt`` registers itself on its client instance under this name.
ADMIN_EXT_GROUP = "admin_ext_group"


def admin_settings(
    timeout_ms: float,
    *,
    access_key: str | None = None,
    secret_key: str | None = None,
    security_token: str | None = None,
    ssl: ssl_module.SSLContext | None = None,
    serialize_type: SerializeType = SerializeType.JSON,
) -> ClientSettings:
    """The admin's client settings: every request, NameServer look-ups included, waits ``timeout_ms``; the
    rest (version, timers, a fresh instance name of its own) are the client defaults."""
    return ClientSettings(
        access_key=access_key,
        secret_key=secret_key,
        security_token=security_token,
        ssl=ssl,
        serialize_type=serialize_type,
        request_timeout_ms=timeout_ms,
        namesrv_timeout_ms=timeout_ms,
    )


class AdminRpc:
    """Requests to NameServers and brokers over the admin's own client instance.

    As Java's admin, it has a client instance of its own (an instance name made for it, so never a
    producer's or consumer's), going through the same :class:`~client.instance.ClientInstance` as they do:
    its connections and NameServer client are the instance's. It registers no producer or consumer group, so
    the instance sends no heartbeat.
    """

    def __init__(
        self,
        namesrv_addrs: Sequence[str],
        *,
        timeout_ms: float,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        ssl: ssl_module.SSLContext | None = None,
        rng: random.Random | None = None,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        settings = admin_settings(
            timeout_ms,
            access_key=access_key,
            secret_key=secret_key,
            security_token=security_token,
            ssl=ssl,
            serialize_type=serialize_type,
        )
        self.timeout_ms = timeout_ms
        #: How request headers are serialized (requests whose code needs more than 16 bits need JSON).
        self.serialize_type = serialize_type
        self.namesrv_addrs = list(namesrv_addrs)
        self._instance, self._member = join_standalone(self.namesrv_addrs, settings, ADMIN_EXT_GROUP, rng=rng)
        self.client = self._instance.remoting
        self._rpc = self._instance.rpc
        self._namesrv = self._instance.namesrv

    @property
    def instance(self) -> ClientInstance:
        return self._instance

    async def close(self) -> None:
        await self._instance.leave(self._member)

    async def route(self, topic: str) -> TopicRouteData | None:
        """The topic's route from the first NameServer that answers; ``None`` when none knows the topic."""
        try:
            return await self._namesrv.get_route(topic)
        except RouteRefusedError as exc:
            raise AdminError(str(exc)) from exc
        except ClientError as exc:
            raise UnreachableError(str(exc)) from exc

    async def namesrv(self, cmd: RemotingCommand) -> RemotingCommand:
        """Ask one NameServer, moving to the next while they cannot be reached."""
        try:
            return await self._namesrv.invoke(cmd)
        except ClientError as exc:
            raise UnreachableError(str(exc)) from exc

    async def every_namesrv(
        self, build: Callable[[], RemotingCommand]
    ) -> list[tuple[str, RemotingCommand | UnreachableError]]:
        """Send a fresh ``build()`` to every NameServer (writes must reach all of them, as in Java)."""
        answers: list[tuple[str, RemotingCommand | UnreachableError]] = []
        for addr in self.namesrv_addrs:
            try:
                answers.append((addr, await self.server(addr, build())))
            except UnreachableError as exc:
                answers.append((addr, exc))
        return answers

    async def server(
        self, addr: str, cmd: RemotingCommand, timeout_ms: float | None = None
    ) -> RemotingCommand:
        """Send to one broker (or NameServer) and return its answer, whatever the code."""
        try:
            return await self._rpc.invoke(addr, cmd, timeout_ms or self.timeout_ms)
        except RemotingError as exc:
            raise UnreachableError(f"{addr} did not answer: {exc}") from exc


def check(response: RemotingCommand, what: str, addr: str, *accepted: int) -> RemotingCommand:
    """``response`` when its code is SUCCESS (or one of ``accepted``); otherwise the refusal as an error."""
    if response.code == ResponseCode.SUCCESS or response.code in accepted:
        return response
    raise RequestRefusedError(what, addr, response.code, response.remark)
