"""Apache's mqadmin (4.9.8 and 5.3.3, from Maven Central) against the project's NameServer and Broker.

An operator points mqadmin at a cluster and reads what it prints; every command here is checked against what
the project's own clients did or see: the topic it created, the messages it sent, the offsets its consumer
committed, the broker's settings.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from admin import Admin
from cli.main import app
from consumer import ConsumeStatus, PullConsumer, PushConsumer
from producer import Message, Producer, SendResult
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.message import MessageExt
from tests.integration.apache import mqadmin, mqadmin_host
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters import providers
from tests.integration.clusters.fixture import dedicated_cluster, skip_or_fail
from tests.integration.clusters.model import Cluster, unique_name

pytestmark = [pytest.mark.integration]

log = logging.getLogger(__name__)

SENT = 5
QUEUES = 6


class Scene:
    """A project cluster, a topic mqadmin created on it, messages sent there and a group that read them."""

    def __init__(self, cluster: Cluster, release: ApacheRelease) -> None:
        self.cluster = cluster
        self.release = release
        self.topic = unique_name("Mqadmin")
        self.group = unique_name("MqadminGroup")
        self.created = ""
        self.sent: list[SendResult] = []

    def run(self, command: str, *args: str) -> str:
        return mqadmin.run(self.release, command, list(args), namesrv=self.cluster.namesrv).check().stdout


async def _send_and_consume(scene: Scene) -> None:
    async with Producer(unique_name("pg"), scene.cluster.namesrv) as producer:
        scene.sent = [
            await producer.send(Message(scene.topic, f"m{i}".encode(), tags="TagA", keys=[f"key{i}"]))
            for i in range(SENT)
        ]
    consumer = PullConsumer(scene.group, scene.cluster.namesrv, consume_from="FIRST_OFFSET")
    consumer.subscribe(scene.topic, "*")
    async with consumer:
        got = 0
        while got < SENT:
            got += len(await consumer.poll(2.0))
        await consumer.commit()


@pytest.fixture(scope="module", params=full_releases(), ids=lambda r: f"mqadmin-{r.tools_version}")
def scene(request: pytest.FixtureRequest) -> Iterator[Scene]:
    release: ApacheRelease = request.param
    reason = providers.java_unavailable(release)
    if reason is not None:
        skip_or_fail(reason)
    with dedicated_cluster("python") as (cluster, _launch, _spec):
        made = Scene(cluster, release)
        made.created = made.run(
            "updateTopic", "-b", cluster.broker_addr, "-t", made.topic, "-r", str(QUEUES), "-w", str(QUEUES)
        )
        asyncio.run(_send_and_consume(made))
        yield made


def test_update_topic_creates_it_on_the_broker(scene: Scene) -> None:
    assert f"create topic to {scene.cluster.broker_addr} success." in scene.created

    async def route() -> TopicRouteData:
        async with Admin(scene.cluster.namesrv) as admin:
            return await admin.topic_route(scene.topic)

    [queues] = asyncio.run(route()).queue_datas
    assert (queues.read_queue_nums, queues.write_queue_nums, queues.perm) == (QUEUES, QUEUES, 6)


def test_cluster_list(scene: Scene) -> None:
    out = scene.run("clusterList")
    row = re.search(rf"^(\S+)\s+(\S+)\s+0\s+{re.escape(scene.cluster.broker_addr)}\s+(V\S+)", out, re.M)
    assert row is not None, out
    assert (row.group(1), row.group(2)) == (scene.cluster.cluster_name, scene.cluster.broker_name)


def test_topic_list(scene: Scene) -> None:
    listed = scene.run("topicList").split()
    assert scene.topic in listed and "TBW102" in listed and f"%RETRY%{scene.group}" in listed


def test_topic_route(scene: Scene) -> None:
    out = scene.run("topicRoute", "-t", scene.topic)
    route = TopicRouteData.from_json(out[out.index("{") : out.rindex("}") + 1].encode())
    [broker] = route.broker_datas
    assert (broker.broker_name, broker.master_addr()) == (
        scene.cluster.broker_name,
        scene.cluster.broker_addr,
    )
    [queues] = route.queue_datas
    assert (queues.broker_name, queues.write_queue_nums) == (scene.cluster.broker_name, QUEUES)


def _rows(out: str) -> list[list[str]]:
    """The table's rows (its header starts with ``#``), split on blanks."""
    return [line.split() for line in out.splitlines() if line.strip() and not line.startswith("#")]


