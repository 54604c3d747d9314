"""Drives Apache's C++ RocketMQ client (PyPI ``rocketmq`` 0.4.4) in its own process, for integration tests.

Run as ``python -m tests.integration.cpp_peer.peer <command> --namesrv HOST:PORT ...`` from the repository
root. It exists because the native library can segfault or block forever inside a call (a NameServer that
accepts the connection but never answers makes ``send_sync`` wait until the socket closes, whatever the send
timeout), and neither may take pytest down with it.

Protocol: every line on stdout is one JSON object with an ``"event"`` key; nothing else is printed there (the
native client logs to ``$HOME/logs/rocketmq-cpp/``, so the runner points ``HOME`` at a scratch folder).

* ``ready`` — the producer or consumer started;
* ``send_result`` — one per SendResult: ``status`` (Java's name, ``SEND_OK`` …), ``status_code``, ``msg_id``,
  ``offset`` (the C API gives no queue id), plus ``selected_queue``/``queue_count`` for orderly sends and
  ``batch_size`` for batches;
* ``sent_oneway`` — one per oneway send;
* ``client_retry`` — a send made again: the client failed it by itself before the request left (its own
  lock, :data:`CPP_LOCK_TIMEOUT`, or a connect of its own still under way: :func:`client_failure`);
* ``queue`` / ``pull`` — for ``pull-consume``: each queue the client fetched, each pull's status and offsets;
* ``message`` — one per received message (see :func:`describe_message`);
* ``error`` — the binding raised: ``error_type``, ``message``; ``timeout`` — the peer's own deadline passed;
* ``done`` — the command finished: ``count``, ``elapsed_ms``, ``shutdown`` (``ok`` or ``timeout``).

Exit codes: 0 done; 2 bad arguments or message spec; 3 timed out; 4 the client reported an error; 5 the
binding or its native library cannot be loaded; 6 a consumer ran out of messages before the expected count;
7 the parent process went away.

Every exit goes through :func:`os._exit` after flushing: the binding's ``__del__`` methods shut clients
down a second time during interpreter teardown, which is where the C++ client is least predictable.
"""

from __future__ import annotations

import argparse
import base64
import collections
import contextlib
import ctypes
import dataclasses
import json
import os
import re
import resource
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_CLIENT_ERROR = 4
EXIT_NO_LIBRARY = 5
EXIT_INCOMPLETE = 6
EXIT_ORPHANED = 7

#: Pause before the n-th retry of a failed pull is n times this: the C++ client reports a connection that
#: failed to set up just now (a contended transport lock, seen in CI) as it reports any failure, and an
#: immediate retry meets the same state.
PULL_RETRY_PAUSE_S = 0.2
# Pause between two sweeps of a topic's queues while pull-consume's --count is not reached.
PULL_SWEEP_PAUSE_S = 0.2
# The C++ client's send_oneway only appends the frame to its connection's libevent output buffer; its I/O
# thread writes it later, and shutdown closes the socket at once, dropping whatever is still buffered (seen in
# CI: 2 of 3 oneway messages never reached the broker when the process exited 3 ms after connecting). A
# program that exits right after oneway sends has to give that thread a moment, as this one does (0.5 s was
# still too short on a loaded CI machine: one of three was lost).
ONEWAY_LINGER_S = 1.5

BINDING_DIST = "rocketmq"
BINDING_VERSION = "0.4.4"

#: The C API's CSendStatus, named as Java's SendStatus is.
SEND_STATUS_NAMES = {
    0: "SEND_OK",
    1: "FLUSH_DISK_TIMEOUT",
    2: "FLUSH_SLAVE_TIMEOUT",
    3: "SLAVE_NOT_AVAILABLE",
}
#: The C API's CPullStatus.
PULL_STATUS_NAMES = {
    0: "FOUND",
    1: "NO_NEW_MSG",
    2: "NO_MATCHED_MSG",
    3: "OFFSET_ILLEGAL",
    4: "BROKER_TIMEOUT",
}
CONSUME_SUCCESS = 0
RECONSUME_LATER = 1

#: Properties reported for every received message when present. The C API can only look a property up by
#: name, never list them, so user properties must be asked for with ``--property``.
KNOWN_PROPERTIES = (
    "KEYS",
    "TAGS",
    "WAIT",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "ORIGIN_MESSAGE_ID",
    "RECONSUME_TIME",
    "UNIQ_KEY",
    "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME",
    "SHARDING_KEY",
    "__STARTDELIVERTIME",
)

#: Offsets inside a pre-C++11 (copy-on-write) libstdc++ ``std::string``: its ``_Rep`` header (length,
#: capacity, refcount) sits just before the characters. The wheel is built with that ABI (it imports
#: ``_ZNSs`` symbols, never ``__cxx11``); reading the length there is the only way to get a received body
#: that contains NUL bytes, because the C API returns bodies as bare ``const char*``.
_COW_REP_LENGTH = 24
_COW_REP_CAPACITY = 16
_MAX_BODY = 64 * 1024 * 1024


