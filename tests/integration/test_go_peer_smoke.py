"""Apache's Go client (``rocketmq-client-go/v2``) against the project's NameServer and Broker.

The Go peer (``tests/integration/go``, built by ``tests/integration/go_peer``) speaks the C++ peer's
JSON-lines protocol; each command runs in its own process and its blocking runner calls go to a thread, so
the servers, which live in this test's event loop, keep serving. What the Go producer sends (sync, async,
oneway, orderly, batch; JSON and ROCKETMQ headers) is read back by the project's pull consumer with every
attribute intact; what the project's producer sends, the Go push consumer receives exactly once; the Go
admin's route lists the topic's queues; bad usage and NameServers that are not there end in readable
errors, never hangs. Skipped, saying what is missing, without Go (or failed, with
``ROCKETMQ_REQUIRE_PEERS=1``).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from consumer.testing import LocalCluster
from producer import Message, Producer, select_by_hash
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.topics import retry_topic
from tests.integration.clusters.readback import read_topic
from tests.integration.cpp_peer import runner
from tests.integration.go_peer.build import CLIENT_MODULE, GoClient, client_version

pytestmark = pytest.mark.integration


TOPIC = "GoInterop"
QUEUES = 4
#: Generous: two cores shared with other test runs, and each command starts a fresh Go client.
PEER_TIMEOUT_S = 90.0


def assert_gone(result: runner.PeerResult) -> None:
    assert runner.process_gone(result.pid), f"peer pid {result.pid} still exists"
    assert runner.group_gone(result.pid), f"process group {result.pid} still has members"


@pytest.fixture
async def local_cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path / "store") as running:
        await running.create_topic(TOPIC, QUEUES)
        yield running


async def _run(go_client: GoClient, command: str, args: list[str], **kw: Any) -> runner.PeerResult:
    return await asyncio.to_thread(go_client.run, command, args, **kw)


def _sent(result: runner.PeerResult) -> list[dict[str, Any]]:
    """The ``send_result`` lines of a run that must have succeeded."""
    return result.check().of("send_result")


def test_probe_reports_the_pinned_go_client(go_client: GoClient) -> None:
    result = go_client.run("probe", timeout=PEER_TIMEOUT_S).check()
    assert [e["event"] for e in result.events] == ["library", "done"]
    [library] = result.of("library")
    assert library["module"] == CLIENT_MODULE
    assert library["version"] == client_version() == "v2.1.2"
    assert "ROCKETMQ" in library["serialize"]
    assert result.stderr == "" and result.noise == []
    assert_gone(result)


@pytest.mark.parametrize("serialize", ["JSON", "ROCKETMQ"])
async def test_go_sync_sends_arrive_intact(
    local_cluster: LocalCluster, go_client: GoClient, serialize: str
) -> None:
    bodies = [f"go-sync-{i}".encode() for i in range(4)] + [b"\x00binary\x00body\xff\x01"]
    specs = [
        go_client.message(
            body,
            tags="TagA" if i % 2 else "TagB",
            keys=[f"key-{i}", "shared"],
            properties={"origin": "go", "index": str(i), "naïve": "ünïcode"},
        )
        for i, body in enumerate(bodies)
    ]
    result = await asyncio.to_thread(
        go_client.send_sync,
        local_cluster.address,
        TOPIC,
        specs,
        group="GoSyncSenders",
        extra=["--serialize", serialize],
        timeout=PEER_TIMEOUT_S,
    )
    sent = _sent(result)
    assert result.of("ready")[0]["serialize"] == serialize
    assert [s["index"] for s in sent] == list(range(5))
    assert [s["status"] for s in sent] == ["SEND_OK"] * 5
    assert {s["broker_name"] for s in sent} == {local_cluster.broker.config.broker_name}
    assert all(0 <= s["queue_id"] < QUEUES for s in sent)
    assert result.done is not None and result.done["count"] == 5 and result.done["shutdown"] == "ok"

    got = await read_topic(local_cluster.address, TOPIC, 5, timeout_s=30)
    assert len(got) == 5
    by_id = {m.client_msg_id: m for m in got}
    assert set(by_id) == {s["msg_id"] for s in sent}, "the Go client's message ids (UNIQ_KEY)"
    for index, outcome in enumerate(sent):
        message = by_id[outcome["msg_id"]]
        assert message.body == bodies[index]
        assert message.tags == ("TagA" if index % 2 else "TagB")
        assert message.keys == [f"key-{index}", "shared"]
        assert message.properties["origin"] == "go"
        assert message.properties["index"] == str(index)
        assert message.properties["naïve"] == "ünïcode"
        assert (message.queue_id, message.queue_offset) == (outcome["queue_id"], outcome["offset"])
        assert message.msg_id == outcome["offset_msg_id"], "the broker's offset message id"
        assert message.reconsume_times == 0
    assert_gone(result)


@pytest.mark.parametrize(("serialize", "type_byte"), [("JSON", 0), ("ROCKETMQ", 1)])
def test_serialize_picks_the_header_encoding_on_the_wire(
    go_client: GoClient, serialize: str, type_byte: int
) -> None:
    """The first frame the Go client sends (a route request to the NameServer) carries the chosen header
    serialization in the top byte of its header length, as Java's RemotingCommand marks it."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(PEER_TIMEOUT_S)
    frames: list[bytes] = []

    def capture() -> None:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(10)
            data = b""
            while len(data) < 8 or len(data) < 4 + int.from_bytes(data[:4], "big"):
                chunk = conn.recv(65536)
                if not chunk:
                    break
                data += chunk
            frames.append(data)

    thread = threading.Thread(target=capture, name="capture-namesrv", daemon=True)
    thread.start()
    try:
        address = f"127.0.0.1:{server.getsockname()[1]}"
        args = ["--topic", TOPIC, "--serialize", serialize, "--retry-times", "0"]
        result = go_client.run("send-sync", args, namesrv=address, timeout=PEER_TIMEOUT_S)
    finally:
        thread.join(timeout=15)
        server.close()
    assert result.returncode == runner.EXIT_CLIENT_ERROR, result.describe()
    [frame] = frames
    header_length = int.from_bytes(frame[4:8], "big")
    assert header_length >> 24 == type_byte
    header = frame[8 : 8 + (header_length & 0xFFFFFF)]
    if serialize == "JSON":
        assert json.loads(header)["code"] == RequestCode.GET_ROUTEINFO_BY_TOPIC
    else:  # ROCKETMQ: code (2 bytes), language (1 byte, 9 = GO), version (2 bytes) first
        assert int.from_bytes(header[:2], "big") == RequestCode.GET_ROUTEINFO_BY_TOPIC
        assert header[2] == 9
        assert TOPIC.encode() in header
    assert_gone(result)


