"""Topic attributes (RocketMQ 5) against Apache's brokers: mqadmin's ``updateTopic -a`` captured off the wire
and held to the project's header and attribute text, then the same attributes set and read back through
``rmq`` and the admin API, and the broker's refusals (an unchangeable attribute, MIXED) as one error line."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from admin import Admin
from cli.main import app
from rocketmq_wire import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.topic import CreateTopicRequestHeader
from rocketmq_wire.javahash import hashmap_order
from rocketmq_wire.topic_attributes import format_modification, parse_modification
from tests.header_checks import header_mismatches, key_order_mismatch
from tests.integration.apache import mqadmin
from tests.integration.apache.releases import full_releases
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.wiretap import WireTap, unavailable_reason

pytestmark = pytest.mark.integration

SETUPS = [
    s
    for s in PROVIDERS
    if (s.family == "binaries" and s.release is not None and s.release.major >= 5) or s.id == "python"
]
JAVA_ATTRIBUTES = "+message.type=FIFO,+queue.type=SimpleCQ,+cleanup.policy=DELETE"


def _assert_key_order_but_the_4x_pair(cmd: RemotingCommand) -> None:
    """The header's key order is Java's, but for one pair: ``order`` and ``topicSysFlag`` share a bucket,
    and 4.x (whose order the header declares: the project announces 4.9.8 by default) inserts
    ``topicSysFlag`` first, where 5.x's walk of the fields through a ``HashSet`` puts ``order`` first. A
    known difference, written up in docs/compatibility.md; any other one fails here."""
    mismatch = key_order_mismatch(cmd, CreateTopicRequestHeader)
    if mismatch is None:
        return
    captured = list(cmd.fields())
    ext = cmd.ext_fields
    assert ext is not None
    header_keys = [k for k, _ in CreateTopicRequestHeader.from_ext(cmd.fields()).ext_items() if k in ext]
    ours = hashmap_order(header_keys + [k for k in captured if k not in header_keys], ext.capacity)
    i, j = ours.index("topicSysFlag"), ours.index("order")
    ours[i], ours[j] = ours[j], ours[i]
    assert ours == captured, mismatch


def _rmq(cluster: Cluster, *args: str) -> Any:
    result = CliRunner().invoke(app, [*args, "-n", cluster.namesrv], env={"COLUMNS": "200"})
    return result


@pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)
async def test_attributes_as_mqadmin_writes_them_set_read_and_refused(cluster: Cluster) -> None:
    spec = next(s for s in PROVIDERS if s.id == cluster.provider)
    release = spec.release or full_releases()[-1]  # the project's broker: the newest full release's mqadmin
    mqadmin_topic = unique_name("AttrJava")
    args = ["-t", mqadmin_topic, "-c", cluster.cluster_name, "-a", JAVA_ATTRIBUTES]
    ports = {int(b.addr.rpartition(":")[2]): b.name for b in cluster.brokers}
    tap = WireTap(ports).start() if unavailable_reason() is None else None
    try:
        run = await asyncio.to_thread(mqadmin.run, release, "updateTopic", args, namesrv=cluster.namesrv)
    finally:
        frames = await asyncio.to_thread(tap.stop, 0.5) if tap is not None else []
    assert run.check().stdout.count("success") == len(cluster.brokers), run.stdout
    if tap is not None:
        creates = [f.command() for f in frames if f.to_server]
        creates = [c for c in creates if c.code == RequestCode.UPDATE_AND_CREATE_TOPIC]
        assert len(creates) == len(cluster.brokers)
        for cmd in creates:
            assert cmd.encode() == next(
                f.data for f in frames if f.to_server and f.command().opaque == cmd.opaque
            )
            assert header_mismatches(cmd, CreateTopicRequestHeader) == []
            _assert_key_order_but_the_4x_pair(cmd)
            text = cmd.fields()["attributes"]
            # the project writes the same text for what it parsed: same items, same HashMap order
            assert format_modification(parse_modification(text)) == text
            assert sorted(text.split(",")) == sorted(JAVA_ATTRIBUTES.split(","))

    async with Admin(cluster.namesrv) as admin:
        broker = cluster.brokers[0]
        java_made = await admin.topic_config(mqadmin_topic, broker.addr)
        assert java_made.attributes == {
            "message.type": "FIFO",
            "queue.type": "SimpleCQ",
            "cleanup.policy": "DELETE",
        }

    topic = unique_name("AttrRmq")
    created = await asyncio.to_thread(
        _rmq,
        cluster,
        "topic",
        "create",
        topic,
        "-c",
        cluster.cluster_name,
        "-a",
        "+message.type=DELAY",
        "--json",
    )
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["attributes"] == {"+message.type": "DELAY"}
    shown = await asyncio.to_thread(_rmq, cluster, "topic", "config", topic, "--json")
    assert shown.exit_code == 0, shown.output
    rows = json.loads(shown.stdout)
    assert {r["broker_name"] for r in rows} == {b.name for b in cluster.brokers}
    assert all(r["config"]["attributes"] == {"message.type": "DELAY"} for r in rows), rows

    # message.type may change; queue.type may not, and the broker says so
    changed = await asyncio.to_thread(
        _rmq, cluster, "topic", "create", topic, "-c", cluster.cluster_name, "-a", "+message.type=NORMAL"
    )
    assert changed.exit_code == 0, changed.output
    refused = await asyncio.to_thread(
        _rmq, cluster, "topic", "create", topic, "-c", cluster.cluster_name, "-a", "+queue.type=BatchCQ"
    )
    assert refused.exit_code != 0 and refused.output.count("\n") == 1, refused.output
    assert "unchangeable attribute" in refused.output, refused.output
    mixed = await asyncio.to_thread(
        _rmq, cluster, "topic", "create", unique_name("AttrMixed"), "-c", cluster.cluster_name,
        "-a", "+message.type=MIXED",
    )  # fmt: skip
    assert mixed.exit_code != 0 and "MIXED message type is not supported" in mixed.output, mixed.output
    async with Admin(cluster.namesrv) as admin:
        final = await admin.topic_config(topic, cluster.brokers[0].addr)
    assert final.attributes == {"message.type": "NORMAL"}
