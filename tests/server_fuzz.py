"""Hostile frames against running servers: the engine of ``tests/unit/test_server_fuzz.py`` and
``benchmarks/fuzz_servers.py``.

Valid requests of the codes clients send most (both serializations) are mutated -- bit flips, cut frames,
lone UTF-16 surrogates in JSON strings, numbers outside their Java type, huge lengths, wrong serialize types,
spliced bytes -- and sent, one at a time per connection, over several connections at once. What a server
must do with each is decided here by reading the frame with the same decoder the servers use:

* a frame the server reads as one whole request that expects an answer must be **answered** (a response
  with its opaque) or its connection **closed**, within the timeout;
* a frame the server cannot read, that leaves bytes over, or holds several frames is sent followed by a
  half-close, and its connection must be **closed** within the timeout;
* a oneway request, a frame marked as a response and END_TRANSACTION (Apache answers a "not type" verdict
  with nothing) owe no answer: they are counted as **not due** and not waited for.

Anything else -- neither answer nor close within the timeout -- is **silent**, the bug this hunts. A frame
the servers would read as an administration request that legitimately changes what a run checks afterwards
(deleting topics, broker settings ...) is drawn again, so a run can check that data stored before it is
intact after it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import struct
from collections.abc import Callable, Iterable, Sequence

from rocketmq_wire import CodecError, FrameDecoder, RemotingCommand, RequestCode, SerializeType
from rocketmq_wire.framing import MAX_FRAME_SIZE
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.message import const
from rocketmq_wire.message.properties import encode_properties

#: Requests that change what a run reads back afterwards (or the servers' settings): never sent.
DESTRUCTIVE_CODES = frozenset(
    int(code)
    for code in (
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.UPDATE_NAMESRV_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        RequestCode.WIPE_WRITE_PERM_OF_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE,
        RequestCode.CLEAN_UNUSED_TOPIC,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
    )
)
#: Requests Apache may leave unanswered even when they are not oneway.
NO_ANSWER_CODES = frozenset({int(RequestCode.END_TRANSACTION)})

#: The names the corpus uses; a run's own data lives under other names.
FUZZ_TOPIC = "FuzzTopic"
FUZZ_GROUP = "FuzzGroup"

_PREFIX = struct.Struct(">II")

#: What a string value becomes in a "surrogate" mutation (JSON escapes, written as Java would send them).
_SURROGATES = ("\ud800", "\udfff", "\udbff\udbff", "x\udc00", "\ud83d", "\ude00\ud83d")
#: Numbers outside (or at the very edge of) the Java types header fields have.
_NUMBERS = (
    "2147483647",
    "2147483648",
    "-2147483649",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999999",
    "1" + "0" * 400,
    "-0",
    "+7",
    " 7",
    "0x10",
    "1e3",
    "",
)


# -- the corpus ------------------------------------------------------------------------------------------


def _request(code: int, ext: dict[str, str], body: bytes = b"") -> RemotingCommand:
    return RemotingCommand(code=code, ext_fields=ext, body=body)


def _send_ext(queue_id: int) -> dict[str, str]:
    properties = encode_properties({const.WAIT: "true", const.TAGS: "fuzz"})
    return {
        "a": "FuzzProducer",
        "b": FUZZ_TOPIC,
        "c": "TBW102",
        "d": "4",
        "e": str(queue_id),
        "f": "0",
        "g": "1700000000000",
        "h": "0",
        "i": properties,
        "j": "0",
        "k": "false",
        "m": "false",
    }


def _pull_ext(queue_id: int) -> dict[str, str]:
    return {
        "consumerGroup": FUZZ_GROUP,
        "topic": FUZZ_TOPIC,
        "queueId": str(queue_id),
        "queueOffset": "0",
        "maxMsgNums": "4",
        "sysFlag": "2",  # subscription carried, no suspend: a pull is answered at once
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }


def broker_corpus() -> list[RemotingCommand]:
    """Valid requests of the codes a broker serves most."""
    topic = {"topic": FUZZ_TOPIC}
    queue = {"topic": FUZZ_TOPIC, "queueId": "1"}
    group = {"consumerGroup": FUZZ_GROUP, "topic": FUZZ_TOPIC, "queueId": "1"}
    heartbeat = json.dumps(
        {
            "clientID": "127.0.0.1@fuzz",
            "consumerDataSet": [
                {
                    "groupName": FUZZ_GROUP,
                    "consumeType": "CONSUME_PASSIVELY",
                    "messageModel": "CLUSTERING",
                    "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                    "subscriptionDataSet": [],
                    "unitMode": False,
                }
            ],
            "producerDataSet": [{"groupName": "FuzzProducer"}],
        }
    ).encode()
    return [
        _request(RequestCode.SEND_MESSAGE_V2, _send_ext(0), b"fuzz body"),
        _request(RequestCode.SEND_MESSAGE_V2, _send_ext(3), b"\x00\x01\x02"),
        _request(
            RequestCode.SEND_MESSAGE,
            {
                "producerGroup": "FuzzProducer",
                "topic": FUZZ_TOPIC,
                "defaultTopic": "TBW102",
                "defaultTopicQueueNums": "4",
                "queueId": "2",
                "sysFlag": "0",
                "bornTimestamp": "1700000000000",
                "flag": "0",
                "properties": encode_properties({const.WAIT: "true"}),
            },
            b"v1 body",
        ),
        _request(RequestCode.PULL_MESSAGE, _pull_ext(0)),
        _request(RequestCode.PULL_MESSAGE, _pull_ext(1)),
        _request(RequestCode.QUERY_CONSUMER_OFFSET, group),
        _request(RequestCode.UPDATE_CONSUMER_OFFSET, {**group, "commitOffset": "1"}),
        _request(RequestCode.GET_MAX_OFFSET, queue),
        _request(RequestCode.GET_MIN_OFFSET, queue),
        _request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, {**queue, "timestamp": "1700000000000"}),
        _request(RequestCode.GET_EARLIEST_MSG_STORETIME, queue),
        _request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": FUZZ_GROUP}),
        _request(RequestCode.GET_TOPIC_STATS_INFO, topic),
        _request(RequestCode.GET_TOPIC_CONFIG, topic),
        _request(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {
                "topic": FUZZ_TOPIC,
                "defaultTopic": "TBW102",
                "readQueueNums": "4",
                "writeQueueNums": "4",
                "perm": "6",
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": "0",
                "order": "false",
            },
        ),
        _request(
            RequestCode.QUERY_MESSAGE,
            {
                **topic,
                "key": "k",
                "maxNum": "4",
                "beginTimestamp": "0",
                "endTimestamp": "9223372036854775807",
            },
        ),
        _request(RequestCode.VIEW_MESSAGE_BY_ID, {**topic, "offset": "0"}),
        _request(
            RequestCode.CONSUMER_SEND_MSG_BACK,
            {"offset": "0", "group": FUZZ_GROUP, "delayLevel": "0", "originTopic": FUZZ_TOPIC},
        ),
        _request(RequestCode.HEART_BEAT, {}, heartbeat),
        _request(RequestCode.UNREGISTER_CLIENT, {"clientID": "127.0.0.1@fuzz", "consumerGroup": FUZZ_GROUP}),
        _request(RequestCode.GET_BROKER_RUNTIME_INFO, {}),
        _request(RequestCode.GET_ALL_TOPIC_CONFIG, {}),
    ]


def namesrv_corpus() -> list[RemotingCommand]:
    """Valid requests of the codes a NameServer serves most."""
    return [
        _request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": FUZZ_TOPIC}),
        _request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102", "acceptStandardJsonOnly": "true"}),
        _request(RequestCode.GET_BROKER_CLUSTER_INFO, {}),
        _request(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, {}),
        _request(RequestCode.GET_KV_CONFIG, {"namespace": "FuzzSpace", "key": "k"}),
        _request(RequestCode.PUT_KV_CONFIG, {"namespace": "FuzzSpace", "key": "k", "value": "v"}),
        _request(
            RequestCode.QUERY_DATA_VERSION,
            {
                "brokerName": "fuzz",
                "brokerAddr": "127.0.0.1:1",
                "clusterName": "FuzzCluster",
                "brokerId": "0",
            },
            b'{"counter":1,"timestamp":1}',
        ),
        _request(RequestCode.GET_TOPICS_BY_CLUSTER, {"cluster": "DefaultCluster"}),
    ]


# -- mutations -------------------------------------------------------------------------------------------


def _frame(cmd: RemotingCommand, serialize: SerializeType) -> bytes:
    cmd.serialize_type = serialize
    return cmd.encode()


def _reframe(header: bytes, body: bytes, type_byte: int) -> bytes:
    return _PREFIX.pack(4 + len(header) + len(body), (type_byte << 24) | len(header)) + header + body


def _json_text(value: str) -> str:
    """A JSON string literal with every non-ASCII character escaped, lone surrogates as ``\\udXXX``."""
    return json.dumps(value, ensure_ascii=True)


def _json_frame(cmd: RemotingCommand, ext: dict[str, str], remark: str | None) -> bytes:
    parts = [f'"code":{cmd.code}']
    if ext:
        parts.append(
            '"extFields":{' + ",".join(f"{_json_text(k)}:{_json_text(v)}" for k, v in ext.items()) + "}"
        )
    parts += [f'"flag":{cmd.flag}', '"language":"JAVA"', f'"opaque":{cmd.opaque}']
    if remark is not None:
        parts.append(f'"remark":{_json_text(remark)}')
    parts += ['"serializeTypeCurrentRPC":"JSON"', f'"version":{cmd.version}']
    return _reframe(("{" + ",".join(parts) + "}").encode("ascii"), cmd.body, 0)


def _with_fields(
    cmd: RemotingCommand, serialize: SerializeType, ext: dict[str, str], remark: str | None
) -> bytes:
    if serialize == SerializeType.JSON:
        return _json_frame(cmd, ext, remark)
    rebuilt = RemotingCommand(
        code=cmd.code,
        opaque=cmd.opaque,
        flag=cmd.flag,
        remark=remark,
        ext_fields=ExtFields(ext),
        body=cmd.body,
    )
    return _frame(rebuilt, serialize)


def _surrogates(cmd: RemotingCommand, serialize: SerializeType, rng: random.Random) -> bytes:
    """Lone surrogates in string values (JSON carries them as escapes; binary can only carry their
    would-be UTF-8 bytes, which are not UTF-8)."""
    ext = dict(cmd.fields())
    remark = cmd.remark
    keys = [k for k, v in ext.items() if not v.lstrip("-").isdigit()] or list(ext)
    for _ in range(rng.randint(1, 3)):
        odd = rng.choice(_SURROGATES)
        if keys and rng.random() < 0.85:
            key = rng.choice(keys)
            value = ext[key]
            cut = rng.randint(0, len(value))
            ext[key] = value[:cut] + odd + value[cut:]
        else:
            remark = (remark or "") + odd
    if serialize == SerializeType.JSON:
        return _json_frame(cmd, ext, remark)
    # ROCKETMQ: the frame as it was, then a surrogate's would-be UTF-8 bytes spliced in
    header = bytearray(_frame(cmd, serialize))
    raw = rng.choice(_SURROGATES)[-1].encode("utf-8", "surrogatepass")
    pos = rng.randrange(8, len(header)) if len(header) > 8 else len(header)
    header[pos:pos] = raw
    return bytes(header)


def _out_of_range(cmd: RemotingCommand, serialize: SerializeType, rng: random.Random) -> bytes:
    ext = dict(cmd.fields())
    numeric = [k for k, v in ext.items() if v.lstrip("-").isdigit()] or list(ext)
    for _ in range(rng.randint(1, 2)):
        if numeric:
            ext[rng.choice(numeric)] = rng.choice(_NUMBERS)
    return _with_fields(cmd, serialize, ext, cmd.remark)


def _flip_bits(data: bytearray, rng: random.Random) -> None:
    for _ in range(rng.randint(1, 8)):
        pos = rng.randrange(len(data))
        data[pos] ^= 1 << rng.randrange(8)


def _huge_length(data: bytearray, rng: random.Random) -> None:
    choice = rng.randrange(4)
    if choice == 0:  # the frame's length prefix
        data[0:4] = rng.choice([0x7FFFFFFF, 0xFFFFFFFF, MAX_FRAME_SIZE + 1, len(data) + 1000]).to_bytes(
            4, "big"
        )
    elif choice == 1:  # the header length in the serialize word
        data[5:8] = rng.choice([0xFFFFFF, len(data), 0x800000]).to_bytes(3, "big")
    else:  # some length or number inside the header, as an int
        pos = rng.randrange(8, max(9, len(data) - 4))
        data[pos : pos + 4] = rng.choice([0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 0x0FFFFFFF]).to_bytes(4, "big")


def _serialize_type(data: bytearray, rng: random.Random) -> None:
    data[4] = rng.choice([data[4] ^ 1, rng.randrange(2, 256), 0x80, 0xFF])


def _truncate(data: bytearray, rng: random.Random) -> bytearray:
    cut = rng.randrange(1, len(data))
    out = data[:cut]
    if rng.random() < 0.5 and len(out) >= 4:  # a whole frame whose header or body is cut short
        out[0:4] = (len(out) - 4).to_bytes(4, "big")
    return out


def _splice(data: bytearray, rng: random.Random, other: bytes) -> bytearray:
    choice = rng.randrange(3)
    if choice == 0:
        pos = rng.randrange(len(data) + 1)
        data[pos:pos] = rng.randbytes(rng.randint(1, 16))
    elif choice == 1:
        pos = rng.randrange(len(data))
        del data[pos : pos + rng.randint(1, 8)]
    else:
        data += other[: rng.randrange(1, len(other) + 1)]
    if rng.random() < 0.5 and len(data) >= 4:
        data[0:4] = (len(data) - 4).to_bytes(4, "big")
    return data


#: Mutation names, for the figures.
MUTATIONS = ("bits", "truncate", "surrogate", "range", "length", "serialize", "splice")


def mutate(cmd: RemotingCommand, rng: random.Random, corpus: Sequence[RemotingCommand]) -> tuple[str, bytes]:
    """One mutated frame of ``cmd`` (JSON or ROCKETMQ at random) and the name of its main mutation."""
    serialize = rng.choice([SerializeType.JSON, SerializeType.ROCKETMQ])
    kind = rng.choice(MUTATIONS)
    if kind == "surrogate":
        return kind, _surrogates(cmd, serialize, rng)
    if kind == "range":
        return kind, _out_of_range(cmd, serialize, rng)
    data = bytearray(_frame(cmd, serialize))
    if kind == "bits":
        _flip_bits(data, rng)
    elif kind == "truncate":
        data = _truncate(data, rng)
    elif kind == "length":
        _huge_length(data, rng)
    elif kind == "serialize":
        _serialize_type(data, rng)
    else:
        other = rng.choice(corpus)
        data = _splice(data, rng, _frame(other, rng.choice([SerializeType.JSON, SerializeType.ROCKETMQ])))
    if rng.random() < 0.2:  # sometimes a second, different damage on top
        _flip_bits(data, rng)
    return kind, bytes(data)


# -- what the server owes ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class Expectation:
    """What a server must do with one frame: ``"answer"`` (opaque given), ``"close"`` or ``"none"``."""

    owes: str
    opaque: int = 0
    code: int = -1


def server_view(data: bytes) -> tuple[list[RemotingCommand], bool]:
    """The requests a server reads from ``data`` alone, and whether it is left unable to go on (a frame
    it cannot read, or bytes that do not end a frame)."""
    commands: list[RemotingCommand] = []
    pos = 0
    while pos < len(data):
        if len(data) - pos < 4:
            return commands, True
        (length,) = struct.unpack_from(">I", data, pos)
        if length > MAX_FRAME_SIZE or length < 4 or pos + 4 + length > len(data):
            return commands, True
        try:
            commands.append(RemotingCommand.decode(data[pos : pos + 4 + length]))
        except CodecError:
            return commands, True
        pos += 4 + length
    return commands, False


def expectation(data: bytes) -> Expectation | None:
    """What the server owes for ``data``; ``None`` for a frame not to be sent (a destructive request)."""
    commands, broken = server_view(data)
    if any(cmd.code in DESTRUCTIVE_CODES for cmd in commands):
        return None
    if broken or len(commands) != 1:
        return Expectation("close")
    cmd = commands[0]
    if cmd.is_response or cmd.is_oneway or cmd.code in NO_ANSWER_CODES:
        return Expectation("none", cmd.opaque, cmd.code)
    return Expectation("answer", cmd.opaque, cmd.code)


# -- sending -----------------------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class Figures:
    """What a run saw. ``silent`` frames are the failures; ``garbled`` counts answers our decoder refused."""

    sent: int = 0
    answered: int = 0
    closed: int = 0
    silent: int = 0
    not_due: int = 0
    garbled: int = 0
    #: Frames that should have been answered whose connection was closed instead.
    closed_instead: int = 0
    by_mutation: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    silent_samples: list[str] = dataclasses.field(default_factory=list)

    def add(self, other: Figures) -> None:
        for name in ("sent", "answered", "closed", "silent", "not_due", "garbled", "closed_instead"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for kind, counts in other.by_mutation.items():
            mine = self.by_mutation.setdefault(kind, [0, 0, 0, 0])
            for i, count in enumerate(counts):
                mine[i] += count
        self.silent_samples += other.silent_samples[: 20 - len(self.silent_samples)]


@dataclasses.dataclass(frozen=True, slots=True)
class Shot:
    """One frame to send: the bytes, what the server owes for them, and the mutation that made them."""

    data: bytes
    owes: Expectation
    mutation: str


def shots(corpus: Sequence[RemotingCommand], count: int, rng: random.Random) -> list[Shot]:
    """``count`` mutated frames of ``corpus``, each with a unique opaque before mutation."""
    out: list[Shot] = []
    while len(out) < count:
        template = rng.choice(corpus)
        cmd = RemotingCommand(
            code=template.code,
            opaque=len(out) + 1,
            ext_fields=dict(template.ext_fields or {}),
            body=template.body,
        )
        kind, data = mutate(cmd, rng, corpus)
        owes = expectation(data)
        if owes is not None:
            out.append(Shot(data, owes, kind))
    return out


class _Peer:
    """One raw connection: bytes out, whole frames in."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.decoder = FrameDecoder(MAX_FRAME_SIZE)
        self.garbled = False

    @classmethod
    async def open(cls, address: str) -> _Peer:
        host, port = address.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer)

    async def outcome(self, opaque: int | None, deadline: float) -> str:
        """``"answered"`` (a response with ``opaque``), ``"closed"`` or ``"silent"`` by ``deadline``."""
        loop = asyncio.get_running_loop()
        while True:
            left = deadline - loop.time()
            if left <= 0:
                return "silent"
            try:
                data = await asyncio.wait_for(self.reader.read(65536), left)
            except TimeoutError:
                return "silent"
            except (ConnectionError, OSError):
                return "closed"
            if not data:
                return "closed"
            try:
                commands = self.decoder.feed(data)
            except CodecError:
                self.garbled = True
                return "closed"
            for cmd in commands:
                if cmd.is_response and opaque is not None and cmd.opaque == opaque:
                    return "answered"

    def close(self) -> None:
        self.writer.transport.abort()


