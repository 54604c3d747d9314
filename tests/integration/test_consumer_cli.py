"""``rmq consume`` in a real process against the project's NameServer and Broker (in the test's loop).

The command function is run on its own, as the lead registers it in ``cli/main.py``.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import typer

from cli.consume_cmd import start_position
from cli.consume_run import body_fields, message_line
from consumer.testing import WAIT_S, LocalCluster
from producer import Message, MessageQueue, Producer
from rocketmq_wire.message import MessageExt, encode_properties

pytestmark = pytest.mark.integration

TOPIC = "Tickets"
_RUN = "import typer; from cli.consume_cmd import consume; typer.run(consume)"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path / "store") as running:
        await running.create_topic(TOPIC, 1)
        yield running


async def _send(cluster: LocalCluster, bodies: list[bytes]) -> None:
    queue = MessageQueue(TOPIC, cluster.broker.config.broker_name, 0)
    async with Producer("TicketDesk", cluster.address) as producer:
        for i, body in enumerate(bodies):
            await producer.send(Message(TOPIC, body, tags="open", keys=[f"t{i}"]), queue=queue)


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RUN, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )


async def _finish(proc: asyncio.subprocess.Process) -> tuple[int, str, str]:
    try:
        async with asyncio.timeout(WAIT_S):
            out, err = await proc.communicate()
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_count_json_and_exact_commits(cluster: LocalCluster) -> None:
    await _send(cluster, [b"first", b"\xff\xfe binary", b"third", b"fourth", b"fifth"])
    common = ("--group", "Support", "--namesrv", cluster.address)
    proc = await _spawn(TOPIC, *common, "--from", "earliest", "--count", "3", "--json")
    code, out, err = await _finish(proc)
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["queue_offset"] for r in records] == [0, 1, 2]
    assert records[0]["body"] == "first" and records[0]["body_encoding"] == "utf-8"
    assert records[1]["body_encoding"] == "base64" and records[1]["body"] == "//4gYmluYXJ5"
    assert records[0]["tags"] == "open" and records[0]["keys"] == ["t0"]
    assert records[0]["topic"] == TOPIC and records[0]["queue_id"] == 0
    assert records[0]["properties"]["TAGS"] == "open"
    assert len(records[0]["msg_id"]) == 32, "the producer's unique id"
    assert cluster.broker.consumer_offsets.query_offset("Support", TOPIC, 0) == 3, "only what was printed"

    proc = await _spawn(TOPIC, *common, "--count", "2")
    code, out, err = await _finish(proc)
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].startswith(f"{TOPIC} q0@3 id=") and lines[0].endswith(" fourth")
    assert "tags=open keys=t4" in lines[1]


async def test_latest_skips_what_was_there_and_ctrl_c_commits_and_exits_0(cluster: LocalCluster) -> None:
    await _send(cluster, [b"old-1", b"old-2"])
    proc = await _spawn(TOPIC, "--group", "Watchers", "-n", cluster.address, "--json")
    try:
        # "latest" for a group that never consumed: only what arrives from now on (once it has joined)
        async with asyncio.timeout(WAIT_S):
            while cluster.broker.consumer_manager.group(
                "Watchers"
            ) is None or not cluster.broker.pull_holder.held(TOPIC, 0):
                await asyncio.sleep(0.05)
        await _send(cluster, [b"new"])
        assert proc.stdout is not None
        async with asyncio.timeout(WAIT_S):
            line = await proc.stdout.readline()
        assert json.loads(line)["body"] == "new"
        proc.send_signal(signal.SIGINT)
        code, out, err = await _finish(proc)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert code == 0, err
    assert out == "" and "Traceback" not in err
    assert cluster.broker.consumer_offsets.query_offset("Watchers", TOPIC, 0) == 3


async def test_a_missing_nameserver_is_one_line() -> None:
    proc = await _spawn(TOPIC, "--group", "G", "--namesrv", "")
    code, _, err = await _finish(proc)
    assert code == 1 and "no NameServer address" in err and "Traceback" not in err


async def test_an_unknown_topic_is_one_line(cluster: LocalCluster) -> None:
    proc = await _spawn("NoSuchTopic", "--group", "G", "--namesrv", cluster.address)
    code, _, err = await _finish(proc)
    assert code == 1 and "'NoSuchTopic' does not exist" in err and "Traceback" not in err


def test_start_positions() -> None:
    assert start_position("earliest") == ("FIRST_OFFSET", None)
    assert start_position("LATEST") == ("LAST_OFFSET", None)
    assert start_position("1700000000000") == ("TIMESTAMP", 1_700_000_000_000)
    with pytest.raises(typer.BadParameter, match="not a time"):
        start_position("soon")


def test_bodies_and_lines() -> None:
    assert body_fields("é".encode()) == {"body": "é", "body_encoding": "utf-8"}
    assert body_fields(b"\x80") == {"body": "gA==", "body_encoding": "base64"}
    message = MessageExt(
        topic="T",
        body=b"two\nlines",
        queue_id=2,
        queue_offset=9,
        properties_string=encode_properties({"TAGS": "a", "KEYS": "k1 k2", "UNIQ_KEY": "ID"}),
    )
    assert message_line(message) == "T q2@9 id=ID tags=a keys=k1,k2 two\\nlines"
    message.body = b"\x80"
    assert message_line(message).endswith(" base64:gA==")