def test_topic_status(scene: Scene) -> None:
    out = scene.run("topicStatus", "-t", scene.topic)
    rows = [r for r in _rows(out) if r[0] == scene.cluster.broker_name]
    assert sorted(int(r[1]) for r in rows) == list(range(QUEUES))
    assert sum(int(r[3]) - int(r[2]) for r in rows) == SENT
    per_queue = {int(r[1]): int(r[3]) for r in rows}
    for result in scene.sent:
        assert per_queue[result.message_queue.queue_id] > result.queue_offset


def test_consumer_progress(scene: Scene) -> None:
    out = scene.run("consumerProgress", "-g", scene.group)
    rows = [r for r in _rows(out) if r[0] == scene.topic]
    assert len(rows) == QUEUES, out
    # topic, broker, queue, broker offset, consumer offset, diff (5.x adds in-flight, from a pull offset
    # that 4.x brokers -- and the project's, which answers as 4.9.8 -- do not report)
    assert sum(int(r[3]) for r in rows) == SENT
    assert all(r[3] == r[4] and r[5] == "0" for r in rows), out
    assert re.search(r"^(Consume )?Diff Total: 0$", out, re.M), out


def test_query_msg_by_id(scene: Scene) -> None:
    first = scene.sent[0]
    topic = ["-t", scene.topic] if scene.release.major >= 5 else []  # 5.x asks for it
    out = scene.run("queryMsgById", "-i", first.offset_msg_id, *topic)
    fields = dict(re.findall(r"^([A-Za-z ]+):\s+(.*)$", out, re.M))
    assert fields["Topic"] == scene.topic
    assert (fields["Tags"], fields["Keys"]) == ("[TagA]", "[key0]")
    assert (int(fields["Queue ID"]), int(fields["Queue Offset"])) == (
        first.message_queue.queue_id,
        first.queue_offset,
    )
    assert f"UNIQ_KEY={first.msg_id}" in fields["Properties"]


def test_broker_status(scene: Scene) -> None:
    out = scene.run("brokerStatus", "-b", scene.cluster.broker_addr)
    stats = {k.strip(): v.strip() for k, v in re.findall(r"^(\S[^:]*?)\s*:\s(.*)$", out, re.M)}
    assert int(stats["msgPutTotalTodayNow"]) >= SENT
    assert int(stats["putMessageTimesTotal"]) >= SENT
    assert stats["brokerVersionDesc"].startswith("V")


def test_get_broker_config(scene: Scene) -> None:
    out = scene.run("getBrokerConfig", "-b", scene.cluster.broker_addr)
    config = {k.strip(): v.strip() for k, v in re.findall(r"^(\w+)\s+=\s+(.*)$", out, re.M)}
    assert config["brokerName"] == scene.cluster.broker_name
    assert config["brokerClusterName"] == scene.cluster.cluster_name
    assert config["listenPort"] == scene.cluster.broker_addr.rsplit(":", 1)[1]


def test_update_kv_config(scene: Scene) -> None:
    namespace, key = unique_name("ns"), unique_name("key")
    out = scene.run("updateKvConfig", "-s", namespace, "-k", key, "-v", "value-from-mqadmin")
    assert "success" in out

    async def read() -> str | None:
        async with Admin(scene.cluster.namesrv) as admin:
            return await admin.kv_get(namespace, key)

    assert asyncio.run(read()) == "value-from-mqadmin"


