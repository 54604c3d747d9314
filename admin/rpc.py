"""Every request the admin client sends goes through here: one place that signs, fails over between
NameServers and turns transport failures into :class:`~admin.errors.UnreachableError`.

NameServer fail-over and route look-ups are the producer's (:mod:`producer.namesrv`): one NameServer at a
time, moving on when it cannot be reached. Signing and stamping are the producer's RPC layer too, so a
request is signed exactly the way the producer signs it.
"""

from __future__ import annotations

import logging
import random
import ssl as ssl_module
from collections.abc import Callable, Sequence

from admin.errors import AdminError, RequestRefusedError, UnreachableError
from producer.config import ProducerConfig
from producer.errors import NoRouteError, ProducerError
from producer.namesrv import NameServerClient
from producer.rpc import ProducerRpc
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.codes import ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import RemotingClient, RemotingError

logger = logging.getLogger("admin.rpc")


class _NameServers(NameServerClient):
    """The producer's NameServer client, opened up for requests other than routes."""

    async def request(self, cmd: RemotingCommand) -> RemotingCommand:
        return await self.invoke(cmd)


class AdminRpc:
    """Requests to NameServers and brokers over one :class:`RemotingClient` owned by the admin."""

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
        self.client = RemotingClient(ssl=ssl)
        self._rpc = ProducerRpc(self.client, config)
        self._namesrv = _NameServers(self._rpc, self.namesrv_addrs, timeout_ms, rng or random.Random())

    async def close(self) -> None:
        await self.client.close()

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
            return await self._namesrv.request(cmd)
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
