"""Every request the admin client sends goes through here: one place that signs, fails over between
NameServers and turns transport failures into :class:`~admin.errors.UnreachableError`.

Connections, NameServer fail-over and route look-ups are those of a client instance of its own
(:mod:`producer.instance`, as Java's admin has its own ``MQClientInstance``): one NameServer at a time,
moving on when it cannot be reached. Signing and stamping are the producer's RPC layer too, so a request is
signed exactly the way the producer signs it.
"""

from __future__ import annotations

import logging
import random
import ssl as ssl_module
from collections.abc import Callable, Sequence

from admin.errors import AdminError, RequestRefusedError, UnreachableError
from producer.config import ProducerConfig
from producer.errors import NoRouteError, ProducerError
from producer.identity import client_id, default_instance_name, local_ip
from producer.instance import ClientInstance, InstanceSettings, Member, MemberKind, join_instance
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.codes import ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("admin.rpc")


#: Java's ``DefaultMQAdminExt`` registers itself on its client instance under this name.
ADMIN_EXT_GROUP = "admin_ext_group"


class AdminRpc:
    """Requests to NameServers and brokers over the admin's own client instance.

    As Java's admin, it has a client instance of its own (an instance name made for it, so never a
    producer's or consumer's), going through the same :class:`~producer.instance.ClientInstance` as they do:
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
        if (access_key is None) != (secret_key is None):
            raise ValueError("access_key and secret_key go together")
        self.timeout_ms = timeout_ms
        self.namesrv_addrs = list(namesrv_addrs)
        config = ProducerConfig(
            access_key=access_key,
            secret_key=secret_key,
            security_token=security_token,
            ssl=ssl,
            namesrv_timeout_ms=timeout_ms,
            serialize_type=serialize_type,
        )
        settings = InstanceSettings(
            rpc=config,
            request_timeout_ms=timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            poll_namesrv_interval_ms=config.poll_namesrv_interval_ms,
        )
        self._member = Member(MemberKind.ADMIN, ADMIN_EXT_GROUP)
        self._instance = join_instance(
            client_id(local_ip(), default_instance_name()),
            self.namesrv_addrs,
            settings,
            self._member,
            rng=rng or random.Random(),
        )
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
        except NoRouteError as exc:
            raise AdminError(str(exc)) from exc
        except ProducerError as exc:
            raise UnreachableError(str(exc)) from exc

    async def namesrv(self, cmd: RemotingCommand) -> RemotingCommand:
        """Ask one NameServer, moving to the next while they cannot be reached."""
        try:
            return await self._namesrv.invoke(cmd)
        except ProducerError as exc:
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
