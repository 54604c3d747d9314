"""Asking NameServers for topic routes, failing over between them.

One client instance (``client.instance``) owns one of these for all its producers and consumers. Like
Java's client, it talks to one NameServer at a time (picked at random at first, so a fleet of
producers spreads over them) and moves to the next one in the list only when the current one cannot be
reached or does not answer; NameServers hold the same data, so any one of them will do.
"""

from __future__ import annotations

import logging
import random

from client.errors import NameServerError, RouteRefusedError
from client.rpc import ClientRpc
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader
from rocketmq_wire.transport import RemotingError
from rocketmq_wire.transport.address import parse_namesrv_list as parse_namesrv_list  # re-exported

logger = logging.getLogger("client.namesrv")


def route_request(topic: str) -> RemotingCommand:
    """GET_ROUTEINFO_BY_TOPIC as a Java client asks it: the topic and nothing else."""
    return RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic))


class NameServerClient:
    """Route look-ups against a list of NameServers, sticking to one until it fails."""

    def __init__(self, rpc: ClientRpc, addrs: list[str], timeout_ms: float, rng: random.Random) -> None:
        self._rpc = rpc
        self._addrs = list(addrs)
        self._timeout_ms = timeout_ms
        self._index = rng.randrange(len(self._addrs))

    @property
    def addresses(self) -> list[str]:
        return list(self._addrs)

    @property
    def current(self) -> str:
        """The NameServer the next request goes to first."""
        return self._addrs[self._index]

    async def get_route(self, topic: str) -> TopicRouteData | None:
        """The topic's route, or ``None`` when the NameServers do not know the topic.

        Raises :class:`RouteRefusedError` when a NameServer answered with an error, and
        :class:`NameServerError` when none could answer or the route was unreadable.
        """
        response = await self.invoke(route_request(topic))
        if response.code == ResponseCode.TOPIC_NOT_EXIST:
            return None
        if response.code != ResponseCode.SUCCESS:
            raise RouteRefusedError(
                f"NameServer refused the route of {topic!r}: code {response.code} {response.remark or ''}"
            )
        try:
            return TopicRouteData.from_json(response.body)
        except CodecError as exc:
            raise NameServerError(f"NameServer sent an unreadable route for topic {topic!r}: {exc}") from exc

    async def invoke(self, cmd: RemotingCommand) -> RemotingCommand:
        last: RemotingError | None = None
        for _ in range(len(self._addrs)):
            addr = self._addrs[self._index]
            try:
                return await self._rpc.invoke(addr, cmd, self._timeout_ms)
            except RemotingError as exc:
                last = exc
                self._index = (self._index + 1) % len(self._addrs)
                logger.warning("NameServer %s failed (%s); trying %s next", addr, exc, self.current)
                # the command was stamped and possibly signed for the failed attempt: start it afresh
                cmd = RemotingCommand.request(cmd.code, cmd.custom_header, cmd.body)
        raise NameServerError(f"no NameServer of {self._addrs} answered: {last}") from last