def test_consumer_status_of_a_project_consumer(scene: Scene) -> None:
    """mqadmin asks the broker, the broker relays GET_CONSUMER_RUNNING_INFO to the project's consumer, and
    mqadmin prints the ConsumerRunningInfo it parsed from the consumer's answer."""
    group = unique_name("MqadminStatus")

    async def status() -> tuple[str, str]:
        consumer = PushConsumer(group, scene.cluster.namesrv, consume_from="CONSUME_FROM_FIRST_OFFSET")
        consumer.subscribe(scene.topic, "TagA")

        async def listener(messages: list[MessageExt], context: object) -> ConsumeStatus:
            return ConsumeStatus.CONSUME_SUCCESS

        consumer.register_listener(listener)
        async with consumer:
            async with Admin(scene.cluster.namesrv) as admin:
                for _ in range(100):  # until the broker knows the member (its first heartbeat)
                    if (await admin.consumer_connections(group)).connections:
                        break
                    await asyncio.sleep(0.1)
            out = await asyncio.to_thread(scene.run, "consumerStatus", "-g", group, "-i", consumer.client_id)
            return out, consumer.client_id

    out, client_id = asyncio.run(status())
    assert "#Consumer Properties#" in out and "#Consumer Subscription#" in out, out
    assert re.search(r"PROP_CONSUME_TYPE\s*:\s*CONSUME_PASSIVELY", out), out
    assert re.search(rf"{re.escape(scene.topic)}\s.*TagA", out), out
    assert re.search(r"PROP_CLIENT_VERSION\s*:\s*V\d", out), out
    assert client_id


def test_producer_lists_a_connected_project_producer(scene: Scene) -> None:
    """mqadmin ``producer`` asks the broker for its whole producer table (GET_ALL_PRODUCER_INFO) while a
    project producer is connected, parses the ProducerTableInfo the project's broker wrote and prints one
    line per producer; ``rmq group producer-table`` reads the same table."""
    group = unique_name("MqadminProducer")
    addr = scene.cluster.broker_addr

    async def listed() -> tuple[str, str, Any]:
        async with Producer(group, scene.cluster.namesrv) as producer:
            await producer.send(Message(scene.topic, b"from a producer mqadmin lists"))
            async with Admin(scene.cluster.namesrv) as admin:
                for _ in range(100):  # until the broker has the producer's first heartbeat
                    if group in (await admin.producer_table(addr)).data:
                        break
                    await asyncio.sleep(0.1)
            out = await asyncio.to_thread(scene.run, "producer", "-b", addr)
            args = ["group", "producer-table", "-b", addr, "-n", scene.cluster.namesrv, "--json"]
            result = await asyncio.to_thread(CliRunner().invoke, app, args)
            assert result.exit_code == 0, result.output
            return out, producer.client_id, json.loads(result.stdout)

    out, client_id, rmq_json = asyncio.run(listed())
    log.info("mqadmin producer -b %s printed:\n%s", addr, out)
    for listed_group in (group, "CLIENT_INNER_PRODUCER"):  # Java's client lists its inner group too
        line = re.search(
            rf"^producer group \({re.escape(listed_group)}\) instance : clientId={re.escape(client_id)},"
            r"remoteIP=/\S+:\d+, language=PYTHON, version=\d+, lastUpdateTimestamp=[1-9]\d*$",
            out,
            re.M,
        )
        assert line is not None, out
    [table] = rmq_json
    assert table["broker_addr"] == addr
    assert [p["client_id"] for p in table["groups"][group]] == [client_id]


# -- the host JVMs mqadmin runs in (tests/integration/apache/mqadmin_host.py) ------------------------------