#: What the C++ client logs when it gave up on its connection-table lock. In rocketmq-client-cpp 1.2.x the
#: "timeout" is immediate on any contention: a send that starts while the client's own heartbeat thread
#: connects to a newly routed broker fails before anything is written, and the client then resends it to
#: the next queue (an orderly message out of its queue) or reports "No route info of this topic".
CPP_LOCK_TIMEOUT = "get timed_mutex timeout"
#: What it logs when it starts to connect a socket, and when that connect ends either way.
CPP_CONNECTING = re.compile(r"try to connect to fd:(\d+)")
CPP_CONNECT_ENDED = re.compile(r"connect to fd:(\d+) (?:successfully|failed)")
#: What it logs for each failed attempt of a send, and for an attempt the broker answered with an error.
CPP_SEND_FAILED = "send failed of times:"
CPP_SERVER_ANSWERED = "processSendResponse error"
#: How often a send that failed on that lock alone is made again, and the pause before each new try.
LOCK_RETRIES = 5
LOCK_RETRY_PAUSE_S = 0.05


class UsageError(Exception):
    """A bad argument or message spec: reported as an ``error`` event and exit code 2."""


class BindingUnavailable(Exception):
    """The ``rocketmq`` package or its native library cannot be imported."""


class Output:
    """Writes JSON lines to stdout from any thread (consumer callbacks run on native threads)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def emit(self, event: str, **fields: Any) -> None:
        line = json.dumps({"event": event, **fields}, ensure_ascii=True, separators=(",", ":"))
        with self._lock:
            self._stream.write(line + "\n")
            self._stream.flush()

    def try_emit(self, event: str, **fields: Any) -> None:
        """Like :meth:`emit` but gives up after a second: the watchdog must exit even if stdout is stuck."""
        line = json.dumps({"event": event, **fields}, ensure_ascii=True, separators=(",", ":"))
        if self._lock.acquire(timeout=1.0):
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except OSError:
                pass
            finally:
                self._lock.release()


def hard_exit(code: int) -> None:
    """Flushes and leaves without running the binding's destructors (see the module docstring)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


#: Set by the runner to its own pid: the parent seen at start-up may already be a reaper if the runner died
#: while this process was starting.
PARENT_PID_ENV = "CPP_PEER_PARENT_PID"


def parent_pid() -> int:
    value = os.environ.get(PARENT_PID_ENV, "")
    return int(value) if value.isdigit() else os.getppid()


class Watchdog:
    """Ends the process at its deadline, or as soon as its parent is gone.

    A native call that never returns cannot be interrupted from Python; a timer thread can still report and
    exit. Checking the parent keeps a peer from outliving a test run that was killed without cleaning up.
    """

    def __init__(self, out: Output, seconds: float, state: Callable[[], Mapping[str, Any]]) -> None:
        self._out = out
        self._seconds = seconds
        self._state = state
        self._deadline = time.monotonic() + seconds
        self._parent = parent_pid()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="peer-watchdog", daemon=True)

    def start(self) -> Watchdog:
        self._thread.start()
        return self

    def extend(self, seconds: float) -> None:
        """Moves the deadline to at least ``seconds`` from now (the work is done; shutdown gets its time)."""
        self._deadline = max(self._deadline, time.monotonic() + seconds)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            if os.getppid() != self._parent:
                self._out.try_emit("error", error_type="Orphaned", message="parent process went away")
                hard_exit(EXIT_ORPHANED)
            if time.monotonic() >= self._deadline:
                self._out.try_emit("timeout", after_s=self._seconds, **self._state())
                hard_exit(EXIT_TIMEOUT)


@dataclasses.dataclass
class MessageSpec:
    """One message to send, from the JSON spec or the command line."""

    topic: str
    body: bytes
    tags: str | None = None
    keys: str | None = None
    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    delay_level: int | None = None
    sharding_key: int | None = None


@dataclasses.dataclass
class Binding:
    """The imported binding modules (untyped: the package ships no type information)."""

    client: Any
    ffi: Any
    exceptions: Any

    @property
    def dll(self) -> Any:
        return self.ffi.dll


def load_binding() -> Binding:
    """Imports the binding, loading ``librocketmq.so``; any failure becomes :class:`BindingUnavailable`."""
    try:
        import rocketmq.client as client  # type: ignore[import-untyped,unused-ignore]
        import rocketmq.exceptions as exceptions  # type: ignore[import-untyped,unused-ignore]
        import rocketmq.ffi as ffi  # type: ignore[import-untyped,unused-ignore]
    except Exception as exc:
        raise BindingUnavailable(f"{type(exc).__name__}: {exc}") from exc
    return Binding(client=client, ffi=ffi, exceptions=exceptions)


# ---------------------------------------------------------------------------------------------- message specs


def _spec_from_mapping(
    raw: Mapping[str, Any], default_topic: str | None, where: str
) -> tuple[MessageSpec, bool]:
    """Returns the spec and whether its body is text (only text bodies get ``{i}`` substituted)."""
    unknown = set(raw) - {
        "topic",
        "body",
        "body_b64",
        "tags",
        "keys",
        "properties",
        "delay_level",
        "sharding_key",
    }
    if unknown:
        raise UsageError(f"{where}: unknown fields {sorted(unknown)}")
    topic = raw.get("topic", default_topic)
    if not isinstance(topic, str) or not topic:
        raise UsageError(f"{where}: no topic (give --topic or a 'topic' field)")
    is_text = "body_b64" not in raw
    if "body_b64" in raw:
        try:
            body = base64.b64decode(str(raw["body_b64"]), validate=True)
        except ValueError as exc:
            raise UsageError(f"{where}: body_b64 is not base64: {exc}") from exc
    else:
        body = str(raw.get("body", "")).encode("utf-8")
    keys = raw.get("keys")
    if isinstance(keys, list):
        keys = " ".join(str(k) for k in keys)  # Java's MessageConst.KEY_SEPARATOR
    properties = raw.get("properties") or {}
    if not isinstance(properties, dict):
        raise UsageError(f"{where}: properties must be an object")
    delay = raw.get("delay_level")
    sharding = raw.get("sharding_key")
    spec = MessageSpec(
        topic=topic,
        body=body,
        tags=None if raw.get("tags") is None else str(raw["tags"]),
        keys=None if keys is None else str(keys),
        properties={str(k): str(v) for k, v in properties.items()},
        delay_level=None if delay is None else int(delay),
        sharding_key=None if sharding is None else int(sharding),
    )
    return spec, is_text


