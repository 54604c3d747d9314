"""``rmq`` as a real process, called wrongly in many ways: every call ends with exactly one ``error:`` line
that names the offending option or value, and a non-zero exit -- 2 for a wrong command line, 1 for a failure
while running -- never a traceback.

The calls run in parallel (each is a fresh interpreter, so most of the time is start-up) against loopback
peers made here: a port nothing listens on, servers that answer with garbage, close at once or never answer,
a port already taken and a store another process has locked.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import fcntl
import os
import shlex
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
USAGE, RUNTIME = 2, 1
#: Generous: a call takes well under a second alone, but the machine may be busy.
CALL_LIMIT_S = 60


@dataclasses.dataclass(frozen=True)
class Case:
    """One malformed call: its command line (shell-quoted; ``{name}`` placeholders are filled from
    :func:`world`), the exit code it must end with, a text its error line must contain, and environment
    variables it sets."""

    id: str
    code: int
    mentions: str
    command: str
    env: Mapping[str, str] = dataclasses.field(default_factory=dict)


def case(id: str, code: int, mentions: str, command: str, **env: str) -> Case:
    return Case(id, code, mentions, command, env)


CASES: list[Case] = [
    # ports and addresses
    case("namesrv-port-above-65535", USAGE, "--port", "namesrv --port 99999"),
    case("namesrv-port-negative", USAGE, "--port", "namesrv --port -1"),
    case("namesrv-port-in-use", RUNTIME, "{busy}", "namesrv --host 127.0.0.1 --port {busy}"),
    case("namesrv-host-blank", USAGE, "--host", "namesrv --host '' --port 0"),
    case("broker-port-above-65535", USAGE, "--port", "broker --store {tmp}/b1 --port 70000"),
    case("broker-port-in-use", RUNTIME, "{busy}", "broker --store {tmp}/b2 --host 127.0.0.1 --port {busy}"),
    case("quickstart-namesrv-port-above-65535", USAGE, "--namesrv-port", "quickstart --namesrv-port 65536"),
    case("quickstart-port-in-use", RUNTIME, "{busy}", "quickstart --namesrv-port {busy}"),
    case("namesrv-address-port-above-65535", USAGE, "host:99999", "route T -n host:99999"),
    case("namesrv-address-colon-only", USAGE, "--namesrv", "route T -n :"),
    case("namesrv-address-port-not-a-number", USAGE, "host:abc", "topic list -n host:abc"),
    case("namesrv-address-port-0", USAGE, "port 0", "kv list NS -n 127.0.0.1:0"),
    case("namesrv-env-garbage", USAGE, "'garbage'", "route T", NAMESRV_ADDR="garbage"),
    case("namesrv-missing", RUNTIME, "--namesrv", "route T"),
    case("broker-address-port-above-65535", USAGE, "--broker", "broker-stats -b h:70000 -n {dead}"),
    case("broker-namesrv-address-bad", USAGE, "--namesrv", "broker --store {tmp}/b3 -n host:abc"),
    case("broker-ip-not-an-ip", USAGE, "--broker-ip", "broker --store {tmp}/b4 --broker-ip nonsense"),
    # files and directories
    case("broker-store-is-a-file", USAGE, "--store", "broker --store {file}"),
    case("broker-store-under-a-file", USAGE, "--store", "broker --store {file}/store"),
    case("broker-store-blank", USAGE, "--store", "broker --store ''"),
    case("broker-store-locked", RUNTIME, "{locked}", "broker --store {locked} --host 127.0.0.1 --port 0"),
    case("broker-config-missing", USAGE, "--config", "broker --store {tmp}/b5 --config {tmp}/no.conf"),
    case("broker-config-is-a-directory", USAGE, "--config", "broker --store {tmp}/b6 --config {tmp}"),
    case("broker-config-binary", RUNTIME, "--config", "broker --store {tmp}/b7 --config {binary}"),
    case("broker-config-not-utf8", RUNTIME, "--config", "broker --store {tmp}/b8 --config {latin1}"),
    case(
        "broker-config-bad-value", RUNTIME, "listenPort='abc'", "broker --store {tmp}/b9 --config {badvalue}"
    ),
    case("broker-config-bad-escape", RUNTIME, "--config", "broker --store {tmp}/b10 --config {badescape}"),
    case("broker-config-no-broker-setting", RUNTIME, "--config", "broker --store {tmp}/b11 --config {file}"),
    case("namesrv-kv-config-is-a-directory", USAGE, "--kv-config", "namesrv --kv-config {tmp}"),
    case("namesrv-kv-config-under-a-file", USAGE, "--kv-config", "namesrv --kv-config {file}/kv.json"),
    case(
        "namesrv-kv-config-not-json",
        RUNTIME,
        "--kv-config",
        "namesrv --host 127.0.0.1 --port 0 --kv-config {file}",
    ),
    case("inspect-missing-file", USAGE, "{tmp}/missing.bin", "inspect {tmp}/missing.bin"),
    case("inspect-bad-hex-in-json-line", RUNTIME, "{badhex}:1", "inspect {badhex}"),
    case("inspect-bad-json-line", RUNTIME, "{badjson}:1", "inspect {badjson}"),
    case("inspect-garbage-frames", RUNTIME, "{binary}", "inspect {binary}"),
    case("send-file-missing", USAGE, "--file", "send T --file {tmp}/missing.txt -n {dead}"),
    case("quickstart-store-is-a-file", USAGE, "--store", "quickstart --store {file}"),
    # numbers
    case("send-count-huge", USAGE, "--count", f"send T body -n {{dead}} --count {'9' * 30}"),
    case("send-concurrency-too-high", USAGE, "--concurrency", "send T b -n {dead} --concurrency 5000"),
    case("timeout-nan", USAGE, "--timeout-ms", "route T -n {dead} --timeout-ms nan"),
    case("timeout-infinite", USAGE, "--timeout-ms", "topic list -n {dead} --timeout-ms inf"),
    case("top-interval-nan", USAGE, "--interval", "top -n {dead} --interval nan"),
    case("write-queues-huge", USAGE, "--write-queues", f"topic create T -n {{dead}} -w {'1' * 20}"),
    case("perm-not-2-4-6", USAGE, "--perm", "topic create T -n {dead} --perm 3"),
    case("inspect-limit-negative", USAGE, "--limit", "inspect {file} --limit -1"),
    case("consume-count-negative", USAGE, "--count", "consume T -g G -n {dead} --count -5"),
    case("broker-id-negative", USAGE, "--broker-id", "broker --store {tmp}/b13 --broker-id -1"),
    # enumerations and times
    case("flush-mode-unknown", USAGE, "--flush", "broker --store {tmp}/b14 --flush MAYBE"),
    case("log-level-unknown", USAGE, "--log-level", "namesrv --log-level LOUD"),
    case(
        "serialize-type-env-garbage",
        RUNTIME,
        "ROCKETMQ_SERIALIZE_TYPE",
        "route T -n {dead}",
        ROCKETMQ_SERIALIZE_TYPE="protobuf",
    ),
    case(
        "serialize-type-env-unicode",
        RUNTIME,
        "ROCKETMQ_SERIALIZE_TYPE",
        "topic list -n {dead}",
        ROCKETMQ_SERIALIZE_TYPE="jsön",
    ),
    case("consume-from-unknown", USAGE, "--from", "consume T -g G -n {dead} --from yesterday"),
    case("consume-from-year-huge", USAGE, "--from", f"consume T -g G -n {{dead}} --from {'9' * 25}"),
    case("reset-to-year-1", USAGE, "--to", "reset-offset G T -n {dead} --to 0001-01-01"),
    case("reset-to-year-huge", USAGE, "--to", f"reset-offset G T -n {{dead}} --to {'9' * 25}"),
    # names, ids and properties
    case("topic-blank", USAGE, "topic", "send '' body -n {dead}"),
    case("topic-with-a-space", USAGE, "'a b'", "route 'a b' -n {dead}"),
    case("topic-unicode", USAGE, "主题", "topic create 主题 -n {dead}"),
    case("topic-too-long", USAGE, "longer than", f"topic status {'T' * 200} -n {{dead}}"),
    case("topic-rich-markup", USAGE, "[/x]", "send '[/x]' body -n {dead}"),
    case("group-blank", USAGE, "--group", "consume T -g '' -n {dead}"),
    case("group-with-a-slash", USAGE, "'g/1'", "consumer-progress g/1 -n {dead}"),
    case("message-id-blank", USAGE, "msg_id", "message get ' ' -n {dead}"),
    case("message-id-unknown", RUNTIME, "nonsense", "message get nonsense -n {dead}"),
    case("message-id-rich-markup", RUNTIME, "[/x]", "message get '[/x]' -n {dead}"),
    case("message-query-key-blank", USAGE, "--key", "message query T -k '' -n {dead}"),
    case("kv-namespace-blank", USAGE, "namespace", "kv get '' k -n {dead}"),
    case("broker-name-blank", USAGE, "--broker-name", "broker --store {tmp}/b15 --broker-name ''"),
    case("property-without-equals", USAGE, "'novalue'", "send T b -n {dead} -p novalue"),
    case("property-without-name", USAGE, "'=x'", "send T b -n {dead} -p =x"),
    case("property-separator-char", USAGE, "--property", "send T b -n {dead} -p k=a\x01b"),
    case("keys-separator-char", USAGE, "--keys", "send T b -n {dead} --keys a\x02"),
    case("property-reserved-name", RUNTIME, "UNIQ_KEY", "send T b -n {dead} -p UNIQ_KEY=x"),
    case("body-empty", RUNTIME, "body", "send T '' -n {dead}"),
    case("unknown-command", USAGE, "nosuch", "nosuch"),
    case("unknown-option", USAGE, "--nope", "route T --nope"),
    # peers that are not there or are not RocketMQ
    case("namesrv-refuses", RUNTIME, "{dead}", "route T -n {dead}"),
    case("namesrv-answers-garbage", RUNTIME, "{garbage}", "topic list -n {garbage}"),
    case("namesrv-closes-at-once", RUNTIME, "{closer}", "send T body -n {closer}"),
    case("namesrv-never-answers", RUNTIME, "{silent}", "route T -n {silent} --timeout-ms 300"),
    case("consume-from-garbage-namesrv", RUNTIME, "{garbage}", "consume T -g G -n {garbage}"),
    case("kv-put-to-closing-namesrv", RUNTIME, "{closer}", "kv put NS K V -n {closer}"),
    case("broker-answers-garbage", RUNTIME, "{garbage}", "topic create T -b {garbage} -n {dead}"),
    case("message-on-garbage-broker", RUNTIME, "{garbage}", "message get {garbage_msg_id} -n {dead}"),
]

if os.geteuid() != 0:  # root reads any file
    CASES.append(case("inspect-unreadable-file", USAGE, "{unreadable}", "inspect {unreadable}"))


class _NotRocketMQ:
    """A loopback TCP server that answers every connection with ``reply`` (nothing: it closes at once)."""

    def __init__(self, reply: bytes) -> None:
        self._reply = reply
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.address = f"127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            with conn:
                try:
                    conn.sendall(self._reply)
                except OSError:
                    pass

    def close(self) -> None:
        # close() alone does not wake a thread blocked in accept() on Linux; shutdown() does.
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()
        self._thread.join(5)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The placeholders' values: files, a locked store, and peers that live as long as the module runs."""
    tmp = tmp_path_factory.mktemp("malformed")
    files = {
        "file": b"hello world\n",
        "binary": bytes(range(256)) * 4,
        "latin1": "brokerName=caf\xe9\n".encode("latin-1"),
        "badvalue": b"brokerName=b\nlistenPort=abc\n",
        "badescape": b"brokerName=\\uZZZZ\n",
        "bigport": b"listenPort=99999\n",
        "badhex": b'{"hex": "zz"}\n',
        "badjson": b"{not json\n",
        "unreadable": b"secret\n",
    }
    values = {"tmp": str(tmp)}
    for name, content in files.items():
        (tmp / name).write_bytes(content)
        values[name] = str(tmp / name)
    (tmp / "unreadable").chmod(0)

    locked = tmp / "locked-store"
    locked.mkdir()
    lock_fd = os.open(locked / "lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)

    garbage = _NotRocketMQ(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    closer = _NotRocketMQ(b"")
    silent = socket.create_server(("127.0.0.1", 0))  # listens, never accepts: requests go unanswered
    busy = socket.create_server(("127.0.0.1", 0))
    garbage_port = int(garbage.address.rsplit(":", 1)[1])
    values |= {
        "locked": str(locked),
        "dead": f"127.0.0.1:{_free_port()}",
        "garbage": garbage.address,
        # an offset message id: the broker's IPv4 address, its port, a commit-log offset (all in hex)
        "garbage_msg_id": f"7F000001{garbage_port:08X}{0:016X}",
        "closer": closer.address,
        "silent": f"127.0.0.1:{silent.getsockname()[1]}",
        "busy": str(busy.getsockname()[1]),
    }
    try:
        yield values
    finally:
        for server in (garbage, closer):
            server.close()
        silent.close()
        busy.close()
        os.close(lock_fd)


def _fill(text: str, values: Mapping[str, str]) -> str:
    return text.format_map(values) if "{" in text else text


def _call(one: Case, values: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RMQ_DEBUG", "ROCKETMQ_SERIALIZE_TYPE")}
    env |= {"NAMESRV_ADDR": "", "PYTHONIOENCODING": "utf-8"}
    env |= {name: _fill(value, values) for name, value in one.env.items()}
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *(_fill(arg, values) for arg in shlex.split(one.command))],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
        timeout=CALL_LIMIT_S,
    )


@pytest.fixture(scope="module")
def results(world: dict[str, str]) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every call, run a few at a time (start-up dominates, so more than the CPUs help only so much)."""
    workers = min(16, 2 * (os.cpu_count() or 2))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        done = pool.map(lambda one: (one.id, _call(one, world)), CASES)
        return dict(done)


def test_there_are_at_least_fifty_distinct_calls() -> None:
    assert len(CASES) >= 50
    assert len({c.id for c in CASES}) == len(CASES)
    assert len({(c.command, *c.env.items()) for c in CASES}) == len(CASES)


@pytest.mark.parametrize("one", CASES, ids=[c.id for c in CASES])
def test_a_malformed_call_is_one_error_line(
    one: Case, world: dict[str, str], results: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    done = results[one.id]
    output = f"exit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    for stream in (done.stderr, done.stdout):
        assert "Traceback" not in stream and 'File "' not in stream, output
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), output
    assert done.returncode == one.code, output
    assert _fill(one.mentions, world) in lines[0], output
