"""Apache's Proxy and Apache's Python gRPC SDK over a cluster: Apache's own 5.5.0 servers (the control) and
the project's NameServer and Broker, with the same expectations.

The proxy (``rocketmq-proxy`` 5.5.0 from Maven Central, cluster mode) drives the brokers with RocketMQ
5's remoting requests; the gRPC SDK (PyPI ``rocketmq-python-client``) reaches the cluster only through
it. For each message type a topic is created with its ``message.type`` (the proxy refuses a message whose
type its topic does not accept); the SDK's producer sends normal, FIFO, delay and transactional messages,
and the SDK's SimpleConsumer (receive + ack) and PushConsumer read them back: every message once, a delay
message no earlier than its time, FIFO messages of one message group in their send order.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Iterator

import pytest

from admin import Admin
from tests.integration.apache.proxy import ProxyEndpoint, start_proxy
from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import PROVIDERS, skip_or_fail
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import Cluster, ProviderUnavailable, unique_name
from tests.integration.grpc_peer import runner

pytestmark = pytest.mark.integration

#: Apache's newest servers (the control) and the project's servers.
SETUPS = [s for s in PROVIDERS if s.id in ("binaries-5.5.0", "python")]
PROXY_RELEASE = "5.5.0"
KINDS = ("normal", "fifo", "delay", "transaction")
COUNT = 4
DELAY_MS = 3000
#: A received delay message may carry a store time up to this much before its due time (Apache floors a
#: timer to its precision, 1 s).
PRECISION_MS = 1000


@pytest.fixture(scope="module")
def proxy(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyEndpoint]:
    release = next((r for r in releases() if r.version == PROXY_RELEASE), None)
    if release is None:
        skip_or_fail(f"Apache {PROXY_RELEASE} is not among the suite's releases (RMQ_IT_RELEASES)")
        raise AssertionError("unreachable")
    try:
        runner.sdk_python()
    except ProviderUnavailable as exc:
        skip_or_fail(str(exc))
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
def test_the_grpc_sdk_sends_every_type_and_receives_them_through_the_proxy(
    cluster: Cluster, proxy: ProxyEndpoint
) -> None:
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
        assert run.returncode == 0 and len(run.of("sent")) == COUNT, f"{kind}: {run.events} {run.describe()}"

    # SimpleConsumer for every type but normal, which the PushConsumer reads (both run at once).
    with concurrent.futures.ThreadPoolExecutor(len(KINDS)) as pool:
        reads = {
            kind: pool.submit(
                runner.run,
                "push" if kind == "normal" else "simple",
                [*common, "--topic", topics[kind], "--group", unique_name(f"GrpcG{kind}"), "--timeout", "45"],
                45.0,
            )
            for kind in KINDS
        }
        read = {kind: future.result() for kind, future in reads.items()}

    for kind in KINDS:
        run = read[kind]
        bodies = [e["body"] for e in run.of("received")]
        expected = [f"grpc {kind} {i}" for i in range(COUNT)]
        assert sorted(bodies) == sorted(expected), f"{kind}: got {bodies}; {run.describe()}"
        if kind == "delay":
            due = {f"grpc delay {e['index']}": e["due_ms"] for e in sent[kind].of("sent")}
            for e in run.of("received"):
                assert e["at_ms"] >= due[e["body"]] - PRECISION_MS, f"delay message came early: {e}"
        if kind == "fifo":
            for group in ("group-0", "group-1"):
                in_group = [e["body"] for e in run.of("received") if e["group"] == group]
                assert in_group == sorted(in_group, key=lambda b: int(b.rsplit(" ", 1)[1])), in_group