def parse_specs(args: argparse.Namespace, stdin: IO[str]) -> list[MessageSpec]:
    """Builds the messages to send: a JSON spec (object or list) from ``--spec`` or stdin, else the flags.

    Each spec is sent ``--count`` times; in text bodies ``{i}`` becomes the running index.
    """
    raws: list[Mapping[str, Any]]
    if args.spec is not None:
        text = stdin.read() if args.spec == "-" else args.spec
        try:
            loaded = json.loads(text)
        except json.JSONDecodeError as exc:
            raise UsageError(f"message spec is not JSON: {exc}") from exc
        raws = loaded if isinstance(loaded, list) else [loaded]
        if not raws or not all(isinstance(r, dict) for r in raws):
            raise UsageError("message spec must be an object or a non-empty list of objects")
    else:
        raw: dict[str, Any] = {"body": args.body}
        if args.tags is not None:
            raw["tags"] = args.tags
        if args.keys is not None:
            raw["keys"] = args.keys
        if args.property:
            raw["properties"] = dict(_split_property(p) for p in args.property)
        if args.delay_level is not None:
            raw["delay_level"] = args.delay_level
        raws = [raw]
    parsed = [_spec_from_mapping(r, args.topic, f"message {n}") for n, r in enumerate(raws)]
    specs: list[MessageSpec] = []
    index = 0
    for _ in range(args.count):
        for spec, is_text in parsed:
            body = spec.body
            if is_text:
                body = body.replace(b"{i}", str(index).encode())
            specs.append(dataclasses.replace(spec, body=body, properties=dict(spec.properties)))
            index += 1
    return specs


def _split_property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise UsageError(f"--property wants KEY=VALUE, got {text!r}")
    return key, value


def build_message(binding: Binding, spec: MessageSpec) -> Any:
    """A native message for ``spec``; the body goes through ``SetByteMessageBody`` so NUL bytes survive."""
    msg = binding.client.Message(spec.topic)
    binding.exceptions.ffi_check(binding.dll.SetByteMessageBody(msg, spec.body, len(spec.body)))
    if spec.tags is not None:
        msg.set_tags(spec.tags)
    if spec.keys is not None:
        msg.set_keys(spec.keys)
    for key, value in spec.properties.items():
        msg.set_property(key, value)
    if spec.delay_level is not None:
        msg.set_delay_time_level(spec.delay_level)
    return msg


# ----------------------------------------------------------------------------------------- received messages


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def read_body(binding: Binding, msg_ptr: int) -> tuple[bytes, bool]:
    """The message body and whether its length is exact (see ``_COW_REP_LENGTH``).

    Falls back to the NUL-terminated string when the header before the characters does not look like a
    copy-on-write string's.
    """
    raw_get = binding.dll["GetMessageBody"]  # a fresh function object: the binding's restype stays as it is
    raw_get.argtypes = [ctypes.c_void_p]
    raw_get.restype = ctypes.c_void_p
    ptr = raw_get(msg_ptr)
    if not ptr:
        return b"", True
    c_length = len(ctypes.string_at(ptr))
    length = ctypes.c_size_t.from_address(ptr - _COW_REP_LENGTH).value
    capacity = ctypes.c_size_t.from_address(ptr - _COW_REP_CAPACITY).value
    if c_length <= length <= capacity and length <= _MAX_BODY and ctypes.string_at(ptr + length, 1) == b"\0":
        return ctypes.string_at(ptr, length), True
    return ctypes.string_at(ptr, c_length), False


def describe_message(binding: Binding, msg_ptr: int, extra_properties: Sequence[str]) -> dict[str, Any]:
    """Everything the C API tells about a received message, as JSON-ready fields."""
    m = binding.client.RecvMessage(msg_ptr)
    properties: dict[str, str] = {}
    for name in (*KNOWN_PROPERTIES, *extra_properties):
        value = _text(binding.dll.GetMessageProperty(msg_ptr, name.encode("utf-8")))
        if value:  # the C API answers "" for a property the message does not have
            properties[name] = value
    body, exact = read_body(binding, msg_ptr)
    return {
        "topic": m.topic,
        "queue_id": m.queue_id,
        "queue_offset": m.queue_offset,
        "msg_id": m.id,
        "tags": _text(m.tags) or None,  # the C API answers "" where Java's getTags() gives null
        "keys": _text(m.keys) or None,
        "properties": properties,
        "body_b64": base64.b64encode(body).decode("ascii"),
        "body_len": len(body),
        "body_exact": exact,
        "reconsume_times": m.reconsume_times,
        "delay_time_level": m.delay_time_level,
        "store_size": m.store_size,
        "born_timestamp": m.born_timestamp,
        "store_timestamp": m.store_timestamp,
        "commit_log_offset": m.commit_log_offset,
    }


