"""Message trace across implementations: records written by Apache's Java client (``enableMsgTrace``) and by
the project's clients (``enable_msg_trace``) land in ``RMQ_SYS_TRACE_TOPIC``, and each side reads the other's.

For each full release, on the project's servers and on Apache's (the release's own broker):

* the Java producer traces its sends (``Pub``), the project's push consumer and the Java push consumer
  (4.x) trace their consumption (``SubBefore``/``SubAfter``); ``Admin.query_trace`` and ``rmq message trace
  --json`` find every record of each message, with the producer's group, topic, tags and keys;
* the project's producer traces its sends and mqadmin ``queryMsgTraceById`` prints them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from admin import Admin, TopicNotFoundError
from consumer import ConsumeStatus, PushConsumer
from producer import Message, Producer
from rocketmq_wire.message import MessageExt
from rocketmq_wire.trace import TraceContext, TraceType
from tests.integration.apache import mqadmin
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters.fixture import dedicated_cluster
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.probe import eventually
from tests.integration.cpp_peer.runner import message as peer_message
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = [pytest.mark.integration]

SENT = 3
REPO_ROOT = Path(__file__).resolve().parents[2]

#: (set-up, release whose Java client and mqadmin run): the project's servers with each full release's
#: client, and the first full release's own Apache servers.
SETUPS = [("python", r) for r in full_releases()] + [
    (f"binaries-{r.version}", r) for r in full_releases()[:1]
]


@pytest.fixture(params=SETUPS, ids=[f"{s}-client-{r.tools_version}" for s, r in SETUPS])
def traced_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[Cluster, ApacheRelease]]:
    provider, release = request.param
    with dedicated_cluster(provider) as (cluster, _launch, _spec):
        yield cluster, release


def _types(found: list[TraceContext]) -> list[tuple[TraceType, str]]:
    return [(ctx.trace_type, ctx.group_name) for ctx in found]


async def _trace_of(
    namesrv: str, msg_id: str, wanted: set[tuple[TraceType, str]], sub_afters: int = 0
) -> list[TraceContext]:
    """The trace records of ``msg_id`` once every (type, group) in ``wanted`` is among them, and at least
    ``sub_afters`` SubAfter records."""

    def complete(found: list[TraceContext]) -> bool:
        after = sum(1 for ctx in found if ctx.trace_type is TraceType.SUB_AFTER)
        return wanted <= set(_types(found)) and after >= sub_afters

    async with Admin(namesrv) as admin:
        return await eventually(
            lambda: admin.query_trace(msg_id),
            complete,
            timeout_s=40.0,
            what=f"trace records {sorted((t.value, g) for t, g in wanted)} of {msg_id}",
            retry_on=(TopicNotFoundError,),
        )


async def _consume_traced(namesrv: str, group: str, topic: str, count: int) -> set[str]:
    """The project's push consumer, with message trace on, until it has ``count`` messages."""
    got: set[str] = set()
    done = asyncio.Event()

    async def handle(messages: list[MessageExt], _context: object) -> ConsumeStatus:
        got.update(m.client_msg_id for m in messages)
        if len(got) >= count:
            done.set()
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(group, namesrv, consume_from="FIRST_OFFSET", enable_msg_trace=True)
    consumer.subscribe(topic, "*")
    consumer.register_listener(handle)
    async with consumer:
        await asyncio.wait_for(done.wait(), 60)
        tracer = consumer.trace_dispatcher
        assert tracer is not None, "enable_msg_trace=True but the consumer has no trace dispatcher"
        await tracer.flush()
    return got


def test_java_traces_read_by_the_project_and_project_traces_read_by_mqadmin(
    traced_cluster: tuple[Cluster, ApacheRelease], java_client: JavaClientFactory
) -> None:
    cluster, release = traced_cluster
    java = java_client(release)
    topic = unique_name("Traced")
    java_group = unique_name("JavaTracePg")
    specs = [peer_message(f"traced {i}", tags="TagT", keys=f"tk{i}") for i in range(SENT)]
    sent = java.send_sync(cluster.namesrv, topic, specs, group=java_group, extra=["--trace"]).check()
    ids = [r.msg_id for r in sent.send_results()]
    assert len(ids) == SENT and all(ids), sent.describe()

    project_cg = unique_name("PyTraceCg")
    got = asyncio.run(_consume_traced(cluster.namesrv, project_cg, topic, SENT))
    assert set(ids) <= got
    java_cg = unique_name("JavaTraceCg")
    consumed = java.push_consume(cluster.namesrv, java_cg, topic, SENT, extra=["--trace"]).check()
    assert {m.msg_id for m in consumed.messages()} >= set(ids), consumed.describe()

    wanted = {(TraceType.PUB, java_group), (TraceType.SUB_BEFORE, project_cg)}
    sub_afters = 1
    if release.major == 4:
        # 5.x's Java consumer traces only messages carrying MSG_REGION, which Apache's broker stores only
        # when a send hook (a plug-in) is installed: none is by default, so 5.x writes no consume records.
        wanted.add((TraceType.SUB_BEFORE, java_cg))
        sub_afters = 2
    for index, msg_id in enumerate(ids):
        found = asyncio.run(_trace_of(cluster.namesrv, msg_id, wanted, sub_afters))
        [pub] = [c for c in found if c.trace_type is TraceType.PUB]
        bean = pub.beans[0]
        assert (bean.topic, bean.tags, bean.keys, pub.success) == (topic, "TagT", f"tk{index}", True)
        assert bean.offset_msg_id, "Java's Pub record carries the offset message id"
        after = [c for c in found if c.trace_type is TraceType.SUB_AFTER]
        assert all(c.success for c in after), [str(c) for c in after]

    # rmq, in its own process, prints the same records.
    shown = subprocess.run(
        [sys.executable, "-m", "cli.main", "message", "trace", ids[0], "-n", cluster.namesrv, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO_ROOT,
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    rows = json.loads(shown.stdout)
    assert {"Pub", "SubBefore", "SubAfter"} <= {row["type"] for row in rows}
    assert any(row["type"] == "Pub" and row["group"] == java_group for row in rows)

    # The project's producer traces its own sends; Apache's mqadmin reads them.
    project_pg = unique_name("PyTracePg")
    msg_id = asyncio.run(_send_traced(cluster.namesrv, project_pg, topic))
    asyncio.run(_trace_of(cluster.namesrv, msg_id, {(TraceType.PUB, project_pg)}))
    printed = mqadmin.run(release, "queryMsgTraceById", ["-i", msg_id], namesrv=cluster.namesrv).check()
    assert "Pub" in printed.stdout and project_pg in printed.stdout, printed.stdout


async def _send_traced(namesrv: str, group: str, topic: str) -> str:
    async with Producer(group, namesrv, enable_msg_trace=True) as producer:
        result = await producer.send(Message(topic, b"traced by the project", tags="TagP", keys=["pk"]))
        tracer = producer.trace_dispatcher
        assert tracer is not None
        await tracer.flush()
        assert tracer.sent_messages >= 1, "the trace message was not sent"
    return result.msg_id