async def _worker(address: str, batch: Iterable[Shot], timeout: float, figures: Figures) -> None:
    peer: _Peer | None = None
    loop = asyncio.get_running_loop()
    try:
        for shot in batch:
            if peer is None:
                peer = await _Peer.open(address)
            figures.sent += 1
            counts = figures.by_mutation.setdefault(shot.mutation, [0, 0, 0, 0])
            counts[0] += 1
            try:
                peer.writer.write(shot.data)
                if shot.owes.owes == "close":
                    peer.writer.write_eof()
                await peer.writer.drain()
            except (ConnectionError, OSError):
                pass  # the server had closed already; what we read says so
            if shot.owes.owes == "none":
                figures.not_due += 1
                continue
            opaque = shot.owes.opaque if shot.owes.owes == "answer" else None
            result = await peer.outcome(opaque, loop.time() + timeout)
            if peer.garbled:
                figures.garbled += 1
            if result == "answered":
                figures.answered += 1
                counts[1] += 1
                continue
            peer.close()
            peer = None
            if result == "closed":
                figures.closed += 1
                counts[2] += 1
                if shot.owes.owes == "answer":
                    figures.closed_instead += 1
            else:
                figures.silent += 1
                counts[3] += 1
                if len(figures.silent_samples) < 20:
                    figures.silent_samples.append(
                        f"{shot.mutation} code {shot.owes.code} owes {shot.owes.owes}: {shot.data[:96].hex()}"
                    )
    finally:
        if peer is not None:
            peer.close()


