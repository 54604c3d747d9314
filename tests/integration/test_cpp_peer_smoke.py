"""The C++ client harness on its own: no RocketMQ server is needed for any of these.

They prove what every other test that uses the C++ client relies on: the native library loads (in a separate
process), the peer turns failures into readable errors and exit codes instead of hangs, and no process
started here is left behind — whether the peer exits, times out, is killed, or loses its parent. The success
paths (SendResults, orderly and batch sends, pull and push consumption with a redelivery) run against
``fake_cluster``, an in-process scripted NameServer + Broker that also records what the C++ client sent.
"""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocketmq_wire.codes import RequestCode
from tests.integration.cpp_peer import peer, runner
from tests.integration.cpp_peer.fake_cluster import FakeCluster, fake_cluster

pytestmark = pytest.mark.integration

TOPIC = "CppPeerSmokeTopic"


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a running process (a zombie waiting for a reaper that is not us counts as gone)."""
    if runner.process_gone(pid):
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def assert_gone(result: runner.PeerResult) -> None:
    assert runner.process_gone(result.pid), f"peer pid {result.pid} still exists"
    assert runner.group_gone(result.pid), f"process group {result.pid} still has members"


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    with fake_cluster(queues=4) as running:
        yield running


def test_native_library_loads_in_a_separate_process(cpp_client: runner.CppClient) -> None:
    result = cpp_client.run("probe", timeout=30).check()
    library = result.of("library")[0]
    assert library["version"] == runner.BINDING_VERSION
    assert library["path"].endswith("rocketmq/librocketmq.so")
    assert all(library["symbols"].values()), library["symbols"]
    assert_gone(result)


def test_messages_are_built_as_specified(cpp_client: runner.CppClient) -> None:
    """The spec reaches the native message intact, binary bodies with NUL bytes included."""
    body = b"\x00\x01binary\x00body\xff"
    specs = [
        cpp_client.message(
            body,
            tags="TagA",
            keys=["k1", "k2"],
            properties={"origin": "cpp-peer", "naïve": "ünïcode"},
            delay_level=2,
        ),
        cpp_client.message("text {i}"),
    ]
    result = cpp_client.run(
        "build-message", ["--topic", TOPIC, "--spec", "-", "--count", "2"], stdin=json.dumps(specs)
    ).check()
    built = result.of("built")
    assert len(built) == 4
    first = built[0]
    assert base64.b64decode(first["body_b64"]) == body and first["body_exact"]
    assert (first["topic"], first["tags"], first["keys"]) == (TOPIC, "TagA", "k1 k2")
    assert first["properties"] == {
        "TAGS": "TagA",
        "KEYS": "k1 k2",
        "DELAY": "2",
        "WAIT": "true",
        "origin": "cpp-peer",
        "naïve": "ünïcode",
    }
    assert [base64.b64decode(b["body_b64"]) for b in built[1::2]] == [b"text 1", b"text 3"]
    assert built[1]["tags"] is None and built[1]["keys"] is None
    assert_gone(result)


def test_send_without_a_listening_namesrv_fails_fast(
    cpp_client: runner.CppClient, refused_namesrv: str
) -> None:
    started = time.monotonic()
    result = cpp_client.send_sync(refused_namesrv, TOPIC, [cpp_client.message("hello")], timeout=20)
    assert time.monotonic() - started < 20
    assert result.returncode == runner.EXIT_CLIENT_ERROR, result.describe()
    assert not result.killed
    [error] = result.errors
    assert error["error_type"] == "ProducerSendSyncFailed"
    assert f"No route info of this topic: {TOPIC}" in error["message"]
    assert result.done is not None and result.done["shutdown"] == "ok"
    assert "ProducerSendSyncFailed" in result.describe()
    assert_gone(result)


def test_send_to_a_namesrv_that_never_answers_times_out(
    cpp_client: runner.CppClient, silent_namesrv: str
) -> None:
    """Here ``send_sync`` blocks in native code (for about a minute); the peer's watchdog ends it."""
    started = time.monotonic()
    result = cpp_client.send_sync(silent_namesrv, TOPIC, [cpp_client.message("hello")], timeout=3)
    assert time.monotonic() - started < 3 + runner.KILL_GRACE_S
    assert result.returncode == runner.EXIT_TIMEOUT, result.describe()
    assert not result.killed, "the peer's own watchdog should have ended it before the runner had to"
    [timeout] = result.errors
    assert timeout["event"] == "timeout" and timeout["stage"] == "send"
    assert_gone(result)


