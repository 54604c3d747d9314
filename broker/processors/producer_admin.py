"""Who produces through this broker: GET_PRODUCER_CONNECTION_LIST, the connected clients of one producer
group (``mqadmin producerConnection``), and GET_ALL_PRODUCER_INFO, every group with its connected producers
(``mqadmin producer``). Both read the producer manager the heartbeats fill, nothing of their own.
"""

from __future__ import annotations

import ipaddress

from broker.clients import ProducerManager
from broker.processors.common import read_header
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.consumer import Connection as ConnectionBody
from rocketmq_wire.bodies.consumer import ProducerConnection, ProducerInfo, ProducerTableInfo
from rocketmq_wire.headers.consumer import GetProducerConnectionListRequestHeader
from rocketmq_wire.transport import Connection


class GetProducerConnectionListProcessor:
    def __init__(self, *, producers: ProducerManager) -> None:
        self._producers = producers

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetProducerConnectionListRequestHeader)
        group = str(header.producer_group)
        members = self._producers.members(group)
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


def java_socket_address(address: str) -> str:
    """A peer's "host:port" as Java's ``InetSocketAddress.toString()`` prints a Netty channel's remote
    address: an unresolved name is empty, so it starts with a slash ("/127.0.0.1:54321"), and an IPv6 host
    is bracketed, in Java's uncompressed form ("/[0:0:0:0:0:0:0:1]:54321"). Java tools print this as is.
    """
    host, sep, port = address.rpartition(":")
    if not sep:
        return f"/{address}"
    try:
        parsed = ipaddress.ip_address(host)
    except ValueError:
        return f"/{address}"
    if isinstance(parsed, ipaddress.IPv6Address):
        groups = ":".join(f"{int(group, 16):x}" for group in parsed.exploded.split(":"))
        return f"/[{groups}]:{port}"
    return f"/{address}"


class GetAllProducerInfoProcessor:
    """Answers with every producer group that has a connected member, as Java's producer manager does.

    Java's broker puts the groups into a fresh ``HashMap``, meeting them in its own table's order; the
    manager's groups are in the order they first connected, and :class:`ProducerTableInfo` writes them in
    that ``HashMap``'s order. The client's inner group (``CLIENT_INNER_PRODUCER``) is listed like any other,
    since clients announce it in their heartbeats.
    """

    def __init__(self, *, producers: ProducerManager) -> None:
        self._producers = producers

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        data: dict[str, list[ProducerInfo]] = {}
        for group, members in self._producers.table().items():
            data[group] = [
                ProducerInfo(
                    client_id=info.client_id,
                    remote_ip=java_socket_address(info.client_addr),
                    language=info.language,
                    version=info.version,
                    last_update_timestamp=info.last_update_timestamp,
                )
                for info in members
            ]
        return request.make_response(ResponseCode.SUCCESS, body=ProducerTableInfo(data=data).to_json())
