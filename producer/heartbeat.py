"""Keeping brokers aware of the producer: HEART_BEAT to every master, UNREGISTER_CLIENT on the way out.

A broker only knows a producer's connection through its heartbeats; without them it cannot ask the producer
to check a transaction, and its producer lists (``mqadmin producerConnection``) miss it. Java sends the
group of the producer and the client instance's internal producer group; so do we.
"""

from __future__ import annotations

import asyncio
import logging

from producer.rpc import ProducerRpc
from rocketmq_wire.bodies.heartbeat import HeartbeatData, ProducerData
from rocketmq_wire.codes import MQVersion, RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.consumer import HeartbeatRequestHeader, UnregisterClientRequestHeader
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.topics import CLIENT_INNER_PRODUCER_GROUP
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("producer.heartbeat")

_V5_0_0 = MQVersion.NAMES.index("V5_0_0")


def heartbeat_request(body: bytes, version: int) -> RemotingCommand:
    """HEART_BEAT: 4.x clients send no header at all, 5.x ones an empty one (an empty ext map on the wire)."""
    if version >= _V5_0_0:
        return RemotingCommand.request(
            RequestCode.HEART_BEAT, HeartbeatRequestHeader(), body, ext_fields=ExtFields()
        )
    return RemotingCommand.request(RequestCode.HEART_BEAT, None, body)


def unregister_request(client_id: str, group: str) -> RemotingCommand:
    """UNREGISTER_CLIENT for one producer group (Java sends one request per group it leaves)."""
    header = UnregisterClientRequestHeader(client_id=client_id, producer_group=group)
    return RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header)


class HeartbeatSender:
    """Heartbeats and unregistration for one producer's client id and group."""

    def __init__(self, rpc: ProducerRpc, client_id: str, group: str, timeout_ms: float, version: int) -> None:
        self._rpc = rpc
        self._version = version
        self._v5 = version >= _V5_0_0
        self.client_id = client_id
        self.group = group
        self._timeout_ms = timeout_ms

    @property
    def groups(self) -> list[str]:
        return [self.group, CLIENT_INNER_PRODUCER_GROUP]

    def body(self) -> bytes:
        """Groups in name order (every Java capture shows that order); 5.x adds its two fields."""
        return HeartbeatData(
            client_id=self.client_id,
            producer_data_set=[ProducerData(group_name=name) for name in sorted(self.groups)],
            heartbeat_fingerprint=0 if self._v5 else None,
            without_sub=False if self._v5 else None,
        ).to_json()

    async def beat(self, addr: str) -> bool:
        """One heartbeat to ``addr``; failures are logged and reported as ``False``, never raised."""
        cmd = heartbeat_request(self.body(), self._version)
        try:
            response = await self._rpc.invoke(addr, cmd, self._timeout_ms)
        except RemotingError as exc:
            logger.warning("heartbeat to broker %s failed: %s", addr, exc)
            return False
        if response.code != ResponseCode.SUCCESS:
            logger.warning(
                "broker %s refused the heartbeat: code %d %s", addr, response.code, response.remark
            )
            return False
        return True

    async def beat_all(self, addrs: list[str]) -> int:
        """Heartbeats to all ``addrs`` at once; returns how many brokers accepted them."""
        if not addrs:
            return 0
        results = await asyncio.gather(*(self.beat(addr) for addr in addrs))
        return sum(results)

    async def unregister(self, addrs: list[str]) -> None:
        """UNREGISTER_CLIENT for each group at each broker, best effort (the broker also notices the
        connection closing; this just makes it immediate)."""

        async def one(addr: str, group: str) -> None:
            cmd = unregister_request(self.client_id, group)
            try:
                response = await self._rpc.invoke(addr, cmd, self._timeout_ms)
            except RemotingError as exc:
                logger.info("unregistering from broker %s failed: %s", addr, exc)
                return
            if response.code != ResponseCode.SUCCESS:
                logger.info("broker %s refused to unregister group %s: %s", addr, group, response.remark)

        async def leave(addr: str) -> None:
            for group in self.groups:
                await one(addr, group)

        await asyncio.gather(*(leave(addr) for addr in addrs))
