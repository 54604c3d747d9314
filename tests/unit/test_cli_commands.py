"""The cluster commands end to end through typer's CliRunner, against an in-process NameServer and Broker.

A command runs its own event loop (``asyncio.run``), so each invocation runs in a worker thread while
the servers keep serving on the test's loop.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from admin import Admin, TopicNotFoundError
from cli.local_cluster import LocalCluster, LocalClusterSettings
from cli.main import app

TOPIC = "CliTopic"


class Rmq:
    """``rmq`` with ``NAMESRV_ADDR`` pointing at the local cluster."""

    def __init__(self, local: LocalCluster) -> None:
        self.local = local
        self.runner = CliRunner()

    async def __call__(self, *args: str, stdin: bytes | None = None, namesrv: bool = True) -> Result:
        env = {"NAMESRV_ADDR": self.local.namesrv_address if namesrv else ""}
        return await asyncio.to_thread(self.runner.invoke, app, list(args), input=stdin, env=env)

    async def json(self, *args: str, stdin: bytes | None = None) -> Any:
        result = await self(*args, "--json", stdin=stdin)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    async def has_route(self, topic: str) -> bool:
        async with Admin(self.local.namesrv_address) as admin:
            try:
                await admin.topic_route(topic)
            except TopicNotFoundError:
                return False
            return True

    async def create_topic(self, topic: str = TOPIC, queues: int = 2) -> None:
        created = await self.json("topic", "create", topic, "-r", str(queues), "-w", str(queues))
        assert created == {
            "topic": topic,
            "cluster": "DefaultCluster",
            "brokers": [self.local.broker_address],
            "attributes": {},
        }
        await self.local.wait_for_route(lambda: self.has_route(topic))


@pytest.fixture
async def rmq(tmp_path: Path) -> AsyncIterator[Rmq]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as local:
        yield Rmq(local)


async def test_send_then_route_status_and_message_lookups(rmq: Rmq) -> None:
    await rmq.create_topic()
    sent = await rmq.json(
        "send",
        TOPIC,
        "hello from the cli",
        "--tags",
        "TagC",
        "--keys",
        "k1 k2",
        "--keys",
        "k3",
        "-p",
        "color=blue",
    )
    assert sent["status"] == "SEND_OK"
    assert sent["broker_name"] == "broker-a"

    route = await rmq.json("route", TOPIC)
    assert route["brokerDatas"][0]["brokerAddrs"] == {"0": rmq.local.broker_address}
    assert route["queueDatas"][0]["writeQueueNums"] == 2

    status = await rmq.json("topic", "status", TOPIC)
    assert status["total_messages"] == 1
    assert [q["max_offset"] for q in status["queues"] if q["queue_id"] == sent["queue_id"]] == [1]

    by_offset = await rmq.json("message", "get", sent["offset_msg_id"])
    assert (by_offset["body"], by_offset["tags"], by_offset["keys"]) == (
        "hello from the cli",
        "TagC",
        ["k1", "k2", "k3"],
    )
    assert by_offset["properties"]["color"] == "blue"
    by_unique = await rmq.json("message", "get", sent["msg_id"], "--topic", TOPIC)
    assert by_unique["offset_msg_id"] == sent["offset_msg_id"]
    [by_key] = await rmq.json("message", "query", TOPIC, "--key", "k2")
    assert by_key["unique_id"] == sent["msg_id"]
    [by_unique_key] = await rmq.json("message", "query", TOPIC, "--unique-key", sent["msg_id"])
    assert by_unique_key["queue_offset"] == 0

    table = await rmq("route", TOPIC)
    assert table.exit_code == 0
    assert "broker-a" in table.stdout and rmq.local.broker_address in table.stdout


async def test_send_count_prints_a_throughput_summary(rmq: Rmq) -> None:
    await rmq.create_topic()
    report = await rmq.json("send", TOPIC, "--count", "20", "--concurrency", "4", stdin=b"from stdin")
    summary = report["summary"]
    assert (summary["sent"], summary["failed"]) == (20, 0)
    assert summary["msgs_per_s"] > 0 and summary["latency_p99_ms"] >= summary["latency_p50_ms"] > 0
    batched = await rmq.json("send", TOPIC, "x" * 100, "--count", "10", "--batch", "--batch-size", "4")
    assert (batched["summary"]["sent"], batched["body_bytes"]) == (10, 100)
    status = await rmq.json("topic", "status", TOPIC)
    assert status["total_messages"] == 30

    human = await rmq("send", TOPIC, "again", "--count", "3")
    assert human.exit_code == 0, human.output
    assert "msgs/s" in human.stdout and "p99" in human.stdout


async def test_cluster_broker_and_topic_listings(rmq: Rmq) -> None:
    [row] = await rmq.json("clusters")
    assert (row["cluster"], row["broker_name"], row["addr"]) == (
        "DefaultCluster",
        "broker-a",
        rmq.local.broker_address,
    )
    assert row["version"].startswith("V")
    stats = await rmq.json("broker-stats")
    assert int(stats[rmq.local.broker_address]["commitLogMaxOffset"]) >= 0
    config = await rmq.json("broker-config", "--broker", rmq.local.broker_address)
    assert config[rmq.local.broker_address]["brokerName"] == "broker-a"

    await rmq.create_topic("Listed")
    assert "Listed" in await rmq.json("topic", "list")
    deleted = await rmq.json("topic", "delete", "Listed")
    assert deleted["brokers"] == [rmq.local.broker_address]
    assert "Listed" not in await rmq.json("topic", "list")
    gone = await rmq("route", "Listed")
    assert gone.exit_code == 1
    assert gone.stderr.strip().splitlines() == [
        "error: no route for topic 'Listed': the NameServers do not know it"
    ]


async def test_consumer_progress_and_offset_reset(rmq: Rmq) -> None:
    await rmq.create_topic(queues=1)
    await rmq.json("send", TOPIC, "one", "--count", "3")
    missing = await rmq("consumer-progress", "CliGroup")
    assert missing.exit_code == 1 and "no consume progress" in missing.stderr

    reset = await rmq.json("reset-offset", "CliGroup", TOPIC, "--to", "0")
    assert [(q["queue_id"], q["new_offset"], q["method"]) for q in reset["queues"]] == [(0, 0, "direct")]
    progress = await rmq.json("consumer-progress", "CliGroup")
    assert (progress["total_lag"], progress["queues"][0]["broker_offset"]) == (3, 3)
    await rmq.json("reset-offset", "CliGroup", TOPIC, "--to", "now")
    assert (await rmq.json("consumer-progress", "CliGroup", "--topic", TOPIC))["total_lag"] == 0


async def test_kv_commands(rmq: Rmq) -> None:
    put = await rmq.json("kv", "put", "NS", "color", "blue")
    assert put["namesrvs"] == [rmq.local.namesrv_address]
    assert await rmq.json("kv", "get", "NS", "color") == {"namespace": "NS", "key": "color", "value": "blue"}
    assert await rmq.json("kv", "list", "NS") == {"color": "blue"}
    plain = await rmq("kv", "get", "NS", "color")
    assert plain.stdout.strip() == "blue"
    await rmq.json("kv", "delete", "NS", "color")
    missing = await rmq("kv", "get", "NS", "color")
    assert (missing.exit_code, missing.stderr.strip()) == (1, "error: no key 'color' in KV namespace 'NS'")


async def test_namesrv_from_the_option_wins_over_the_environment(rmq: Rmq, tmp_path: Path) -> None:
    result = await rmq("topic", "list", "--json", "-n", rmq.local.namesrv_address, namesrv=False)
    assert result.exit_code == 0, result.output
    assert "TBW102" in json.loads(result.stdout)
    missing = await rmq("topic", "list", namesrv=False)
    assert missing.exit_code == 1
    assert "no NameServer address" in missing.stderr


async def test_a_timer_send_is_held_by_the_broker_until_its_time(rmq: Rmq) -> None:
    """The project's broker holds a timer message (in ``rmq_sys_wheel_timer``): the topic stays empty well
    before the time, and the send was acknowledged."""
    await rmq.create_topic()
    sent = await rmq("send", TOPIC, "later", "--delay", "30s")
    assert sent.exit_code == 0, sent.output
    status = await rmq.json("topic", "status", TOPIC)
    assert sum(row["max_offset"] for row in status["queues"]) == 0, status


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--delay", "30s", "--delay-level", "2"], "--delay-level does not go with"),
        (["--delay", "30s", "--deliver-at", "1900000000000"], "not both"),
        (["--delay", "soon"], "cannot read 'soon' as a delay"),
        (["--deliver-at", "tomorrow"], "cannot read 'tomorrow' as a time"),
        (["--delay", "5s", "--batch"], "--batch does not go with"),
    ],
)
async def test_timer_options_that_cannot_work_are_refused_before_connecting(
    rmq: Rmq, args: list[str], message: str
) -> None:
    result = await rmq("send", TOPIC, "x", *args, namesrv=False)
    assert result.exit_code != 0
    assert message in result.output, result.output


def test_delays_are_written_as_javas_setters_would_and_times_as_epoch_ms() -> None:
    import typer

    from cli import params

    assert params.delay("1500ms", "--delay") == (1500, True)
    assert params.delay("30", "--delay") == (30, False)
    assert params.delay("5m", "--delay") == (300, False)
    assert params.delay("2h", "--delay") == (7200, False)
    assert params.delay("1d", "--delay") == (86_400, False)
    assert params.moment_ms("2026-01-01T00:00:00+00:00", "--deliver-at") == 1_767_225_600_000
    assert params.moment_ms("1767225600000", "--deliver-at") == 1_767_225_600_000
    with pytest.raises(typer.BadParameter):
        params.delay(f"{2**63}ms", "--delay")


async def test_recall_with_a_handle_apache_would_not_read_is_one_error_line(rmq: Rmq) -> None:
    result = await rmq("message", "recall", TOPIC, "not-a-handle")
    assert result.exit_code != 0
    assert "recall handle is invalid" in result.output and result.output.count("\n") == 1, result.output
