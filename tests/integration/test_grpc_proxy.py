"""Apache's Proxy and Apache's gRPC SDKs (Python and Java) over a cluster: Apache's own 5.5.0 servers (the
control) and the project's NameServer and Broker, with the same expectations.

The proxy (``rocketmq-proxy`` 5.5.0 from Maven Central, cluster mode) drives the brokers with RocketMQ
5's remoting requests; the gRPC SDKs (PyPI ``rocketmq-python-client``, Maven Central
``rocketmq-client-java``) reach the cluster only through it. For each message type a topic is created with
its ``message.type`` (the proxy refuses a message whose type its topic does not accept); each SDK's
producer sends normal, FIFO, delay and transactional messages (one of them rolled back), and its
SimpleConsumer (receive + ack) and PushConsumer read them back. ``expect_every_type`` holds what both
SDKs must see: every message once, a delay message no earlier than its time, FIFO messages of one message
group in their send order, never the rolled-back one.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator
from typing import Any

import pytest

from admin import Admin
from tests.integration.apache.proxy import ProxyEndpoint, start_proxy
from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import PROVIDERS, skip_or_fail
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import Cluster, ProviderUnavailable, unique_name
from tests.integration.grpc_peer import java, runner
from tests.integration.grpc_peer.expectations import KINDS, expect_every_type

pytestmark = pytest.mark.integration

#: Apache's newest servers (the control) and the project's servers.
SETUPS = [s for s in PROVIDERS if s.id in ("binaries-5.5.0", "python")]
PROXY_RELEASE = "5.5.0"
COUNT = 4
DELAY_MS = 3000
READ_TIMEOUT_S = 45.0


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyEndpoint]:
    release = next((r for r in releases() if r.version == PROXY_RELEASE), None)
    if release is None:
        skip_or_fail(f"Apache {PROXY_RELEASE} is not among the suite's releases (RMQ_IT_RELEASES)")
        raise AssertionError("unreachable")
    folder = tmp_path_factory.mktemp("proxy")
    launch = Launch(folder / "work", folder / "logs")
    try:
        yield start_proxy(launch, release, cluster.namesrv, cluster.cluster_name)
    finally:
        assert launch.stop(discard=True) == []


async def _topics(cluster: Cluster) -> dict[str, str]:
    """One topic per message type, on every broker of the cluster."""
    topics = {kind: unique_name(f"Grpc{kind.title()}") for kind in KINDS}
    async with Admin(cluster.namesrv) as admin:
        for kind, topic in topics.items():
            await admin.create_topic(
                topic,
                cluster=cluster.cluster_name,
                read_queue_nums=2,
                write_queue_nums=2,
                attributes={"message.type": kind.upper()},
            )
    return topics


@pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)
def test_the_python_grpc_sdk_sends_every_type_and_receives_them_through_the_proxy(
    cluster: Cluster, proxy: ProxyEndpoint
) -> None:
    try:
        runner.sdk_python()
    except ProviderUnavailable as exc:
        skip_or_fail(str(exc))
    topics = asyncio.run(_topics(cluster))
    common = ["--endpoints", proxy.grpc, "--count", str(COUNT)]
    with concurrent.futures.ThreadPoolExecutor(len(KINDS)) as pool:
        sends = {
            kind: pool.submit(
                runner.run,
                "send",
                [*common, "--topic", topics[kind], "--kind", kind, "--delay-ms", str(DELAY_MS)],
                60.0,
            )
            for kind in KINDS
        }
        sent = {kind: future.result() for kind, future in sends.items()}
    for kind, run in sent.items():
        assert run.returncode == 0, f"{kind}: {run.events} {run.describe()}"

    # SimpleConsumer for every type but normal, which the PushConsumer reads (both run at once).
    with concurrent.futures.ThreadPoolExecutor(len(KINDS)) as pool:
        reads = {
            kind: pool.submit(
                runner.run,
                "push" if kind == "normal" else "simple",
                [
                    *common,
                    *("--topic", topics[kind], "--group", unique_name(f"GrpcG{kind}")),
                    *("--timeout", str(READ_TIMEOUT_S)),
                ],
                READ_TIMEOUT_S,
            )
            for kind in KINDS
        }
        read = {kind: future.result() for kind, future in reads.items()}

    expect_every_type(
        "Python SDK",
        COUNT,
        {kind: run.of("sent") for kind, run in sent.items()},
        {kind: run.of("received") for kind, run in read.items()},
        sent["transaction"].of("rolled_back"),
        {kind: f"send: {sent[kind].describe()}; read: {read[kind].describe()}" for kind in KINDS},
    )


@pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)
def test_the_java_grpc_client_sends_every_type_and_receives_them_through_the_proxy(
    cluster: Cluster, proxy: ProxyEndpoint
) -> None:
    """The whole scenario in one JVM (``rmqit.GrpcPeer``): sends, then the four readers at once."""
    topics = asyncio.run(_topics(cluster))
    args = [
        *("--endpoints", proxy.grpc, "--count", str(COUNT), "--delay-ms", str(DELAY_MS)),
        *("--group-prefix", unique_name("GrpcJava"), "--timeout", str(READ_TIMEOUT_S)),
        *(arg for kind, topic in topics.items() for arg in ("--topic", f"{kind}={topic}")),
    ]
    try:
        run = java.run(args, READ_TIMEOUT_S + 45.0)
    except ProviderUnavailable as exc:
        skip_or_fail(str(exc))
        raise AssertionError("unreachable") from exc
    assert run.returncode == 0 and run.of("done"), f"{run.events} {run.describe()}"

    def of_kind(event: str, kind: str) -> list[dict[str, Any]]:
        return [e for e in run.of(event) if e.get("kind") == kind]

    expect_every_type(
        "Java client",
        COUNT,
        {kind: of_kind("sent", kind) for kind in KINDS},
        {kind: of_kind("received", kind) for kind in KINDS},
        run.of("rolled_back"),
        {kind: f"errors: {of_kind('error', kind)}; {run.describe()}" for kind in KINDS},
    )