def test_runner_kills_a_peer_it_stops_waiting_for(cpp_client: runner.CppClient, silent_namesrv: str) -> None:
    peer = cpp_client.start_push_consumer(silent_namesrv, "CppPeerSmokeGroup", TOPIC, 1, timeout=120)
    result = peer.finish(timeout=1.0)
    assert result.killed
    assert result.returncode == -signal.SIGKILL
    assert "killed by the runner" in result.describe()
    assert_gone(result)
    assert peer.finish() is result  # finishing again changes nothing


def test_a_native_crash_is_reported_with_its_signal(cpp_client: runner.CppClient) -> None:
    result = cpp_client.run("crash", timeout=30)
    assert result.returncode == -signal.SIGSEGV
    assert not result.ok and not result.killed
    assert "died of signal SIGSEGV" in result.describe()
    with pytest.raises(runner.PeerFailed, match="SIGSEGV"):
        result.check()
    assert_gone(result)


def test_push_consume_times_out_readably_when_nothing_arrives(
    cpp_client: runner.CppClient, refused_namesrv: str
) -> None:
    result = cpp_client.push_consume(refused_namesrv, "CppPeerSmokeGroup", TOPIC, 1, timeout=3)
    assert result.returncode == runner.EXIT_TIMEOUT, result.describe()
    assert [e["event"] for e in result.events] == ["ready", "timeout", "done"]
    assert result.errors[0]["stage"] == "consume" and result.errors[0]["expected"] == 1
    assert result.messages() == []
    assert_gone(result)


def test_pull_consume_without_a_route_says_so(cpp_client: runner.CppClient, refused_namesrv: str) -> None:
    result = cpp_client.pull_consume(refused_namesrv, "CppPeerSmokeGroup", TOPIC, timeout=20)
    assert result.returncode == runner.EXIT_CLIENT_ERROR, result.describe()
    assert result.errors[0]["error_type"] == "NoQueues"
    assert_gone(result)


def test_a_bad_message_spec_is_a_usage_error(cpp_client: runner.CppClient, refused_namesrv: str) -> None:
    result = cpp_client.run(
        "send-sync", ["--topic", TOPIC, "--spec", "-"], namesrv=refused_namesrv, stdin="{not json"
    )
    assert result.returncode == runner.EXIT_USAGE
    assert result.errors[0]["error_type"] == "UsageError"
    assert "not JSON" in result.errors[0]["message"]
    assert_gone(result)