# ------------------------------------------------------------------------------------------------- commands


@dataclasses.dataclass
class Progress:
    """What the watchdog reports if it has to end the run; and the watchdog, so shutdown can get its time."""

    stage: str = "starting"
    count: int = 0
    index: int | None = None
    watchdog: Watchdog | None = None

    def snapshot(self) -> dict[str, Any]:
        return {"stage": self.stage, "count": self.count, "index": self.index}


def shutdown_within(client: Any, seconds: float) -> str:
    """Shuts a native client down on a helper thread, giving up after ``seconds`` (shutdown can block)."""
    errors: list[str] = []

    def run() -> None:
        try:
            client.shutdown()
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")

    thread = threading.Thread(target=run, name="peer-shutdown", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return "timeout"
    return f"error: {errors[0]}" if errors else "ok"


def _credentials(args: argparse.Namespace) -> tuple[str, str, str] | None:
    if args.access_key is None:
        return None
    return args.access_key, args.secret_key or "", args.channel


def start_producer(binding: Binding, args: argparse.Namespace, out: Output) -> Any:
    producer = binding.client.Producer(args.group, timeout=args.send_timeout_ms)
    producer.set_namesrv_addr(args.namesrv)
    if args.instance_name:
        binding.exceptions.ffi_check(
            binding.dll.SetProducerInstanceName(producer._handle, args.instance_name.encode())
        )
    creds = _credentials(args)
    if creds is not None:
        producer.set_session_credentials(*creds)
    producer.start()
    out.emit("ready", role="producer", group=args.group, namesrv=args.namesrv, pid=os.getpid())
    return producer


class NativeLog:
    """What the C++ client wrote to its own log since a mark.

    Its log is a synchronous boost.log file sink with auto-flush, so the lines of a call that failed are in
    the file by the time the call returns.
    """

    def __init__(self, folder: Path) -> None:
        self._folder = folder

    def mark(self) -> dict[Path, int]:
        return {path: path.stat().st_size for path in self._folder.glob("*.log*")}

    def since(self, mark: Mapping[Path, int]) -> str:
        parts = []
        for path in sorted(self._folder.glob("*.log*")):
            with contextlib.suppress(OSError), path.open("rb") as f:
                f.seek(mark.get(path, 0))
                parts.append(f.read().decode("utf-8", "replace"))
        return "".join(parts)


def native_log() -> NativeLog:
    """The client's log folder (``$HOME/logs/rocketmq-cpp``: the runner points ``HOME`` at a scratch one)."""
    return NativeLog(Path.home() / "logs" / "rocketmq-cpp")


def failed_while_connecting(log_text: str) -> bool:
    """Whether the client failed a send attempt by itself while one of its own connects was under way.

    A send that needs a broker connection another client thread (heartbeat, route update) has begun to
    make fails at once in this build, without waiting for the connect and before writing anything: seen
    in CI as "send failed of times:1" a millisecond after "try to connect to fd:19", that connect's
    success two milliseconds later, and nothing of the send at the broker. An attempt the broker answered
    (:data:`CPP_SERVER_ANSWERED`) is not such a failure. The client's threads log out of order (a connect's
    end may come before its start), so connects are counted per socket rather than paired in order.
    """
    open_connects: collections.Counter[str] = collections.Counter()
    answered = False
    for line in log_text.splitlines():
        started = CPP_CONNECTING.search(line)
        ended = CPP_CONNECT_ENDED.search(line)
        if started is not None:
            open_connects[started.group(1)] += 1
        elif ended is not None:
            open_connects[ended.group(1)] -= 1
        elif CPP_SERVER_ANSWERED in line:
            answered = True
        elif CPP_SEND_FAILED in line:
            if not answered and any(count > 0 for count in open_connects.values()):
                return True
            answered = False
    return False


def client_failure(log_text: str) -> str | None:
    """Why the client failed a send by itself, before its request left (what a new try may fix)."""
    if CPP_LOCK_TIMEOUT in log_text:
        return CPP_LOCK_TIMEOUT
    if failed_while_connecting(log_text):
        return "failed while its own connect was under way"
    return None


def send_past_lock_timeouts(
    where: tuple[Binding, NativeLog, Output, int], send: Callable[..., Any], *args: Any, **kwargs: Any
) -> Any:
    """``send(*args, **kwargs)`` for message (or batch) number ``where[3]``, made again when it failed and
    the client logged :data:`CPP_LOCK_TIMEOUT` meanwhile, or failed it while connecting
    (:func:`client_failure`).

    Such a failure happened inside the client before its request left, so nothing was stored and the same
    send may be made again without a duplicate; each new try is reported as a ``client_retry`` line.
    """
    binding, log, out, index = where
    for attempt in range(1, LOCK_RETRIES + 2):
        mark = log.mark()
        try:
            return send(*args, **kwargs)
        except binding.exceptions.RocketMQException as exc:
            reason = client_failure(log.since(mark))
            if attempt > LOCK_RETRIES or reason is None:
                raise
            out.emit("client_retry", index=index, attempt=attempt, error=str(exc), reason=reason)
            time.sleep(LOCK_RETRY_PAUSE_S)
    raise AssertionError("unreachable")


def _send_result(result: Any) -> dict[str, Any]:
    code = int(result.status)
    return {
        "status": SEND_STATUS_NAMES.get(code, f"UNKNOWN_{code}"),
        "status_code": code,
        "msg_id": result.msg_id,
        "offset": result.offset,
    }


def _finish(
    out: Output, args: argparse.Namespace, client: Any, progress: Progress, started: float, code: int
) -> int:
    progress.stage = "shutdown"
    if progress.watchdog is not None:
        progress.watchdog.extend(args.shutdown_timeout + 2.0)
    shutdown = shutdown_within(client, args.shutdown_timeout)
    elapsed_ms = round((time.monotonic() - started) * 1000)
    out.emit("done", command=args.command, count=progress.count, elapsed_ms=elapsed_ms, shutdown=shutdown)
    return code


def _client_error(out: Output, binding: Binding, exc: Exception, **where: Any) -> bool:
    """Reports ``exc`` if it is the binding's; returns False for anything else (a bug: let it propagate)."""
    if not isinstance(exc, binding.exceptions.RocketMQException):
        return False
    out.emit("error", error_type=type(exc).__name__, message=str(exc), **where)
    return True


def cmd_send(binding: Binding, args: argparse.Namespace, out: Output, progress: Progress) -> int:
    """send-sync, send-oneway, send-orderly: one native call per message, in order."""
    specs = parse_specs(args, sys.stdin)
    started = time.monotonic()
    producer = start_producer(binding, args, out)
    code = EXIT_OK
    log = native_log()
    for index, spec in enumerate(specs):
        progress.stage, progress.index = "send", index
        msg = build_message(binding, spec)
        where = (binding, log, out, index)
        try:
            if args.command == "send-oneway":
                send_past_lock_timeouts(where, producer.send_oneway, msg)
                out.emit("sent_oneway", index=index, topic=spec.topic)
            elif args.command == "send-orderly":
                key = spec.sharding_key if spec.sharding_key is not None else args.sharding_key
                chosen: list[tuple[int, int]] = []

                def selector(
                    mq_size: int, _msg: Any, arg: int, chosen: list[tuple[int, int]] = chosen
                ) -> int:
                    # The binding's hashing selector, recording the queue it picks (arg points at a C int).
                    queue = int(ctypes.cast(arg, ctypes.POINTER(ctypes.c_int))[0]) % mq_size
                    chosen.append((mq_size, queue))
                    return queue

                result = send_past_lock_timeouts(
                    where,
                    producer.send_orderly,
                    msg,
                    key,
                    retry_times=args.retry_times,
                    queue_selector=selector,
                )
                extra = {"queue_count": chosen[-1][0], "selected_queue": chosen[-1][1]} if chosen else {}
                out.emit("send_result", index=index, sharding_key=key, **_send_result(result), **extra)
            else:
                result = send_past_lock_timeouts(where, producer.send_sync, msg)
                out.emit("send_result", index=index, **_send_result(result))
        except Exception as exc:
            if not _client_error(out, binding, exc, index=index):
                raise
            code = EXIT_CLIENT_ERROR
            if not args.keep_going:
                break
        else:
            progress.count += 1
    if args.command == "send-oneway" and progress.count:
        progress.stage = "linger"
        time.sleep(ONEWAY_LINGER_S)
    return _finish(out, args, producer, progress, started, code)


def cmd_send_batch(binding: Binding, args: argparse.Namespace, out: Output, progress: Progress) -> int:
    """send-batch: the messages in batches of ``--batch-size`` through the binding's ``send_batch``."""
    specs = parse_specs(args, sys.stdin)
    size = args.batch_size or len(specs)
    started = time.monotonic()
    producer = start_producer(binding, args, out)
    log = native_log()
    code = EXIT_OK
    for index, first in enumerate(range(0, len(specs), size)):
        chunk = specs[first : first + size]
        progress.stage, progress.index = "send", index
        msgs = [build_message(binding, spec) for spec in chunk]
        try:
            result = send_past_lock_timeouts((binding, log, out, index), producer.send_batch, msgs)
        except Exception as exc:
            if not _client_error(out, binding, exc, index=index, batch_size=len(chunk)):
                raise
            code = EXIT_CLIENT_ERROR
            if not args.keep_going:
                break
        else:
            out.emit("send_result", index=index, batch_size=len(chunk), **_send_result(result))
            progress.count += len(chunk)
    return _finish(out, args, producer, progress, started, code)


@dataclasses.dataclass
class _PushState:
    failures_left: int
    closed: bool = False


def cmd_push_consume(binding: Binding, args: argparse.Namespace, out: Output, progress: Progress) -> int:
    """push-consume: prints messages as the native push consumer delivers them, until ``--count`` or timeout.

    The callback is registered through the C API directly rather than ``PushConsumer.subscribe``: the
    binding's wrapper can only ask for a redelivery by letting the callback's exception escape into ctypes,
    which prints it to stderr and hands C an unspecified value (it does redeliver in 0.4.4, but nothing
    promises it). Here the status is returned explicitly: ``--fail-first N`` answers RECONSUME_LATER to the
    first N deliveries (they are printed with ``consume_status`` and do not count).
    """
    ffi = binding.ffi
    model = ffi.MessageModel.BROADCASTING if args.broadcast else ffi.MessageModel.CLUSTERING
    consumer = binding.client.PushConsumer(args.group, orderly=args.orderly, message_model=model)
    consumer.set_namesrv_addr(args.namesrv)
    if args.instance_name:
        consumer.set_instance_name(args.instance_name)
    if args.thread_count:
        consumer.set_thread_count(args.thread_count)
    if args.batch_max_size:
        consumer.set_message_batch_max_size(args.batch_max_size)
    creds = _credentials(args)
    if creds is not None:
        consumer.set_session_credentials(*creds)

    lock = threading.Lock()
    reached = threading.Event()
    state = _PushState(failures_left=args.fail_first)

    def on_message(_consumer: int | None, msg_ptr: int | None) -> int:
        # Runs on a native thread: nothing may escape into C, where ctypes would print it and return 0.
        try:
            with lock:
                if state.closed or not msg_ptr:
                    return RECONSUME_LATER
                record = describe_message(binding, msg_ptr, args.property)
                if state.failures_left > 0:
                    state.failures_left -= 1
                    out.emit("message", consume_status="RECONSUME_LATER", **record)
                    return RECONSUME_LATER
                out.emit("message", consume_status="CONSUME_SUCCESS", **record)
                progress.count += 1
                if progress.count >= args.count:
                    reached.set()
                return CONSUME_SUCCESS
        except BaseException as exc:
            out.try_emit("error", error_type=type(exc).__name__, message=f"in the message callback: {exc}")
            return RECONSUME_LATER

    callback = ffi.MSG_CALLBACK_FUNC(on_message)
    register = ffi.dll.RegisterMessageCallbackOrderly if args.orderly else ffi.dll.RegisterMessageCallback
    check = binding.exceptions.ffi_check
    check(ffi.dll.Subscribe(consumer._handle, args.topic.encode(), args.expression.encode()))
    check(register(consumer._handle, callback))

    started = time.monotonic()
    progress.stage = "start"
    consumer.start()
    out.emit("ready", role="push-consumer", group=args.group, topic=args.topic, pid=os.getpid())
    progress.stage = "consume"
    complete = reached.wait(args.timeout)
    if complete and args.linger > 0:
        time.sleep(args.linger)  # let extra (unexpected) deliveries show up before the done line
    with lock:
        state.closed = True
    if not complete:
        out.emit("timeout", after_s=args.timeout, stage="consume", count=progress.count, expected=args.count)
    code = EXIT_OK if complete else EXIT_TIMEOUT
    result = _finish(out, args, consumer, progress, started, code)
    del callback  # kept alive until the consumer is shut down
    return result


def cmd_pull_consume(binding: Binding, args: argparse.Namespace, out: Output, progress: Progress) -> int:
    """pull-consume: every queue of the topic from ``--from-offset`` until NO_NEW_MSG (or ``--count``).

    Uses the C API's ``Pull`` directly instead of ``PullConsumer.pull``, whose loop spins forever on
    BROKER_TIMEOUT (what the C++ client reports for any pull failure) and keeps offsets in a class-level
    dict shared by every instance. Here each pull is printed, BROKER_TIMEOUT is retried ``--retries`` times
    after a growing pause (:data:`PULL_RETRY_PAUSE_S`), and OFFSET_ILLEGAL moves to the offset the broker
    suggests.
    """
    ffi, dll = binding.ffi, binding.dll
    check = binding.exceptions.ffi_check
    consumer = binding.client.PullConsumer(args.group)
    consumer.set_namesrv_addr(args.namesrv)
    creds = _credentials(args)
    if creds is not None:
        consumer.set_session_credentials(*creds)
    started = time.monotonic()
    progress.stage = "start"
    consumer.start()
    out.emit("ready", role="pull-consumer", group=args.group, topic=args.topic, pid=os.getpid())

    progress.stage = "fetch-queues"
    queues = ctypes.POINTER(ffi._CMessageQueue)()
    size = ctypes.c_int()
    try:
        check(
            dll.FetchSubscriptionMessageQueues(
                consumer._handle, args.topic.encode(), ctypes.byref(queues), ctypes.byref(size)
            )
        )
    except Exception as exc:
        if not _client_error(out, binding, exc, stage="fetch-queues"):
            raise
        return _finish(out, args, consumer, progress, started, EXIT_CLIENT_ERROR)
    try:
        mqs = sorted((queues[i] for i in range(size.value)), key=lambda q: (q.brokerName, q.queueId))
        for mq in mqs:
            out.emit("queue", topic=_text(mq.topic), broker_name=_text(mq.brokerName), queue_id=mq.queueId)
        if not mqs:  # what the C API answers when it found no route, instead of an error
            out.emit("error", error_type="NoQueues", message=f"no message queues for topic {args.topic}")
            return _finish(out, args, consumer, progress, started, EXIT_CLIENT_ERROR)
        # Apache's brokers answer a send before the message reaches its consume queue, and a oneway message
        # may still be on its way: while --count is not reached, sweep again from where each queue stopped.
        offsets = {id(mq): args.from_offset for mq in mqs}
        sweep_until = started + args.timeout / 2
        while True:
            for mq in mqs:
                if args.count and progress.count >= args.count:
                    break
                offsets[id(mq)] = _drain_queue(binding, args, out, progress, consumer, mq, offsets[id(mq)])
            if not args.count or progress.count >= args.count or time.monotonic() >= sweep_until:
                break
            time.sleep(PULL_SWEEP_PAUSE_S)
    finally:
        dll.ReleaseSubscriptionMessageQueue(queues)
    code = EXIT_INCOMPLETE if args.count and progress.count < args.count else EXIT_OK
    if code == EXIT_INCOMPLETE:
        out.emit("error", error_type="Incomplete", message=f"{progress.count} of {args.count} messages found")
    return _finish(out, args, consumer, progress, started, code)


def _drain_queue(
    binding: Binding,
    args: argparse.Namespace,
    out: Output,
    progress: Progress,
    consumer: Any,
    mq: Any,
    offset: int,
) -> int:
    """Pulls one queue from ``offset`` until it has nothing new; returns the offset to go on from."""
    dll = binding.dll
    failures = 0
    progress.stage = f"pull {_text(mq.brokerName)}:{mq.queueId}"
    for _ in range(args.max_pulls):
        result = dll.Pull(
            consumer._handle, ctypes.pointer(mq), args.expression.encode(), offset, args.max_num
        )
        try:
            status = PULL_STATUS_NAMES.get(result.pullStatus, f"UNKNOWN_{result.pullStatus}")
            out.emit(
                "pull",
                broker_name=_text(mq.brokerName),
                queue_id=mq.queueId,
                offset=offset,
                status=status,
                next_begin_offset=result.nextBeginOffset,
                min_offset=result.minOffset,
                max_offset=result.maxOffset,
                size=result.size if status == "FOUND" else 0,
            )
            if status == "FOUND":
                for i in range(result.size):
                    out.emit("message", **describe_message(binding, result.msgFoundList[i], args.property))
                    progress.count += 1
        finally:
            dll.ReleasePullResult(result)
        if status == "BROKER_TIMEOUT":
            failures += 1
            if failures > args.retries:
                out.emit(
                    "error", error_type="BrokerTimeout", message="pull kept failing", queue_id=mq.queueId
                )
                return offset
            time.sleep(PULL_RETRY_PAUSE_S * failures)
            continue
        if status == "NO_NEW_MSG" or (result.nextBeginOffset == offset and status != "FOUND"):
            return offset
        offset = result.nextBeginOffset
        if args.count and progress.count >= args.count:
            return offset
    return offset


def cmd_build_message(binding: Binding, args: argparse.Namespace, out: Output, progress: Progress) -> int:
    """build-message: builds each message as ``send-*`` would and reads it back through the C API, no server.

    Checks the spec handling and the body read (NUL bytes included) where no broker is needed: the C API's
    getters for body, tags, keys and properties only touch the part a sent message and a received one share.
    """
    for index, spec in enumerate(parse_specs(args, sys.stdin)):
        msg = build_message(binding, spec)
        ptr = msg._handle
        properties: dict[str, str] = {}
        for name in (*KNOWN_PROPERTIES, *spec.properties, *args.property):
            value = _text(binding.dll.GetMessageProperty(ptr, name.encode("utf-8")))
            if value:
                properties[name] = value
        body, exact = read_body(binding, ptr)
        out.emit(
            "built",
            index=index,
            topic=_text(binding.dll.GetMessageTopic(ptr)),
            tags=_text(binding.dll.GetMessageTags(ptr)) or None,
            keys=_text(binding.dll.GetMessageKeys(ptr)) or None,
            properties=properties,
            body_b64=base64.b64encode(body).decode("ascii"),
            body_len=len(body),
            body_exact=exact,
        )
        progress.count += 1
    out.emit("done", command=args.command, count=progress.count, elapsed_ms=0, shutdown="ok")
    return EXIT_OK


def cmd_crash(binding: Binding, args: argparse.Namespace, out: Output, progress: Progress) -> int:
    """crash: dies of SIGSEGV on purpose, as a native client can, to test how the runner reports it."""
    out.emit("ready", role="crash", pid=os.getpid())
    ctypes.string_at(0)
    return EXIT_OK  # not reached


def cmd_probe(binding: Binding, args: argparse.Namespace, out: Output, progress: Progress) -> int:
    """probe: the binding loads; reports its version, library path and which C entry points exist."""
    import importlib.metadata

    dll = binding.dll
    names = (
        *("SendBatchMessage", "SendMessageOrderly", "SendMessageOneway", "SendMessageAsync", "Pull"),
        *("SetByteMessageBody", "SetDelayTimeLevel", "SetMessageProperty", "CreatePushConsumer"),
    )
    out.emit(
        "library",
        version=importlib.metadata.version(BINDING_DIST),
        path=dll._name,
        symbols={name: hasattr(dll, name) for name in names},
        python=sys.version.split()[0],
    )
    out.emit("done", command="probe", count=0, elapsed_ms=0, shutdown="ok")
    return EXIT_OK


COMMANDS: dict[str, Callable[[Binding, argparse.Namespace, Output, Progress], int]] = {
    "send-sync": cmd_send,
    "send-oneway": cmd_send,
    "send-orderly": cmd_send,
    "send-batch": cmd_send_batch,
    "push-consume": cmd_push_consume,
    "pull-consume": cmd_pull_consume,
    "build-message": cmd_build_message,
    "probe": cmd_probe,
    "crash": cmd_crash,
}


class _Parser(argparse.ArgumentParser):
    """Raises instead of printing usage and exiting, so errors become ``error`` events like the others."""

    def error(self, message: str) -> Any:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m tests.integration.cpp_peer.peer", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser, group: str) -> None:
        p.add_argument("--namesrv", required=True, help="NameServer address(es), HOST:PORT[;HOST:PORT]")
        p.add_argument("--group", default=group)
        p.add_argument("--timeout", type=float, default=30.0, help="seconds before the peer gives up")
        p.add_argument("--shutdown-timeout", type=float, default=5.0, help="seconds allowed for shutdown()")
        p.add_argument("--instance-name")
        p.add_argument("--access-key", help="ACL AccessKey (session credentials)")
        p.add_argument("--secret-key")
        p.add_argument("--channel", default="ALIYUN", help="the C++ client's OnsChannel (default ALIYUN)")

    for name in ("send-sync", "send-oneway", "send-orderly", "send-batch", "build-message"):
        p = sub.add_parser(name)
        if name == "build-message":  # no client: only what the message spec needs
            p.add_argument("--timeout", type=float, default=30.0)
        else:
            common(p, "CppPeerProducer")
        p.add_argument("--topic", help="default topic for messages that name none")
        p.add_argument("--spec", help="JSON message spec (object or list), or - to read it from stdin")
        p.add_argument("--body", default="cpp-peer message {i}")
        p.add_argument("--tags")
        p.add_argument("--keys")
        p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
        p.add_argument("--delay-level", type=int)
        p.add_argument("--count", type=int, default=1, help="how many times to send each spec")
        p.add_argument("--send-timeout-ms", type=int, default=3000)
        p.add_argument("--keep-going", action="store_true", help="go on after a failed send")
        if name == "send-orderly":
            p.add_argument("--sharding-key", type=int, default=0, help="int; the queue is key %% queue count")
            # 0 as in Java's selector sends: the C++ client's own retries go to the next queue, out of order.
            p.add_argument("--retry-times", type=int, default=0)
        if name == "send-batch":
            p.add_argument("--batch-size", type=int, default=0, help="messages per batch (0: all in one)")

    p = sub.add_parser("push-consume")
    common(p, "CppPeerPushConsumer")
    p.add_argument("--topic", required=True)
    p.add_argument("--expression", default="*", help="tag expression, e.g. 'TagA || TagB'")
    p.add_argument("--count", type=int, required=True, help="messages to acknowledge before exiting")
    p.add_argument("--property", action="append", default=[], help="extra property names to report")
    p.add_argument("--orderly", action="store_true")
    p.add_argument("--broadcast", action="store_true")
    p.add_argument("--thread-count", type=int, default=0)
    p.add_argument("--batch-max-size", type=int, default=0)
    p.add_argument(
        "--fail-first", type=int, default=0, help="answer RECONSUME_LATER to the first N deliveries"
    )
    p.add_argument("--linger", type=float, default=0.0, help="seconds to keep printing after --count")

    p = sub.add_parser("pull-consume")
    common(p, "CppPeerPullConsumer")
    p.add_argument("--topic", required=True)
    p.add_argument("--expression", default="*")
    p.add_argument(
        "--count", type=int, default=0, help="stop after this many messages (0: drain every queue)"
    )
    p.add_argument("--property", action="append", default=[], help="extra property names to report")
    p.add_argument("--from-offset", type=int, default=0)
    p.add_argument("--max-num", type=int, default=32, help="messages per pull")
    p.add_argument("--max-pulls", type=int, default=1000, help="pulls per queue at most")
    p.add_argument("--retries", type=int, default=3, help="BROKER_TIMEOUT retries per queue")

    p = sub.add_parser("probe", help="load the native library and report what it offers")
    p.add_argument("--timeout", type=float, default=30.0)
    p = sub.add_parser("crash", help="die of SIGSEGV (tests the runner)")
    p.add_argument("--timeout", type=float, default=30.0)
    return parser


def no_core_dumps() -> None:
    """A crashing native client must not leave a core file in the repository (the peer's working folder)."""
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(resource.RLIMIT_CORE)[1]))


