"""GET_BROKER_HA_STATUS (5.x, ``mqadmin haStatus``): how this broker's replication stands.

A master lists its slaves (address, acknowledged offset, how far behind, in sync or not); a slave names its
master and how far its own commit log reaches. The body is Apache 5.x's ``HARuntimeInfo``; 4.9 has no such
request and only logs the slave's lag.
"""

from __future__ import annotations

from broker.ha.service import HighAvailability
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.transport import Connection


class GetBrokerHaStatusProcessor:
    def __init__(self, *, ha: HighAvailability) -> None:
        self._ha = ha

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        return request.make_response(ResponseCode.SUCCESS, body=self._ha.status_body())