def test_a_peer_whose_parent_dies_exits_by_itself(
    refused_namesrv: str, cpp_client: runner.CppClient, tmp_path: Path
) -> None:
    """A test run killed without cleaning up must not leave C++ clients running: the peer notices."""
    launcher = (
        "import os, subprocess, sys\n"
        f"env = dict(os.environ, HOME={str(tmp_path)!r}, {runner.PARENT_PID_ENV}=str(os.getpid()))\n"
        "p = subprocess.Popen([sys.executable, '-m', 'tests.integration.cpp_peer.peer', 'push-consume',\n"
        f"    '--namesrv', {refused_namesrv!r}, '--topic', {TOPIC!r}, '--count', '1', '--timeout', '120'],\n"
        "    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, env=env)\n"
        "print(p.pid)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", launcher], cwd=runner.REPO_ROOT, capture_output=True, text=True, timeout=30
    )
    pid = int(out.stdout.strip())
    try:
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), f"orphaned peer {pid} still running"
    finally:
        if _alive(pid):
            os.killpg(pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------ against fake_cluster


def test_send_sync_reports_each_send_result(cpp_client: runner.CppClient, cluster: FakeCluster) -> None:
    body = b"\x00binary\x00"
    specs = [
        cpp_client.message(
            body, tags="TagA", keys=["k1", "k2"], properties={"origin": "peer"}, delay_level=2
        ),
        cpp_client.message("text {i}"),
    ]
    result = cpp_client.send_sync(cluster.address, TOPIC, specs, extra=["--count", "2"]).check()
    outcomes = result.send_results()
    assert [o.status for o in outcomes] == ["SEND_OK"] * 4
    stored = {m.unique_id: m for m in cluster.stored(TOPIC)}
    assert len(stored) == 4 and all(o.msg_id in stored for o in outcomes)  # msg_id is the UNIQ_KEY
    first = stored[outcomes[0].msg_id]
    assert first.body == body and first.tags == "TagA" and first.keys == ["k1", "k2"]
    assert (first.properties["origin"], first.properties["DELAY"]) == ("peer", "2")
    assert [o.offset for o in outcomes] == [stored[o.msg_id].queue_offset for o in outcomes]
    sends = cluster.requests(RequestCode.SEND_MESSAGE)
    assert len(sends) == 4 and {r.language for r in sends} == {"CPP"}
    assert_gone(result)


def test_send_orderly_picks_the_key_modulo_queue_count(
    cpp_client: runner.CppClient, cluster: FakeCluster
) -> None:
    specs = [cpp_client.message("ordered {i}")]
    result = cpp_client.send_orderly(cluster.address, TOPIC, specs, sharding_key=7, extra=["--count", "3"])
    outcomes = result.check().send_results()
    assert [(o.selected_queue, o.queue_count) for o in outcomes] == [(3, 4)] * 3
    assert [(m.queue_id, m.body) for m in cluster.stored(TOPIC)] == [(3, b"ordered %d" % i) for i in range(3)]


def test_send_batch_and_oneway(cpp_client: runner.CppClient, cluster: FakeCluster) -> None:
    batch = cpp_client.send_batch(
        cluster.address, TOPIC, [cpp_client.message("batched {i}")], extra=["--count", "3"]
    )
    [outcome] = batch.check().send_results()
    assert outcome.status == "SEND_OK" and outcome.batch_size == 3
    # The C++ client sends a batch as SEND_MESSAGE with batch=1, not as SEND_BATCH_MESSAGE.
    [request] = cluster.requests(RequestCode.SEND_MESSAGE)
    assert request.fields["batch"] == "1"
    oneway = cpp_client.send_oneway(cluster.address, TOPIC, [cpp_client.message("one way")]).check()
    assert [e["index"] for e in oneway.of("sent_oneway")] == [0]
    deadline = time.monotonic() + 5
    while len(cluster.stored(TOPIC)) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(m.body for m in cluster.stored(TOPIC)) == [
        b"batched 0",
        b"batched 1",
        b"batched 2",
        b"one way",
    ]


def test_pull_consume_reads_every_queue(cpp_client: runner.CppClient, cluster: FakeCluster) -> None:
    specs = [cpp_client.message(b"\x00pulled\x00", tags="TagP", properties={"origin": "peer"})]
    cpp_client.send_sync(cluster.address, TOPIC, specs, extra=["--count", "6"]).check()
    result = cpp_client.pull_consume(
        cluster.address, "CppPeerPullGroup", TOPIC, properties=["origin"]
    ).check()
    assert sorted(q["queue_id"] for q in result.of("queue")) == [0, 1, 2, 3]
    received = result.messages()
    assert len(received) == 6
    assert {(m.body, m.body_exact, m.tags, m.properties["origin"]) for m in received} == {
        (b"\x00pulled\x00", True, "TagP", "peer")
    }
    assert {m.msg_id for m in received} == {m.unique_id for m in cluster.stored(TOPIC)}
    assert all(p["status"] in ("FOUND", "NO_NEW_MSG") for p in result.of("pull"))
    assert_gone(result)


def test_push_consume_delivers_and_redelivers(cpp_client: runner.CppClient, cluster: FakeCluster) -> None:
    """``--fail-first 1`` answers RECONSUME_LATER once: the C++ client sends it back and gets it again."""
    consumer = cpp_client.start_push_consumer(
        cluster.address, "CppPeerPushGroup", TOPIC, 3, extra=["--fail-first", "1"], timeout=30
    )
    consumer.wait_for("ready", timeout=20)
    cpp_client.send_sync(
        cluster.address, TOPIC, [cpp_client.message("pushed {i}")], extra=["--count", "3"]
    ).check()
    result = consumer.finish().check()
    acknowledged = result.messages()
    assert sorted(m.body for m in acknowledged) == [b"pushed 0", b"pushed 1", b"pushed 2"]
    assert {m.topic for m in acknowledged} == {TOPIC}
    [failed] = [m for m in result.messages(acknowledged_only=False) if m.consume_status == "RECONSUME_LATER"]
    [again] = [m for m in acknowledged if m.body == failed.body]
    assert (failed.reconsume_times, again.reconsume_times) == (0, 1)
    assert len(cluster.requests(RequestCode.CONSUMER_SEND_MSG_BACK)) == 1
    assert_gone(result)


def test_client_faults_are_told_from_real_timeouts_in_the_native_log() -> None:
    """A spurious wake-up makes a run meaningless even when it succeeded; the lock "timing out" (logged in
    runs that succeed too) only explains a failure; a request that really timed out is neither."""
    timed_out = (
        "(warning):waitResponse of code:105 with opaque:3 timeout[waitResponse:67]\n"
        "(warning):wait response timeout or get NULL response of code:105, so closeTransport of addr:a\n"
    )
    woke_early = (
        "(warning):wait response timeout or get NULL response of code:310, so closeTransport of addr:b\n"
    )
    locked = "(error):GetTransport of:127.0.0.1:1 get timed_mutex timeout[CreateTransport:297]\n"
    spurious = "a request ended without an answer before its timeout (a spurious wake-up)"
    assert runner.client_fault("(info):connect server with addr:a success\n") is None
    assert runner.client_fault(timed_out) is None
    assert runner.client_fault(timed_out + woke_early) == spurious
    assert runner.client_fault(locked) is None
    assert runner.failure_cause(locked) == "its connection-table lock timed out"
    assert runner.failure_cause(locked + woke_early) == spurious
    assert runner.failure_cause(timed_out) is None


def test_a_send_failed_while_the_client_was_still_connecting_is_its_own_failure() -> None:
    """The log of a CI run (abridged): the send failed while another client thread was connecting to the
    broker, which never saw the send. A failure after that connect ended, either way, is not the client's."""
    raced = (
        "(info):try to connect to fd:15, addr:127.0.0.1[connect:172]\n"
        "(info):eventcb: connect to fd:15 successfully[eventCallback:193]\n"
        "(info):try to connect to fd:19, addr:127.0.0.1[connect:172]\n"
        "(error):send failed of times:1,brokerName:it-broker-a[sendDefaultImpl:369]\n"
        "(info):eventcb: connect to fd:19 successfully[eventCallback:193]\n"
    )
    connected_first = (
        "(info):try to connect to fd:19, addr:127.0.0.1[connect:172]\n"
        "(info):eventcb: connect to fd:19 successfully[eventCallback:193]\n"
        "(error):send failed of times:1,brokerName:it-broker-a[sendDefaultImpl:369]\n"
    )
    refused_connect = (
        "(info):try to connect to fd:19, addr:127.0.0.1[connect:172]\n"
        "(info):connect to fd:19 failed[connect:178]\n"
        "(error):send failed of times:1,brokerName:it-broker-a[sendDefaultImpl:369]\n"
    )
    # Out of order (threads), and a send the broker refused: neither is the client's own failure.
    logged_late_then_refused = (
        "(info):eventcb: connect to fd:16 successfully[eventCallback:193]\n"
        "(info):try to connect to fd:16, addr:127.0.0.1[connect:172]\n"
        "(error):send failed of times:1,brokerName:it-broker-a[sendDefaultImpl:369]\n"
        "(info):try to connect to fd:17, addr:127.0.0.1[connect:172]\n"
        "(error):processSendResponse error remark:AclException: Check signature failed[processSendResponse]\n"
        "(error):send failed of times:3,brokerName:it-broker-a[sendDefaultImpl:369]\n"
    )
    assert peer.failed_while_connecting(raced)
    assert peer.client_failure(raced) == "failed while its own connect was under way"
    assert not peer.failed_while_connecting(connected_first)
    assert not peer.failed_while_connecting(refused_connect)
    assert not peer.failed_while_connecting(logged_late_then_refused)
    assert peer.client_failure(connected_first + refused_connect) is None


def test_a_send_the_client_failed_on_its_own_lock_is_made_again(tmp_path: Path) -> None:
    """Only a failure whose attempt logged the lock "timeout" is retried (the request never left), at most
    LOCK_RETRIES times, each retry reported; any other failure surfaces at once."""

    class ClientError(Exception):
        pass

    errors = type("Exceptions", (), {"RocketMQException": ClientError})
    binding = peer.Binding(client=None, ffi=None, exceptions=errors)
    log_file = tmp_path / "rocketmq-cpp.log"
    log_file.write_text("(info):start\n")
    stream = io.StringIO()
    where = (binding, peer.NativeLog(tmp_path), peer.Output(stream), 7)
    calls: list[str] = []

    def send(message: str, locked_times: int) -> str:
        calls.append(message)
        if len(calls) <= locked_times:
            with log_file.open("a") as f:
                f.write(f"(error):GetTransport of:127.0.0.1:1 {peer.CPP_LOCK_TIMEOUT}[CreateTransport:297]\n")
            raise ClientError("No route info of this topic")
        if message == "refused":
            raise ClientError("broker answered code 2")
        return f"sent {message}"

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(peer, "LOCK_RETRY_PAUSE_S", 0.0)
        assert peer.send_past_lock_timeouts(where, send, "m", locked_times=2) == "sent m"
        assert len(calls) == 3
        retries = [json.loads(line) for line in stream.getvalue().splitlines()]
        assert [(r["event"], r["index"], r["attempt"]) for r in retries] == [
            ("client_retry", 7, 1),
            ("client_retry", 7, 2),
        ]

        calls.clear()
        with pytest.raises(ClientError, match="code 2"):
            peer.send_past_lock_timeouts(where, send, "refused", locked_times=0)
        assert calls == ["refused"], "a failure without the lock line is not retried"

        calls.clear()
        with pytest.raises(ClientError, match="No route info"):
            peer.send_past_lock_timeouts(where, send, "m", locked_times=100)
        assert len(calls) == peer.LOCK_RETRIES + 1