async def test_go_async_and_oneway_sends_arrive(local_cluster: LocalCluster, go_client: GoClient) -> None:
    async_specs = [go_client.message(f"go-async-{i}", tags="Async") for i in range(6)]
    result = await asyncio.to_thread(
        go_client.send, "send-async", local_cluster.address, TOPIC, async_specs, timeout=PEER_TIMEOUT_S
    )
    sent = _sent(result)
    assert sorted(s["index"] for s in sent) == list(range(6))
    assert [s["status"] for s in sent] == ["SEND_OK"] * 6

    oneway_specs = [go_client.message("go-oneway-{i}", tags="Oneway")]
    oneway = await asyncio.to_thread(
        go_client.send_oneway,
        local_cluster.address,
        TOPIC,
        oneway_specs,
        extra=["--count", "4"],
        timeout=PEER_TIMEOUT_S,
    )
    assert [e["index"] for e in oneway.check().of("sent_oneway")] == [0, 1, 2, 3]
    assert oneway.of("send_result") == []

    got = await read_topic(local_cluster.address, TOPIC, 10, timeout_s=30)
    assert sorted(m.body for m in got) == sorted(
        [f"go-async-{i}".encode() for i in range(6)] + [f"go-oneway-{i}".encode() for i in range(4)]
    )
    async_by_id = {m.client_msg_id: m for m in got if m.tags == "Async"}
    assert set(async_by_id) == {s["msg_id"] for s in sent}
    for outcome in sent:
        message = async_by_id[outcome["msg_id"]]
        assert message.body == f"go-async-{outcome['index']}".encode()
        assert (message.queue_id, message.queue_offset) == (outcome["queue_id"], outcome["offset"])
    assert {m.tags for m in got if m.body.startswith(b"go-oneway-")} == {"Oneway"}


