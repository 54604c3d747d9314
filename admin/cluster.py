"""What the NameServers know: clusters and their brokers, topic routes and lists, KV settings.

Reads go to one NameServer (any holds the same data); KV writes go to every NameServer, as mqadmin does,
because NameServers do not replicate KV settings among themselves.
"""

from __future__ import annotations

from collections.abc import Callable

from admin.errors import AdminError, TopicNotFoundError
from admin.models import BrokerAddress
from admin.rpc import AdminRpc, check
from rocketmq_wire.bodies import ClusterInfo, KVTable, TopicList, TopicRouteData
from rocketmq_wire.bodies.route import MASTER_ID, BrokerData
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.namesrv import (
    DeleteKVConfigRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    PutKVConfigRequestHeader,
)

_NAMESRV = "NameServer"


def preferred_addr(data: BrokerData) -> str | None:
    """The address to ask about a broker group: its master, else its lowest-numbered slave."""
    if not data.broker_addrs:
        return None
    master = data.broker_addrs.get(MASTER_ID)
    return master if master is not None else data.broker_addrs[min(data.broker_addrs)]


def route_brokers(route: TopicRouteData) -> list[tuple[str, str]]:
    """(broker name, address to ask) of every broker group of a route, by name; groups with no address
    left out."""
    found: list[tuple[str, str]] = []
    for data in sorted(route.broker_datas, key=lambda d: d.broker_name or ""):
        addr = preferred_addr(data)
        if addr is not None:
            found.append((data.broker_name or "", addr))
    return found


def _unreadable(what: str, exc: CodecError) -> AdminError:
    return AdminError(f"unreadable {what} from the NameServer: {exc}")


async def cluster_info(rpc: AdminRpc) -> ClusterInfo:
    response = await rpc.namesrv(RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO))
    check(response, "cluster info", _NAMESRV)
    try:
        return ClusterInfo.from_json(response.body)
    except CodecError as exc:
        raise _unreadable("cluster info", exc) from exc


def brokers_of(info: ClusterInfo, cluster: str | None = None) -> list[BrokerAddress]:
    """Every broker process of ``cluster`` (of every cluster when ``None``), sorted by cluster, name, id."""
    found: list[BrokerAddress] = []
    for cluster_name, names in info.cluster_addr_table.items():
        if cluster is not None and cluster_name != cluster:
            continue
        for name in names:
            data = info.broker_addr_table.get(name)
            if data is None:
                continue
            found.extend(
                BrokerAddress(cluster_name, name, broker_id, addr)
                for broker_id, addr in data.broker_addrs.items()
            )
    return sorted(found, key=lambda b: (b.cluster, b.broker_name, b.broker_id))


async def cluster_brokers(
    rpc: AdminRpc, cluster: str | None = None, *, masters_only: bool = False
) -> list[BrokerAddress]:
    """The brokers of ``cluster``; an unknown cluster name is an error rather than an empty answer."""
    info = await cluster_info(rpc)
    if cluster is not None and cluster not in info.cluster_addr_table:
        known = ", ".join(sorted(info.cluster_addr_table)) or "none"
        raise AdminError(f"no cluster named {cluster!r} is registered (known: {known})")
    brokers = brokers_of(info, cluster)
    return [b for b in brokers if b.is_master] if masters_only else brokers


async def topic_route(rpc: AdminRpc, topic: str) -> TopicRouteData:
    route = await rpc.route(topic)
    if route is None:
        raise TopicNotFoundError(topic)
    return route


async def topic_list(rpc: AdminRpc) -> list[str]:
    response = await rpc.namesrv(RemotingCommand.request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER))
    check(response, "topic list", _NAMESRV)
    try:
        return list(TopicList.from_json(response.body).topic_list)
    except CodecError as exc:
        raise _unreadable("topic list", exc) from exc


async def kv_get(rpc: AdminRpc, namespace: str, key: str) -> str | None:
    """The value, or ``None`` when the NameServer has no such key."""
    request = RemotingCommand.request(
        RequestCode.GET_KV_CONFIG, GetKVConfigRequestHeader(namespace=namespace, key=key)
    )
    response = await rpc.namesrv(request)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return None
    check(response, f"get of KV {namespace}/{key}", _NAMESRV)
    return response.read_header(GetKVConfigResponseHeader).value


async def kv_list(rpc: AdminRpc, namespace: str) -> dict[str, str]:
    """Every key of a namespace (empty when the namespace has none)."""
    request = RemotingCommand.request(
        RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader(namespace=namespace)
    )
    response = await rpc.namesrv(request)
    if response.code == ResponseCode.QUERY_NOT_FOUND:
        return {}
    check(response, f"listing of KV namespace {namespace}", _NAMESRV)
    try:
        return dict(KVTable.from_json(response.body).table)
    except CodecError as exc:
        raise _unreadable("KV table", exc) from exc


async def _write_everywhere(rpc: AdminRpc, what: str, build: Callable[[], RemotingCommand]) -> list[str]:
    answers = await rpc.every_namesrv(build)
    for addr, answer in answers:
        if isinstance(answer, Exception):
            raise answer
        check(answer, what, addr)
    return [addr for addr, _ in answers]


async def kv_put(rpc: AdminRpc, namespace: str, key: str, value: str) -> list[str]:
    """Set the value on every NameServer; returns their addresses."""
    header = PutKVConfigRequestHeader(namespace=namespace, key=key, value=value)
    return await _write_everywhere(
        rpc,
        f"put of KV {namespace}/{key}",
        lambda: RemotingCommand.request(RequestCode.PUT_KV_CONFIG, header),
    )


async def kv_delete(rpc: AdminRpc, namespace: str, key: str) -> list[str]:
    """Remove the key from every NameServer (deleting a missing key succeeds, as in Java)."""
    header = DeleteKVConfigRequestHeader(namespace=namespace, key=key)
    return await _write_everywhere(
        rpc,
        f"delete of KV {namespace}/{key}",
        lambda: RemotingCommand.request(RequestCode.DELETE_KV_CONFIG, header),
    )