def main(argv: Sequence[str] | None = None, out: Output | None = None) -> int:
    out = out or Output(sys.stdout)
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        out.emit("error", error_type="UsageError", message=str(exc))
        return EXIT_USAGE
    no_core_dumps()
    progress = Progress()
    # The push consumer times out gracefully on its own (hence its margin); the watchdog is the backstop for
    # a native call that never returns.
    margin = 2.0 if args.command == "push-consume" else 0.0
    progress.watchdog = Watchdog(out, args.timeout + margin, progress.snapshot).start()
    try:
        binding = load_binding()
    except BindingUnavailable as exc:
        out.emit("error", error_type="BindingUnavailable", message=str(exc))
        return EXIT_NO_LIBRARY
    try:
        return COMMANDS[args.command](binding, args, out, progress)
    except UsageError as exc:
        out.emit("error", error_type="UsageError", message=str(exc))
        return EXIT_USAGE
    except Exception as exc:
        if isinstance(exc, binding.exceptions.RocketMQException):
            out.emit("error", error_type=type(exc).__name__, message=str(exc), stage=progress.stage)
            return EXIT_CLIENT_ERROR
        raise


def run(argv: Sequence[str] | None = None) -> int:
    """:func:`main`, with any unexpected exception reported as an ``error`` event and exit code 1."""
    out = Output(sys.stdout)
    try:
        return main(argv, out)
    except BaseException as exc:
        traceback.print_exc()
        out.try_emit("error", error_type=f"Internal{type(exc).__name__}", message=str(exc))
        return 1


if __name__ == "__main__":
    hard_exit(run())