async def test_the_go_push_consumer_gets_each_project_message_once(
    local_cluster: LocalCluster, go_client: GoClient
) -> None:
    count = 12
    peer = go_client.start_push_consumer(
        local_cluster.address, "GoReaders", TOPIC, count, extra=["--linger", "2"], timeout=PEER_TIMEOUT_S
    )
    try:
        await asyncio.to_thread(peer.wait_for, "ready", PEER_TIMEOUT_S)
        async with Producer("PySenders", local_cluster.address) as producer:
            sent = [
                await producer.send(
                    Message(
                        TOPIC,
                        f"from-python-{i}".encode(),
                        tags="py",
                        keys=[f"k{i}"],
                        properties={"origin": "python", "n": str(i)},
                    )
                )
                for i in range(count)
            ]
        outcome = await asyncio.to_thread(peer.finish)
    finally:
        await asyncio.to_thread(peer.kill)
    got = outcome.check().messages()
    assert len(got) == count, "each message exactly once (the consumer lingered 2 s for duplicates)"
    assert {m.consume_status for m in got} == {"CONSUME_SUCCESS"}
    by_id = {m.msg_id: m for m in got}
    assert set(by_id) == {s.msg_id for s in sent}
    for index, result in enumerate(sent):
        message = by_id[result.msg_id]
        assert message.topic == TOPIC
        assert message.body == f"from-python-{index}".encode() and message.body_exact
        assert (message.tags, message.keys) == ("py", f"k{index}")
        assert message.properties["origin"] == "python"
        assert message.properties["n"] == str(index)
        assert message.properties["UNIQ_KEY"] == result.msg_id
        assert (message.queue_id, message.queue_offset) == (
            result.message_queue.queue_id,
            result.queue_offset,
        )
        assert message.reconsume_times == 0
        assert message.born_timestamp <= message.store_timestamp
    assert outcome.done is not None and outcome.done["count"] == count
    assert_gone(outcome)


async def test_a_go_delivery_answered_retry_later_comes_back(
    local_cluster: LocalCluster, go_client: GoClient
) -> None:
    """RECONSUME_LATER makes the Go client send the message back (CONSUMER_SEND_MSG_BACK); the broker
    redelivers it through the group's retry topic after delay level 3 (10 s), with its id and properties.

    The group's retry topic is made first, as an operator's ``updateSubGroup`` + topic would: left to the
    broker it only exists from the consumer's first heartbeat on, after the Go client's first route lookup,
    and the Go client looks routes up again only every 30 s (the test then took 40 s instead of 12)."""
    await local_cluster.create_topic(retry_topic("GoRetries"), 1)
    peer = go_client.start_push_consumer(
        local_cluster.address,
        "GoRetries",
        TOPIC,
        1,
        extra=["--fail-first", "1", "--batch-max-size", "1"],
        timeout=PEER_TIMEOUT_S,
    )
    try:
        await asyncio.to_thread(peer.wait_for, "ready", PEER_TIMEOUT_S)
        async with Producer("PyRetrySender", local_cluster.address) as producer:
            sent = await producer.send(Message(TOPIC, b"retry me", tags="R", properties={"origin": "python"}))
        outcome = await asyncio.to_thread(peer.finish)
    finally:
        await asyncio.to_thread(peer.kill)
    outcome.check()
    first, again = outcome.messages(acknowledged_only=False)
    assert (first.consume_status, again.consume_status) == ("RECONSUME_LATER", "CONSUME_SUCCESS")
    assert first.msg_id == again.msg_id == sent.msg_id
    assert (first.reconsume_times, again.reconsume_times) == (0, 1)
    assert again.topic == TOPIC, "the Go client restores the real topic from RETRY_TOPIC"
    assert again.body == b"retry me" and again.tags == "R"
    assert again.properties["origin"] == "python"
    assert again.properties["RETRY_TOPIC"] == TOPIC
    assert again.commit_log_offset != first.commit_log_offset, "a new copy in the commit log"
    assert_gone(outcome)


async def test_the_go_orderly_push_consumer_gets_each_queue_in_order(
    local_cluster: LocalCluster, go_client: GoClient
) -> None:
    """Orderly consumption locks its queues on the broker (LOCK_BATCH_MQ) before it delivers from them."""
    async with Producer("PyOrderedSenders", local_cluster.address) as producer:
        sent = [
            await producer.send(
                Message(TOPIC, f"{i}".encode(), tags="ordered"), selector=select_by_hash, arg=1 + i % 2
            )
            for i in range(10)
        ]
    assert {s.message_queue.queue_id for s in sent} == {1, 2}
    result = await asyncio.to_thread(
        go_client.push_consume,
        local_cluster.address,
        "GoOrderedReaders",
        TOPIC,
        10,
        extra=["--orderly", "--consume-from", "first", "--linger", "1"],
        timeout=PEER_TIMEOUT_S,
    )
    got = result.check().messages()
    per_queue: dict[int, list[int]] = {}
    for message in got:
        per_queue.setdefault(message.queue_id, []).append(int(message.body))
    assert per_queue == {1: list(range(0, 10, 2)), 2: list(range(1, 10, 2))}
    assert [m.queue_offset for m in got if m.queue_id == 1] == list(range(5))
    assert_gone(result)


