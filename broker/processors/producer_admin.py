"""GET_PRODUCER_CONNECTION_LIST: which clients of a producer group are connected (``mqadmin
producerConnection``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.processors.common import read_header
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.consumer import Connection as ConnectionBody
from rocketmq_wire.bodies.consumer import ProducerConnection
from rocketmq_wire.headers.consumer import GetProducerConnectionListRequestHeader
from rocketmq_wire.transport import Connection

if TYPE_CHECKING:
    from broker.broker import Broker


class GetProducerConnectionListProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetProducerConnectionListRequestHeader)
        group = str(header.producer_group)
        members = self._broker.producer_manager.members(group)
        if not members:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        body = ProducerConnection(
            connection_set=[
                ConnectionBody(
                    client_id=info.client_id,
                    client_addr=info.client_addr,
                    language=info.language,
                    version=info.version,
                )
                for info in members
            ]
        )
        return request.make_response(ResponseCode.SUCCESS, body=body.to_json())
