"""Asking a running cluster what it knows, over the wire: cluster info and topic routes.

Readiness is judged the way a client would see it: a broker is up when the NameServer lists it in
GET_BROKER_CLUSTER_INFO, whatever the servers printed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.cluster import ClusterInfo
from rocketmq_wire.bodies.route import BrokerData, TopicRouteData
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader
from rocketmq_wire.transport import RemotingClient, RemotingError
from tests.integration.clusters.processes import POLL_INTERVAL_S, StartupError

REQUEST_TIMEOUT_MS = 3000

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]],
    accept: Callable[[T], bool],
    *,
    timeout_s: float,
    what: str,
    retry_on: tuple[type[Exception], ...] = (),
) -> T:
    """Call ``probe`` until ``accept`` takes its result (an exception of ``retry_on`` counts as "not yet"),
    or fail after ``timeout_s`` naming ``what`` and the last result: brokers apply an admin change and tell
    the NameServer a moment later, so a scenario asserts on the state it converges to."""
    deadline = time.monotonic() + timeout_s
    while True:
        last: object
        try:
            result = await probe()
        except retry_on as exc:
            last = exc
        else:
            if accept(result):
                return result
            last = result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not so after {timeout_s:.0f} s; last seen: {last!r}")
        await asyncio.sleep(POLL_INTERVAL_S * 2)


async def cluster_info(client: RemotingClient, namesrv: str) -> ClusterInfo:
    response = await client.invoke(
        namesrv, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), REQUEST_TIMEOUT_MS
    )
    if response.code != ResponseCode.SUCCESS:
        raise RemotingError(f"GET_BROKER_CLUSTER_INFO answered {response.code}: {response.remark}")
    return ClusterInfo.from_json(response.body)


async def topic_route(client: RemotingClient, namesrv: str, topic: str) -> TopicRouteData | None:
    """The NameServer's route of ``topic``; None when it has none (TOPIC_NOT_EXIST)."""
    request = RemotingCommand.request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
    )
    response = await client.invoke(namesrv, request, REQUEST_TIMEOUT_MS)
    if response.code == ResponseCode.TOPIC_NOT_EXIST:
        return None
    if response.code != ResponseCode.SUCCESS:
        raise RemotingError(f"GET_ROUTEINFO_BY_TOPIC {topic} answered {response.code}: {response.remark}")
    return TopicRouteData.from_json(response.body)


async def wait_for_broker(
    namesrv: str,
    cluster_name: str,
    broker_name: str,
    timeout_s: float,
    check_alive: Callable[[], None] = lambda: None,
) -> BrokerData:
    """Poll the NameServer until ``broker_name`` of ``cluster_name`` has a master address.

    ``check_alive`` raises when a server died meanwhile, which ends the wait at once instead of at the
    deadline. Connection errors count as "not yet" (the NameServer may still be binding its port).
    """
    deadline = time.monotonic() + timeout_s
    last: str = "no answer yet"
    async with RemotingClient(connect_timeout_ms=1000) as client:
        while True:
            check_alive()
            try:
                info = await cluster_info(client, namesrv)
            except (TimeoutError, RemotingError, OSError) as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                data = info.broker_addr_table.get(broker_name)
                in_cluster = broker_name in info.cluster_addr_table.get(cluster_name, [])
                if data is not None and data.master_addr() and in_cluster:
                    return data
                last = f"cluster info lists {sorted(info.broker_addr_table)} in {info.cluster_addr_table}"
            if time.monotonic() >= deadline:
                raise StartupError(
                    f"broker {broker_name} of {cluster_name} not registered at {namesrv} "
                    f"within {timeout_s:.0f} s ({last})"
                )
            await asyncio.sleep(POLL_INTERVAL_S * 2)


async def wait_for_namesrv(
    namesrv: str, timeout_s: float, check_alive: Callable[[], None] = lambda: None
) -> None:
    """Poll until the NameServer answers GET_BROKER_CLUSTER_INFO: a broker started earlier would fail its
    first registration and, like Apache's, only try again 30 s later."""
    deadline = time.monotonic() + timeout_s
    async with RemotingClient(connect_timeout_ms=1000) as client:
        while True:
            check_alive()
            try:
                await cluster_info(client, namesrv)
            except (TimeoutError, RemotingError, OSError) as exc:
                if time.monotonic() >= deadline:
                    raise StartupError(
                        f"NameServer {namesrv} not answering after {timeout_s:.0f} s: {exc}"
                    ) from exc
            else:
                return
            await asyncio.sleep(POLL_INTERVAL_S)


def wait_for_namesrv_sync(
    namesrv: str, timeout_s: float, check_alive: Callable[[], None] = lambda: None
) -> None:
    asyncio.run(wait_for_namesrv(namesrv, timeout_s, check_alive))


def wait_for_broker_sync(
    namesrv: str,
    cluster_name: str,
    broker_name: str,
    timeout_s: float,
    check_alive: Callable[[], None] = lambda: None,
) -> BrokerData:
    """:func:`wait_for_broker` for the (synchronous) fixture code."""
    return asyncio.run(wait_for_broker(namesrv, cluster_name, broker_name, timeout_s, check_alive))