def _fresh_run(scene: Scene, *args: str) -> mqadmin.AdminRun:
    """``mqadmin ARGS -n NAMESRV`` in a JVM of its own, as before hosts existed."""
    previous = os.environ.get(mqadmin_host.DISABLE_ENV)
    os.environ[mqadmin_host.DISABLE_ENV] = "0"
    try:
        return mqadmin.run(scene.release, args[0], list(args[1:]), namesrv=scene.cluster.namesrv)
    finally:
        if previous is None:
            os.environ.pop(mqadmin_host.DISABLE_ENV)
        else:
            os.environ[mqadmin_host.DISABLE_ENV] = previous


def _hosts() -> set[int]:
    return mqadmin_host.POOL.pids()


def test_a_host_prints_and_exits_as_a_fresh_mqadmin(scene: Scene) -> None:
    for args in (("topicStatus", "-t", scene.topic), ("topicRoute", "-t", unique_name("NoSuchTopic"))):
        hosted = mqadmin.run(scene.release, args[0], list(args[1:]), namesrv=scene.cluster.namesrv)
        fresh = _fresh_run(scene, *args)
        assert (hosted.returncode, hosted.stdout) == (fresh.returncode, fresh.stdout)
    assert _hosts(), "no mqadmin host is running after hosted commands"


def test_each_hosted_command_runs_on_fresh_sub_command_objects(scene: Scene) -> None:
    # sendMessage keeps its producer in its sub-command object and shuts it down after sending: a host
    # that reused the object would fail every send after its first.
    topic = unique_name("MqadminHosted")
    scene.run("updateTopic", "-b", scene.cluster.broker_addr, "-t", topic, "-r", "2", "-w", "2")
    for i in range(3):
        out = scene.run("sendMessage", "-t", topic, "-p", f"hosted send {i}")
        assert re.search(
            rf"^{re.escape(scene.cluster.broker_name)}\s+\d+\s+SEND_OK\s+[0-9A-F]+$", out, re.M
        ), out


def test_a_host_that_mqadmin_exits_reports_its_status_and_the_next_command_gets_a_new_host(
    scene: Scene,
) -> None:
    mqadmin.run(scene.release, "clusterList", [], namesrv=scene.cluster.namesrv).check()
    before = _hosts()
    # Options mqadmin cannot parse: it prints the command's usage and calls System.exit(1).
    bad = mqadmin.run(scene.release, "updateTopic", ["--no-such-option"], namesrv=scene.cluster.namesrv)
    fresh = _fresh_run(scene, "updateTopic", "--no-such-option")
    assert (bad.returncode, bad.stdout) == (fresh.returncode, fresh.stdout) == (1, fresh.stdout)
    assert "usage: mqadmin updateTopic" in bad.stdout
    after = mqadmin.run(scene.release, "clusterList", [], namesrv=scene.cluster.namesrv).check()
    assert scene.cluster.broker_addr in after.stdout
    assert len(before - _hosts()) == 1, "the host mqadmin ended is still counted"


def test_a_command_without_namesrv_does_not_reuse_the_previous_commands(scene: Scene) -> None:
    mqadmin.run(scene.release, "clusterList", [], namesrv=scene.cluster.namesrv).check()
    # A fresh mqadmin without -n (and no NAMESRV_ADDR) finds no name server; in a host that already ran a
    # command with -n it must not find that one either.
    env_addr = os.environ.pop("NAMESRV_ADDR", None)
    try:
        hosted = mqadmin.run(scene.release, "clusterList", [])
    finally:
        if env_addr is not None:
            os.environ["NAMESRV_ADDR"] = env_addr
    assert scene.cluster.broker_addr not in hosted.stdout, hosted.stdout


def test_a_host_that_overruns_its_timeout_is_killed(scene: Scene) -> None:
    mqadmin.run(scene.release, "clusterList", [], namesrv=scene.cluster.namesrv).check()
    before = _hosts()
    with pytest.raises(subprocess.TimeoutExpired):
        mqadmin.run(scene.release, "clusterList", [], namesrv=scene.cluster.namesrv, timeout=0.001)
    gone = before - _hosts()
    assert len(gone) == 1
    [pid] = gone
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