async def test_go_batches_land_contiguously(local_cluster: LocalCluster, go_client: GoClient) -> None:
    specs = [go_client.message(f"go-batch-{i}", tags="Batch", properties={"n": str(i)}) for i in range(7)]
    result = await asyncio.to_thread(
        go_client.send_batch, local_cluster.address, TOPIC, specs, batch_size=3, timeout=PEER_TIMEOUT_S
    )
    sent = _sent(result)
    assert [(s["index"], s["batch_size"], s["status"]) for s in sent] == [
        (0, 3, "SEND_OK"),
        (1, 3, "SEND_OK"),
        (2, 1, "SEND_OK"),
    ]
    got = await read_topic(local_cluster.address, TOPIC, 7, timeout_s=30)
    where = {m.body: (m.queue_id, m.queue_offset) for m in got}
    assert len(got) == 7 and set(where) == {f"go-batch-{i}".encode() for i in range(7)}
    first = 0
    for outcome in sent:
        size = outcome["batch_size"]
        expected = [(outcome["queue_id"], outcome["offset"] + k) for k in range(size)]
        assert [where[f"go-batch-{first + k}".encode()] for k in range(size)] == expected
        # The broker answers a batch with the offset ids of its messages, comma separated.
        offset_ids = outcome["offset_msg_id"].split(",")
        by_position = {(m.queue_id, m.queue_offset): m for m in got}
        assert offset_ids == [by_position[pos].msg_id for pos in expected]
        first += size
    assert all(m.tags == "Batch" and m.properties["n"] == m.body.decode().rsplit("-")[-1] for m in got)


async def test_go_orderly_sends_keep_to_their_queue(local_cluster: LocalCluster, go_client: GoClient) -> None:
    specs = [go_client.message(f"ordered-{i}") for i in range(8)]
    specs += [go_client.message(f"other-{i}", sharding_key=6) for i in range(3)]
    result = await asyncio.to_thread(
        go_client.send_orderly, local_cluster.address, TOPIC, specs, sharding_key=3, timeout=PEER_TIMEOUT_S
    )
    sent = _sent(result)
    assert [(s["sharding_key"], s["queue_count"]) for s in sent] == [(3, QUEUES)] * 8 + [(6, QUEUES)] * 3
    assert {s["queue_id"] for s in sent[:8]} == {s["selected_queue"] for s in sent[:8]} == {3}
    assert {s["queue_id"] for s in sent[8:]} == {6 % QUEUES}
    assert [s["offset"] for s in sent[:8]] == list(range(8)), "one queue, consecutive offsets, in order"

    got = await read_topic(local_cluster.address, TOPIC, 11, timeout_s=30)
    on_queue = {q: [m.body for m in got if m.queue_id == q] for q in range(QUEUES)}
    assert on_queue == {
        0: [],
        1: [],
        2: [f"other-{i}".encode() for i in range(3)],
        3: [f"ordered-{i}".encode() for i in range(8)],
    }


async def test_route_lists_the_topics_queues(local_cluster: LocalCluster, go_client: GoClient) -> None:
    result = (await asyncio.to_thread(go_client.route, local_cluster.address, TOPIC)).check()
    [route] = result.of("route")
    broker = local_cluster.broker.config.broker_name
    assert route["topic"] == TOPIC
    assert route["queues"] == [{"broker_name": broker, "queue_id": q} for q in range(QUEUES)]

    missing = await asyncio.to_thread(go_client.route, local_cluster.address, "NoSuchGoTopic")
    assert missing.returncode == runner.EXIT_CLIENT_ERROR, missing.describe()
    assert [e["error_type"] for e in missing.errors] == ["RouteFailed"]
    assert missing.of("route") == []
    assert_gone(missing)


