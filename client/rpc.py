"""Every request a client sends goes through here, so serialization, version and ACL signing are applied
in exactly one place (Java does the same with its RPC hook).

A client instance (``client.instance``) has one for its own requests (heartbeats, route look-ups,
unregistration) and gives each member one with the member's settings over the shared connections."""

from __future__ import annotations

from client.settings import ClientSettings
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient


class ClientRpc:
    """Stamps, signs and sends commands over a client instance's :class:`RemotingClient`."""

    def __init__(self, client: RemotingClient, settings: ClientSettings) -> None:
        self.client = client
        self._serialize_type = settings.serialize_type
        self._version = settings.version
        self._credentials = settings.credentials()

    def prepare(self, cmd: RemotingCommand) -> RemotingCommand:
        """Set serialization and version, then sign: the signature must cover the final ext entries."""
        cmd.serialize_type = self._serialize_type
        cmd.version = self._version
        if self._credentials is not None:
            self._credentials.sign(cmd)
        return cmd

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        return await self.client.invoke(addr, self.prepare(cmd), timeout_ms)

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand, timeout_ms: float | None = None) -> None:
        await self.client.invoke_oneway(addr, self.prepare(cmd), timeout_ms)

    async def oneway_on(self, conn: Connection, cmd: RemotingCommand) -> None:
        """Send on a given connection: answers to a broker's own requests go back the way they came."""
        await conn.oneway(self.prepare(cmd))
