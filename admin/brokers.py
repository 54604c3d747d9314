"""One broker's own view of itself: runtime figures (GET_BROKER_RUNTIME_INFO) and settings
(GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG), what ``mqadmin brokerStatus``, ``getBrokerConfig`` and
``updateBrokerConfig`` do; and store maintenance on request (``cleanExpiredCQ``, ``deleteExpiredCommitLog``,
``cleanUnusedTopic``)."""

from __future__ import annotations

from collections.abc import Mapping

from admin.cluster import cluster_brokers
from admin.errors import AdminError, BrokerVersionError
from admin.rpc import AdminRpc, check
from rocketmq_wire.bodies import KVTable, PropertiesBody
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError


async def runtime_stats(rpc: AdminRpc, broker_addr: str) -> dict[str, str]:
    """The broker's runtime table (``putTps``, ``commitLogMaxOffset``, ``brokerVersionDesc`` ...)."""
    response = await rpc.server(broker_addr, RemotingCommand.request(RequestCode.GET_BROKER_RUNTIME_INFO))
    check(response, "runtime info", broker_addr)
    try:
        return dict(KVTable.from_json(response.body).table)
    except CodecError as exc:
        raise AdminError(f"unreadable runtime info from {broker_addr}: {exc}") from exc


async def broker_config(rpc: AdminRpc, broker_addr: str) -> dict[str, str]:
    """The broker's settings under their Java names, in the order the broker sent them."""
    response = await rpc.server(broker_addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG))
    check(response, "broker config", broker_addr)
    try:
        return dict(PropertiesBody.from_text(response.body).properties)
    except CodecError as exc:
        raise AdminError(f"unreadable broker config from {broker_addr}: {exc}") from exc


async def broker_version(rpc: AdminRpc, broker_addr: str) -> int:
    """The broker's release (an ``MQVersion`` number), from the version its answers carry; asked with
    GET_BROKER_CONFIG, which every release answers and which changes nothing."""
    response = await rpc.server(broker_addr, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG))
    check(response, "broker config", broker_addr)
    return response.version


async def require_broker_version(rpc: AdminRpc, broker_addr: str, minimum: int, feature: str) -> None:
    """Refuse, before anything is changed, a feature an older broker would quietly ignore."""
    BrokerVersionError.check(feature, broker_addr, await broker_version(rpc, broker_addr), minimum)


async def update_broker_config(rpc: AdminRpc, broker_addr: str, settings: Mapping[str, str]) -> None:
    """Change settings of a running broker (Java names); the broker applies what it knows and persists it.

    Apache's broker ignores names it does not know and refuses those on its ``configBlackList``.
    """
    if not settings:
        raise AdminError("no setting to update")
    body = PropertiesBody(properties=dict(settings)).to_text()
    response = await rpc.server(
        broker_addr, RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=body)
    )
    check(response, "broker config update", broker_addr)


async def _maintenance(
    rpc: AdminRpc, code: int, what: str, cluster: str | None, broker_addr: str | None
) -> list[str]:
    """Send a header-less maintenance request to one broker, or to every broker (slaves too, as mqadmin
    does) of ``cluster`` -- of every cluster when neither is named. Returns the addresses done."""
    if broker_addr is not None:
        addrs = [broker_addr]
    else:
        addrs = [b.addr for b in await cluster_brokers(rpc, cluster)]
    for addr in addrs:
        check(await rpc.server(addr, RemotingCommand.request(code)), what, addr)
    return addrs


async def clean_expired_consume_queue(
    rpc: AdminRpc, *, cluster: str | None = None, broker_addr: str | None = None
) -> list[str]:
    """Drop consume queues that point only at deleted commit-log files (mqadmin ``cleanExpiredCQ``)."""
    return await _maintenance(
        rpc, RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE, "cleaning expired consume queues", cluster, broker_addr
    )


async def delete_expired_commit_log(
    rpc: AdminRpc, *, cluster: str | None = None, broker_addr: str | None = None
) -> list[str]:
    """Run the commit-log retention now (mqadmin ``deleteExpiredCommitLog``)."""
    return await _maintenance(
        rpc, RequestCode.DELETE_EXPIRED_COMMITLOG, "deleting expired commit log", cluster, broker_addr
    )


async def clean_unused_topic(
    rpc: AdminRpc, *, cluster: str | None = None, broker_addr: str | None = None
) -> list[str]:
    """Drop consume queues of topics the broker no longer has (mqadmin ``cleanUnusedTopic``)."""
    return await _maintenance(
        rpc, RequestCode.CLEAN_UNUSED_TOPIC, "cleaning unused topics", cluster, broker_addr
    )
