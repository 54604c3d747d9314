"""``rmq clusters``, ``rmq route`` and ``rmq send`` against one cluster of each kind, and a project broker
registered with Apache's NameServer, as a user runs them.

Each command runs as its own process (``python -m cli.main``), tables and ``--json`` alike; what ``send``
sent is read back from the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import sys
from typing import Any

import pytest

from tests.integration.clusters.fixture import representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.python_servers import REPO_ROOT, python_env
from tests.integration.clusters.readback import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("scenario_budget")]

#: The commands are the client's; what varies is how the servers answer: theirs, ours, both in one cluster.
SETUPS = representative_setups("mixed-python-broker-on-apache-5.3.3-namesrv")
ON_SETUPS = pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)

COMMAND_TIMEOUT_S = 20.0


@dataclasses.dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def json(self) -> Any:
        assert self.returncode == 0, self.output
        return json.loads(self.stdout)


async def rmq(*args: str) -> Run:
    """``rmq ARGS`` in a process of its own; killed (and reaped) if it outlives its deadline."""
    env = python_env()
    env.pop("NAMESRV_ADDR", None)
    env["COLUMNS"] = "250"  # tables are not cut to 80 columns when stdout is a pipe
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli.main",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        env=env,
        cwd=REPO_ROOT,
    )
    try:
        async with asyncio.timeout(COMMAND_TIMEOUT_S):
            stdout, stderr = await process.communicate()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    assert process.returncode is not None
    return Run(process.returncode, stdout.decode(), stderr.decode())


@ON_SETUPS
async def test_clusters(cluster: Cluster) -> None:
    table = await rmq("clusters", "-n", cluster.namesrv)
    assert table.returncode == 0, table.output
    for broker in cluster.brokers:
        for expected in (cluster.cluster_name, broker.name, broker.addr):
            assert expected in table.stdout
    rows = (await rmq("clusters", "-n", cluster.namesrv, "--json", "--cluster", cluster.cluster_name)).json()
    assert sorted((r["cluster"], r["broker_name"], r["broker_id"], r["addr"]) for r in rows) == sorted(
        (cluster.cluster_name, b.name, 0, b.addr) for b in cluster.brokers
    )
    for row in rows:
        assert row["error"] is None, "the broker answered GET_BROKER_RUNTIME_INFO"
        assert row["version"].startswith("V")
    unknown = await rmq("clusters", "-n", cluster.namesrv, "--json", "--cluster", "NoSuchCluster")
    assert unknown.returncode == 1
    assert f"no cluster named 'NoSuchCluster' is registered (known: {cluster.cluster_name})" in unknown.stderr


@ON_SETUPS
async def test_send_then_route(cluster: Cluster) -> None:
    topic = unique_name("CliSend")
    sent = await rmq(
        "send", topic, "grüße from the cli", "--tags", "cli", "-k", "k1", "-k", "k2", "-p", "origin=rmq",
        "-n", cluster.namesrv, "--json",
    )  # fmt: skip
    result = sent.json()
    assert result["status"] == "SEND_OK"
    assert result["topic"] == topic and result["broker_name"] in cluster.broker_names
    table = await rmq("send", topic, "second", "-n", cluster.namesrv)
    assert table.returncode == 0 and "SEND_OK" in table.stdout, table.output
    many = (
        await rmq(
            "send", topic, "many", "--count", "20", "--concurrency", "4", "-n", cluster.namesrv, "--json"
        )
    ).json()
    assert (many["summary"]["sent"], many["summary"]["failed"]) == (20, 0)

    stored = await read_topic(cluster.namesrv, topic, 22)
    [first] = [m for m in stored if m.unique_id == result["msg_id"]]
    assert first.body == "grüße from the cli".encode()
    assert (first.tags, first.keys, first.properties.get("origin")) == ("cli", ["k1", "k2"], "rmq")
    assert (first.queue_id, first.queue_offset) == (result["queue_id"], result["queue_offset"])
    assert sorted(m.body for m in stored if m.body == b"many") == [b"many"] * 20

    route = (await rmq("route", topic, "-n", cluster.namesrv, "--json")).json()
    addrs = {b.name: b.addr for b in cluster.brokers}
    assert route["brokerDatas"], route
    for broker in route["brokerDatas"]:
        assert broker["cluster"] == cluster.cluster_name
        assert broker["brokerAddrs"]["0"] == addrs[broker["brokerName"]]
    assert {q["brokerName"] for q in route["queueDatas"]} == {b["brokerName"] for b in route["brokerDatas"]}
    assert all(q["writeQueueNums"] >= 1 for q in route["queueDatas"])
    text = await rmq("route", topic, "-n", cluster.namesrv)
    listed = [addrs[b["brokerName"]] for b in route["brokerDatas"]]
    assert text.returncode == 0 and all(addr in text.stdout for addr in listed), text.output


@ON_SETUPS
async def test_route_of_an_unknown_topic_fails_readably(cluster: Cluster) -> None:
    topic = unique_name("NoSuchTopic")
    for extra in ([], ["--json"]):
        run = await rmq("route", topic, "-n", cluster.namesrv, *extra)
        assert run.returncode == 1
        assert f"no route for topic '{topic}'" in run.output
        assert "Traceback" not in run.output
