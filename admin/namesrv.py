"""NameServer-side administration: a broker's write permission, the NameServers' own settings, ordered
topic layouts and which clusters hold a topic.

Writes go to every NameServer, one after the other, because NameServers share nothing: mqadmin
``wipeWritePerm`` / ``addWritePerm`` / ``updateNamesrvConfig`` / ``updateOrderConf`` do the same. Each
answer is kept per NameServer, so a caller sees which of them did what.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from admin.cluster import _write_everywhere, cluster_info, kv_delete, kv_get, kv_put, topic_route
from admin.errors import AdminError, UnreachableError
from admin.rpc import AdminRpc, check
from rocketmq_wire.bodies import PropertiesBody
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketmq_wire.topics import ORDER_TOPIC_CONFIG


@dataclasses.dataclass(frozen=True, slots=True)
class WritePermChange:
    """How many of the broker's topics one NameServer changed (wipe or add)."""

    namesrv: str
    broker_name: str
    topic_count: int


async def _perm_everywhere(rpc: AdminRpc, broker_name: str, *, wipe: bool) -> list[WritePermChange]:
    if not broker_name.strip():
        raise AdminError("name the broker (its brokerName)")
    if wipe:
        code = RequestCode.WIPE_WRITE_PERM_OF_BROKER
        request_header: WipeWritePermOfBrokerRequestHeader | AddWritePermOfBrokerRequestHeader = (
            WipeWritePermOfBrokerRequestHeader(broker_name=broker_name)
        )
    else:
        code = RequestCode.ADD_WRITE_PERM_OF_BROKER
        request_header = AddWritePermOfBrokerRequestHeader(broker_name=broker_name)
    what = f"{'wiping' if wipe else 'adding'} write perm of broker {broker_name!r}"
    changes: list[WritePermChange] = []
    for addr, answer in await rpc.every_namesrv(lambda: RemotingCommand.request(code, request_header)):
        if isinstance(answer, UnreachableError):
            raise answer
        check(answer, what, addr)
        try:
            if wipe:
                count = answer.read_header(WipeWritePermOfBrokerResponseHeader).wipe_topic_count
            else:
                count = answer.read_header(AddWritePermOfBrokerResponseHeader).add_topic_count
        except CodecError as exc:
            raise AdminError(f"unreadable answer to {what} from {addr}: {exc}") from exc
        changes.append(WritePermChange(addr, broker_name, int(count or 0)))
    return changes


async def wipe_write_perm(rpc: AdminRpc, broker_name: str) -> list[WritePermChange]:
    """Take the broker's topics out of the write path on every NameServer (before maintenance)."""
    return await _perm_everywhere(rpc, broker_name, wipe=True)


async def add_write_perm(rpc: AdminRpc, broker_name: str) -> list[WritePermChange]:
    """Give the broker's topics their write permission back on every NameServer."""
    return await _perm_everywhere(rpc, broker_name, wipe=False)


async def namesrv_config(rpc: AdminRpc, addrs: Sequence[str] | None = None) -> dict[str, dict[str, str]]:
    """Each NameServer's settings (GET_NAMESRV_CONFIG), by NameServer address."""
    found: dict[str, dict[str, str]] = {}
    for addr in addrs or rpc.namesrv_addrs:
        response = await rpc.server(addr, RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG))
        check(response, "NameServer config", addr)
        try:
            found[addr] = dict(PropertiesBody.from_text(response.body).properties)
        except CodecError as exc:
            raise AdminError(f"unreadable NameServer config from {addr}: {exc}") from exc
    return found


async def update_namesrv_config(rpc: AdminRpc, settings: Mapping[str, str]) -> list[str]:
    """Change settings of every NameServer (Java names); returns the addresses written."""
    if not settings:
        raise AdminError("no setting to update")
    body = PropertiesBody(properties=dict(settings)).to_text()
    return await _write_everywhere(
        rpc,
        "NameServer config update",
        lambda: RemotingCommand.request(RequestCode.UPDATE_NAMESRV_CONFIG, body=body),
    )


async def order_conf(rpc: AdminRpc, topic: str) -> str | None:
    """The ordered topic's queue layout (``broker-a:4;broker-b:4``), ``None`` when it has none."""
    return await kv_get(rpc, ORDER_TOPIC_CONFIG, topic)


async def update_order_conf(rpc: AdminRpc, topic: str, layout: str | None) -> list[str]:
    """Set (or with ``None`` delete) the topic's ordered layout in ``ORDER_TOPIC_CONFIG`` everywhere."""
    if layout is None:
        return await kv_delete(rpc, ORDER_TOPIC_CONFIG, topic)
    if not layout.strip():
        raise AdminError("an order conf is brokerName:queueNums;brokerName:queueNums, not empty")
    return await kv_put(rpc, ORDER_TOPIC_CONFIG, topic, layout)


async def topic_clusters(rpc: AdminRpc, topic: str) -> list[str]:
    """The clusters holding at least one broker group of the topic's route (mqadmin topicClusterList)."""
    route = await topic_route(rpc, topic)
    info = await cluster_info(rpc)
    names = {data.broker_name for data in route.broker_datas}
    return sorted(
        cluster for cluster, brokers in info.cluster_addr_table.items() if names.intersection(brokers)
    )