@pytest.mark.parametrize(
    ("command", "args", "stdin", "complaint"),
    [
        ("send-sync", ["--topic", TOPIC, "--bogus"], None, "bogus"),
        ("send-sync", ["--topic", TOPIC, "--spec", "-"], "{not json", "not a JSON object"),
        ("send-sync", ["--topic", TOPIC, "--spec", "-"], '{"body": "x", "colour": "red"}', "colour"),
        ("send-sync", ["--topic", TOPIC, "--serialize", "XML"], None, "--serialize"),
        ("push-consume", ["--topic", TOPIC], None, "--count"),
        ("teleport", [], None, "unknown command"),
    ],
)
def test_bad_usage_exits_2_without_starting_a_client(
    go_client: GoClient, command: str, args: list[str], stdin: str | None, complaint: str
) -> None:
    result = go_client.run(command, args, namesrv="127.0.0.1:9", stdin=stdin, timeout=PEER_TIMEOUT_S)
    assert result.returncode == runner.EXIT_USAGE, result.describe()
    [error] = result.events
    assert error["event"] == "error" and error["error_type"] == "UsageError"
    assert complaint in error["message"]
    assert_gone(result)


def test_a_namesrv_that_refuses_gives_errors_not_hangs(go_client: GoClient, refused_namesrv: str) -> None:
    started = time.monotonic()
    send = go_client.send_sync(refused_namesrv, TOPIC, [go_client.message("hello")], timeout=PEER_TIMEOUT_S)
    assert send.returncode == runner.EXIT_CLIENT_ERROR, send.describe()
    [error] = send.errors
    assert (
        error["error_type"] == "SendSyncFailed" and f"topic={TOPIC} route info not found" in error["message"]
    )
    assert send.done is not None and send.done["count"] == 0 and send.done["shutdown"] == "ok"

    consume = go_client.push_consume(refused_namesrv, "GoNoCluster", TOPIC, 1, timeout=PEER_TIMEOUT_S)
    assert consume.returncode == runner.EXIT_CLIENT_ERROR, consume.describe()
    assert [e["error_type"] for e in consume.errors] == ["ConsumerStartFailed"]
    assert consume.of("ready") == []

    route = go_client.route(refused_namesrv, TOPIC, timeout=PEER_TIMEOUT_S)
    assert route.returncode == runner.EXIT_CLIENT_ERROR, route.describe()
    assert time.monotonic() - started < 60, "three quick failures, no waiting on a dead address"
    for result in (send, consume, route):
        assert not result.killed
        assert_gone(result)


def test_a_namesrv_that_never_answers_ends_in_the_peers_timeout(
    go_client: GoClient, silent_namesrv: str
) -> None:
    started = time.monotonic()
    result = go_client.send_sync(silent_namesrv, TOPIC, [go_client.message("hello")], timeout=5)
    assert time.monotonic() - started < 5 + runner.KILL_GRACE_S
    assert not result.killed, "the peer's own watchdog should end it before the runner has to"
    assert result.returncode in (runner.EXIT_TIMEOUT, runner.EXIT_CLIENT_ERROR), result.describe()
    assert result.errors and result.errors[-1]["event"] in ("timeout", "error")
    if result.returncode == runner.EXIT_TIMEOUT:
        assert result.errors[-1]["stage"] == "send"
    assert_gone(result)


async def test_push_consume_without_enough_messages_reports_incomplete(
    local_cluster: LocalCluster, go_client: GoClient
) -> None:
    result = await asyncio.to_thread(
        go_client.push_consume, local_cluster.address, "GoWaitsInVain", TOPIC, 1, timeout=6
    )
    assert result.returncode == runner.EXIT_INCOMPLETE, result.describe()
    assert [e["event"] for e in result.events] == ["ready", "error", "done"]
    assert result.errors[0]["error_type"] == "Incomplete" and result.errors[0]["expected"] == 1
    assert not result.killed
    assert_gone(result)


def test_the_peer_exits_when_its_parent_is_gone(go_client: GoClient, silent_namesrv: str) -> None:
    """``CPP_PEER_PARENT_PID`` names the runner; a peer whose parent is not that process (the runner died
    and the peer was re-parented) reports it and exits 7 at once instead of running to its deadline."""
    assert go_client.program is not None
    argv = [*go_client.program, "push-consume", "--namesrv", silent_namesrv, "--topic", TOPIC]
    argv += ["--count", "1", "--timeout", "60"]
    env = {**os.environ, runner.PARENT_PID_ENV: "1"}  # init: certainly not this peer's parent
    started = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
    assert time.monotonic() - started < 20
    assert done.returncode == runner.EXIT_ORPHANED, (done.stdout, done.stderr[-2000:])
    last = json.loads(done.stdout.splitlines()[-1])
    assert (last["event"], last["error_type"]) == ("error", "Orphaned")