async def fuzz(
    address: str,
    corpus: Sequence[RemotingCommand],
    frames: int,
    seed: int,
    *,
    connections: int = 8,
    timeout: float = 5.0,
    progress: Callable[[Figures], None] | None = None,
) -> Figures:
    """Send ``frames`` mutated frames of ``corpus`` (drawn from ``seed``) to ``address`` over
    ``connections`` connections at once; each frame's outcome is awaited at most ``timeout`` seconds."""
    rng = random.Random(seed)
    planned = shots(corpus, frames, rng)
    parts = [Figures() for _ in range(connections)]
    await asyncio.gather(
        *(_worker(address, planned[i::connections], timeout, parts[i]) for i in range(connections))
    )
    total = Figures()
    for part in parts:
        total.add(part)
    if progress is not None:
        progress(total)
    return total


def describe(figures: Figures, seconds: float | None = None) -> str:
    """The figures as a few lines of text."""
    lines = [
        f"frames sent {figures.sent}: answered {figures.answered}, closed {figures.closed}, "
        f"silent {figures.silent}, no answer due {figures.not_due}"
        + (f" ({seconds:.1f} s)" if seconds is not None else ""),
        f"closed instead of answered {figures.closed_instead}, answers our decoder refused {figures.garbled}",
    ]
    for kind in MUTATIONS:
        sent, answered, closed, silent = figures.by_mutation.get(kind, [0, 0, 0, 0])
        lines.append(
            f"  {kind:<9} sent {sent:>6}  answered {answered:>6}  closed {closed:>6}  silent {silent:>4}"
        )
    lines += [f"  silent: {sample}" for sample in figures.silent_samples]
    return "\n".join(lines)


async def ask(address: str, frame: bytes, opaque: int, timeout: float = 5.0) -> RemotingCommand | str:
    """Send one raw frame on a new connection: the response with ``opaque``, else ``"closed"`` or
    ``"silent"``."""
    peer = await _Peer.open(address)
    loop = asyncio.get_running_loop()
    try:
        peer.writer.write(frame)
        deadline = loop.time() + timeout
        while True:
            left = deadline - loop.time()
            if left <= 0:
                return "silent"
            try:
                data = await asyncio.wait_for(peer.reader.read(65536), left)
            except TimeoutError:
                return "silent"
            if not data:
                return "closed"
            for cmd in peer.decoder.feed(data):
                if cmd.is_response and cmd.opaque == opaque:
                    return cmd
    finally:
        peer.close()


def json_request(code: int, ext: dict[str, str], opaque: int = 1, remark: str | None = None) -> bytes:
    """A JSON request frame as a Java peer writes it, any lone surrogate in ``ext`` or ``remark`` written as
    a ``\\udXXX`` escape (which fastjson, and our decoder, read back into that lone surrogate)."""
    return _json_frame(RemotingCommand(code=code, opaque=opaque), ext, remark)
