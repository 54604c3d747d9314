"""What a fuzzer found in the servers, one test per fix.

* Lone UTF-16 surrogates (a JSON peer's ``"\\ud800"``) are written as Java writes them (``?``), so an answer
  quoting one can always be encoded;
* a request whose answer cannot be encoded anyway is answered SYSTEM_ERROR, or its connection closed;
* a number outside its header field's Java type is refused, and can no longer poison the offsets file;
* the broker's other persisted tables refuse such values from their peers too;
* ``rmq inspect`` prints frames holding lone surrogates.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import hashlib
import hmac
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.clock import ManualClock
from broker.ha.sync import _check_storable_topic, _check_storable_version
from broker.long_polling import PullRequestHoldService
from broker.store.consumer_offsets import ConsumerOffsetStore
from broker.store.json_config import DataVersion as StoreDataVersion
from broker.subscription_groups import SubscriptionGroupManager
from broker.testing import BrokerClient, running_broker
from nameserver import NameServer, NamesrvConfig
from nameserver.kvconfig import KVConfigManager
from rocketmq_wire import (
    CodecError,
    RemotingCommand,
    RequestCode,
    ResponseCode,
    SerializeType,
    accel,
    fastjson,
    header_binary,
)
from rocketmq_wire.acl import signature_of
from rocketmq_wire.headers import ALL_HEADERS, SendMessageResponseHeader
from rocketmq_wire.headers.base import CommandHeader, JavaField, java_int_range
from rocketmq_wire.headers.lite import GetLiteClientInfoRequestHeader
from rocketmq_wire.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketmq_wire.headers.send import SendMessageRequestHeaderV2
from rocketmq_wire.headers.topic import CreateTopicRequestHeader
from rocketmq_wire.headers.transaction import EndTransactionRequestHeader
from rocketmq_wire.javatext import java_utf8, printable
from rocketmq_wire.message.stored import MessageExt, decode_message, encode_stored_message
from rocketmq_wire.transport.dispatch import RequestDispatcher, send_answer
from tests import server_fuzz

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(params=["python", "c"])
def impl(request: pytest.FixtureRequest) -> Iterator[str]:
    """The test on the pure-Python codec and on the C accelerator."""
    if request.param == "c":
        if not accel.ACCELERATED:
            pytest.skip("the C accelerator is not built or is switched off")
        yield "c"
    else:
        with accel.pure_python():
            yield "python"


# -- lone surrogates are written as Java writes them --------------------------------------------------------


def test_java_utf8_writes_a_question_mark_per_lone_surrogate_and_joins_halves_that_meet() -> None:
    assert java_utf8("a\ud800b") == b"a?b"
    assert java_utf8("\udc00\ud800") == b"??"
    assert java_utf8("\ud83d\ude00") == "\U0001f600".encode()  # two halves in a row are one character
    assert java_utf8("x\ud800\ud83d\ude00\udfff") == b"x?" + "\U0001f600".encode() + b"?"
    assert java_utf8("caf\u00e9") == "caf\u00e9".encode()
    assert printable("a\ud800b") == "a\\ud800b" and printable("caf\u00e9") == "caf\u00e9"


@pytest.mark.parametrize("serialize", [SerializeType.JSON, SerializeType.ROCKETMQ])
def test_a_header_with_lone_surrogates_encodes_as_java_does(impl: str, serialize: SerializeType) -> None:
    cmd = RemotingCommand(
        code=17,
        remark="topic[T\ud800x] not exist",
        ext_fields={"topic": "T\udfffx", "k\ud800": "\ud83d\ude00"},
        serialize_type=serialize,
    )
    frame = cmd.encode()
    assert b"topic[T?x] not exist" in frame and b"T?x" in frame and "\U0001f600".encode() in frame
    back = RemotingCommand.decode(frame)
    assert back.remark == "topic[T?x] not exist" and back.fields()["topic"] == "T?x"


def test_both_codec_paths_write_the_same_bytes_for_lone_surrogates() -> None:
    header = SendMessageResponseHeader(msg_id="id\ud800", queue_id=1, queue_offset=2, transaction_id="\udc00")
    for serialize in (SerializeType.JSON, SerializeType.ROCKETMQ):
        cmd = RemotingCommand(
            code=0, flag=1, remark="r\ud800", custom_header=header, serialize_type=serialize
        )
        cmd.ext_fields = None
        fast = cmd.encode()
        with accel.pure_python():
            reference = cmd.encode()
        assert fast == reference and b"id?" in fast
    entries = [("k\ud800", "v\udfff"), ("pair", "\ud83d\ude00")]
    assert header_binary.encode_entries(entries) == header_binary.encode_entries(iter(entries))
    assert b"\x00\x02k?\x00\x00\x00\x02v?" in header_binary.encode_entries(entries)


def test_json_bodies_join_surrogate_halves_as_java_getbytes_does() -> None:
    assert fastjson.dump_bytes(["\ud83d" + "\ude00", "a\ud800"]) == '["\U0001f600","a?"]'.encode()


def test_stored_messages_with_lone_surrogates_encode_as_java_does() -> None:
    message = MessageExt(
        topic="T\ud800",
        body=b"body",
        properties_string="KEYS\x01k\udc00\x02",
        born_host="127.0.0.1:1",
        store_host="127.0.0.1:2",
    )
    record = encode_stored_message(message)
    stored = decode_message(record, 0)[0]
    assert stored.topic == "T?" and stored.properties_string == "KEYS\x01k?\x02"


def test_acl_signature_covers_the_bytes_java_signs() -> None:
    fields = {"AccessKey": "ak", "topic": "T\ud800", "b": "\ude00"}
    joined = "ak" + "\ude00" + "T\ud800"  # the values in TreeMap order of AccessKey, b, topic, joined
    digest = hmac.new(b"sk", java_utf8(joined) + b"body", hashlib.sha1).digest()
    assert signature_of(fields, b"body", "sk") == base64.b64encode(digest).decode()


# -- servers answer requests quoting lone surrogates ------------------------------------------------------


@pytest.fixture
async def servers(tmp_path: Path) -> AsyncIterator[tuple[str, str]]:
    async with NameServer("127.0.0.1", 0) as namesrv:
        async with running_broker(tmp_path / "store") as broker:
            yield f"127.0.0.1:{namesrv.remoting.port}", broker.address


_PULL = {
    "consumerGroup": "G\udc00",
    "topic": "T\ud800x",
    "queueId": "0",
    "queueOffset": "0",
    "maxMsgNums": "1",
    "sysFlag": "0",
    "commitOffset": "0",
    "suspendTimeoutMillis": "0",
    "subVersion": "0",
}


@pytest.mark.parametrize(
    ("server", "code", "ext"),
    [
        ("namesrv", RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T\ud800x"}),
        ("broker", RequestCode.PULL_MESSAGE, _PULL),
        ("broker", RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "T\ud800x"}),
        ("broker", RequestCode.GET_TOPIC_STATS_INFO, {"topic": "T\ud800x"}),
        ("broker", RequestCode.GET_TOPIC_CONFIG, {"topic": "T\ud800x"}),
    ],
    ids=["namesrv-route", "broker-pull", "broker-consumer-list", "broker-topic-stats", "broker-topic-config"],
)
async def test_a_request_quoting_a_lone_surrogate_is_answered(
    servers: tuple[str, str], server: str, code: int, ext: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)  # the servers log the text they got, which pytest-xdist cannot ship
    address = servers[0] if server == "namesrv" else servers[1]
    answer = await server_fuzz.ask(address, server_fuzz.json_request(code, ext, opaque=77), 77)
    assert isinstance(answer, RemotingCommand), answer
    assert answer.code != ResponseCode.SUCCESS and answer.remark is not None and "T?x" in answer.remark


# -- an answer that cannot be encoded is replaced, or its connection closed ----------------------------------


@dataclasses.dataclass(slots=True, kw_only=True)
class _Unwritable(CommandHeader):
    """A header whose entries cannot be made: any answer carrying it fails to encode."""

    def ext_items(self) -> list[tuple[str, str]]:
        raise RuntimeError("no entries for you")


class _EncodingConnection:
    """Just enough of a Connection for the dispatcher, encoding what it is given as the real one does."""

    def __init__(self) -> None:
        self.remote_address = "10.0.0.9:4444"
        self.writing_paused = False
        self.is_open = True
        self.frames: list[RemotingCommand] = []
        self.closed: str | None = None

    def add_close_callback(self, callback: object) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def send_response_nowait(self, cmd: RemotingCommand) -> None:
        cmd.mark_response()
        self.frames.append(RemotingCommand.decode(cmd.encode()))

    async def send_response(self, cmd: RemotingCommand) -> None:
        self.send_response_nowait(cmd)

    def close(self, reason: str = "closed locally") -> None:
        self.closed = reason


def _bad_answer(request: RemotingCommand, conn: object) -> RemotingCommand:
    return RemotingCommand(code=ResponseCode.SUCCESS, custom_header=_Unwritable())


async def _bad_answer_later(request: RemotingCommand, conn: object) -> RemotingCommand:
    await asyncio.sleep(0)
    return _bad_answer(request, conn)


async def _dispatch(how: str, conn: _EncodingConnection) -> None:
    dispatcher = RequestDispatcher()
    if how == "inline":
        dispatcher.register_inline(1, _bad_answer)
    else:
        dispatcher.register(1, _bad_answer_later, eager=how == "eager")
    request = RemotingCommand.request(1)
    request.opaque = 42
    dispatcher(request, conn)  # type: ignore[arg-type]
    for _ in range(20):
        await asyncio.sleep(0)
    await dispatcher.close()


@pytest.mark.parametrize("how", ["inline", "task", "eager"])
async def test_an_answer_that_cannot_be_encoded_becomes_system_error(how: str) -> None:
    conn = _EncodingConnection()
    await _dispatch(how, conn)
    [answer] = conn.frames
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.opaque == 42
    assert answer.remark == "answer could not be encoded: RuntimeError: no entries for you"
    assert conn.closed is None


async def test_a_connection_that_cannot_carry_even_the_error_is_closed_with_a_reason(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    original = RemotingCommand.make_response

    def unwritable(self: RemotingCommand, *args: Any, **kwargs: Any) -> RemotingCommand:
        response = original(self, *args, **kwargs)
        response.custom_header = _Unwritable()
        return response

    monkeypatch.setattr(RemotingCommand, "make_response", unwritable)
    conn = _EncodingConnection()
    with caplog.at_level(logging.ERROR, logger="rocketmq_wire.transport"):
        await _dispatch("task", conn)
    assert conn.frames == []
    assert conn.closed is not None and "cannot answer request code 1 (opaque 42)" in conn.closed
    assert any("closing connection from 10.0.0.9:4444" in r.getMessage() for r in caplog.records)


async def test_a_late_answer_that_cannot_be_encoded_becomes_system_error() -> None:
    conn = _EncodingConnection()
    request = RemotingCommand.request(11)
    request.opaque = 9
    await send_answer(request, _bad_answer(request, conn), conn)  # type: ignore[arg-type]
    [answer] = conn.frames
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.opaque == 9


async def test_a_held_pull_whose_serving_fails_is_answered_system_error() -> None:
    def fails(request: RemotingCommand, conn: object) -> RemotingCommand | None:
        raise RuntimeError("store gone")

    holder = PullRequestHoldService(ManualClock(), fails)
    conn = _EncodingConnection()
    request = RemotingCommand.request(RequestCode.PULL_MESSAGE)
    request.opaque = 5
    holder.suspend("T", 0, request, conn, 0, None, 60_000)  # type: ignore[arg-type]
    holder.notify_arrival("T", 0, 1, ())
    for _ in range(10):
        await asyncio.sleep(0)
    await holder.close()
    [answer] = conn.frames
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.opaque == 5
    assert answer.remark is not None and answer.remark.startswith("RuntimeError: store gone")


# -- numbers outside their Java type are refused -----------------------------------------------------------


def _sample(cls: type[CommandHeader]) -> dict[str, str]:
    values = {str: "v", int: "12", bool: "true"}
    ext = {f.java: values[f.kind] for f in cls.java_fields()}
    if cls is EndTransactionRequestHeader:
        ext["commitOrRollback"] = "8"
    if cls is CreateTopicRequestHeader:
        ext["topicFilterType"] = "SINGLE_TAG"
    return ext


_INT_FIELDS = [(cls, f) for cls in ALL_HEADERS for f in cls.java_fields() if f.kind is int]


def test_every_integral_field_knows_its_java_type() -> None:
    assert all(f.bits in (32, 64) for _, f in _INT_FIELDS)
    wide = {(cls.__name__, f.java) for cls, f in _INT_FIELDS if f.bits == 64}
    assert ("UpdateConsumerOffsetRequestHeader", "commitOffset") in wide
    assert ("UpdateConsumerOffsetRequestHeader", "queueId") not in wide
    assert ("SendMessageRequestHeaderV2", "g") in wide and ("SendMessageRequestHeaderV2", "e") not in wide


#: (header, field) pairs whose header refuses anything below 1 (see each header's ``check``).
_POSITIVE_ONLY = {(GetLiteClientInfoRequestHeader, "maxCount")}


@pytest.mark.parametrize(
    ("cls", "field"), _INT_FIELDS, ids=[f"{c.__name__}.{f.java}" for c, f in _INT_FIELDS]
)
def test_a_number_beyond_the_fields_java_type_is_refused(
    impl: str, cls: type[CommandHeader], field: JavaField
) -> None:
    if cls is EndTransactionRequestHeader and field.java == "commitOrRollback":
        pytest.skip("only 0, 8 and 12 are accepted at all")
    low, high = java_int_range(field.bits)
    ext = _sample(cls)
    # A field whose header allows positive values only refuses the low end for that reason instead.
    for fits in (high,) if (cls, field.java) in _POSITIVE_ONLY else (low, high):
        ext[field.java] = str(fits)
        assert getattr(cls.from_ext(ext), field.attr) == fits
    for beyond in (low - 1, high + 1, 10**25):
        ext[field.java] = str(beyond)
        with pytest.raises(CodecError, match=f"header field '{field.java}'.*(does not fit|too long)"):
            cls.from_ext(ext)


def test_a_binary_fast_path_frame_with_a_number_beyond_int_is_refused(impl: str) -> None:
    fields = {"a": "G", "b": "T", "c": "D", "d": "4", "e": "2147483648", "f": "0", "g": "0", "h": "0"}
    ext = header_binary.encode_entries(list(fields.items()))
    header = (
        header_binary._FIXED.pack(RequestCode.SEND_MESSAGE_V2, 0, 409, 1, 0, 0)
        + len(ext).to_bytes(4, "big")
        + ext
    )
    frame = (4 + len(header)).to_bytes(4, "big") + (0x01000000 | len(header)).to_bytes(4, "big") + header
    cmd = RemotingCommand.decode(frame)
    assert cmd.custom_header is None  # not taken for the fast-path header: the entries stay as they are
    with pytest.raises(CodecError, match="'e': 2147483648 does not fit a Java int"):
        cmd.read_header(SendMessageRequestHeaderV2)


async def test_an_out_of_range_offset_commit_is_refused_and_offsets_are_still_saved(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store") as broker:
        async with BrokerClient(broker.address) as client:
            bad = server_fuzz.json_request(
                RequestCode.UPDATE_CONSUMER_OFFSET,
                {"consumerGroup": "Bad", "topic": "T", "queueId": "2147483648", "commitOffset": "1"},
                opaque=3,
            )
            answer = await server_fuzz.ask(broker.address, bad, 3)
            assert isinstance(answer, RemotingCommand)
            assert answer.code == ResponseCode.SYSTEM_ERROR
            assert answer.remark == (
                "org.apache.rocketmq.remoting.exception.RemotingCommandException: header field 'queueId': "
                "2147483648 does not fit a Java int (-2147483648..2147483647)"
            )
            good = UpdateConsumerOffsetRequestHeader(
                consumer_group="Good", topic="T", queue_id=1, commit_offset=7
            )
            ok = await client.request(RequestCode.UPDATE_CONSUMER_OFFSET, good)
            assert ok.code == ResponseCode.SUCCESS
        await asyncio.to_thread(broker.consumer_offsets.persist)
        saved = fastjson.loads(broker.consumer_offsets.path.read_bytes())
        assert saved["offsetTable"] == {"T@Good": {1: 7}}


# -- one bad offset never stops the others from being saved --------------------------------------------------


def test_the_offset_store_refuses_what_java_cannot_hold(tmp_path: Path) -> None:
    store = ConsumerOffsetStore(tmp_path)
    for queue_id, offset in ((1 << 31, 0), (-(1 << 31) - 1, 0), (0, 1 << 63), (0, -(1 << 63) - 1)):
        with pytest.raises(ValueError, match="outside Java's int/long range"):
            store.commit_offset("g", "T", queue_id, offset)
    store.commit_offset("g", "T", (1 << 31) - 1, (1 << 63) - 1)
    assert store.query_offset("g", "T", (1 << 31) - 1) == (1 << 63) - 1


def test_a_bad_entry_does_not_block_later_saves(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = ConsumerOffsetStore(tmp_path)
    store.commit_offset("g1", "T", 0, 5)
    store._table["T@poisoned"] = {1 << 40: 1, 2: 1 << 70}  # as an older broker could hold them
    with caplog.at_level(logging.ERROR, logger="broker.store.consumer_offsets"):
        store.persist()
        store.commit_offset("g2", "T", 3, 9)
        store.persist()
    saved = fastjson.loads(store.path.read_bytes())
    assert saved["offsetTable"] == {"T@g1": {0: 5}, "T@poisoned": {}, "T@g2": {3: 9}}
    assert any("Java cannot hold it" in r.getMessage() for r in caplog.records)


def test_bad_entries_of_a_file_or_a_peer_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "consumerOffset.json").write_text(
        '{"dataVersion":{"counter":99999999999999999999999,"timestamp":1},'
        '"offsetTable":{"T@g":{0:1,1:99999999999999999999,2147483648:3,"x":4}}}'
    )
    store = ConsumerOffsetStore(tmp_path)
    store.load()
    assert store.offsets("g", "T") == {0: 1}
    store.merge({"T@peer": {0: 2, 1 << 35: 1, 4: 1 << 64}})
    assert store.offsets("peer", "T") == {0: 2}
    store.persist()
    assert fastjson.loads(store.path.read_bytes())["offsetTable"] == {"T@g": {0: 1}, "T@peer": {0: 2}}


def test_a_failed_write_leaves_the_table_dirty(tmp_path: Path) -> None:
    store = ConsumerOffsetStore(tmp_path / "missing" / "deeper")
    store.path = tmp_path / "not-a-dir" / "consumerOffset.json"
    (tmp_path / "not-a-dir").write_text("a file where a folder should be")
    store.commit_offset("g", "T", 0, 1)
    with pytest.raises(OSError):
        store.persist_if_dirty()
    store.path = tmp_path / "consumerOffset.json"
    assert store.persist_if_dirty()  # tried again, and saved this time
    assert fastjson.loads(store.path.read_bytes())["offsetTable"] == {"T@g": {0: 1}}


# -- the broker's other tables refuse what would poison them -------------------------------------------------


def test_a_masters_subscription_groups_beyond_java_types_are_refused() -> None:
    groups = SubscriptionGroupManager(clock=lambda: 1)
    groups.find("kept")
    before = groups.to_json()
    table = '"subscriptionGroupTable":{{"g":{{"groupName":"g","retryMaxTimes":{}}}}}'
    for body in (
        '{"dataVersion":{"counter":2,"timestamp":2},' + table.format(1 << 40) + "}",
        '{"dataVersion":{"counter":2,"timestamp":2},' + table.format(10**30) + "}",
        '{"dataVersion":{"counter":99999999999999999999999,"timestamp":2},' + table.format(3) + "}",
    ):
        with pytest.raises(CodecError):
            groups.replace_from_json(body.encode())
        assert groups.to_json() == before
    assert groups.replace_from_json(
        ('{"dataVersion":{"counter":2,"timestamp":2},' + table.format(3) + "}").encode()
    )
    groups.to_json()


def test_a_masters_topic_configs_beyond_java_types_are_refused() -> None:
    _check_storable_topic("T", {"topicName": "T", "readQueueNums": 8, "perm": 6, "extra": [1, "x"]})
    for config in (
        {"topicName": "T", "readQueueNums": 1 << 40},
        {"topicName": "T", "perm": -(1 << 31) - 1},
        {"topicName": "T", "unknown": 1 << 64},
    ):
        with pytest.raises(CodecError):
            _check_storable_topic("T", config)
    _check_storable_version(StoreDataVersion(1, 2, 3))
    with pytest.raises(CodecError):
        _check_storable_version(StoreDataVersion(1, 1 << 63, 0))


def test_kv_config_with_lone_surrogates_is_still_saved(tmp_path: Path) -> None:
    """Only strings live there, so only text could poison it: written as Java writes it."""
    kv = KVConfigManager(tmp_path / "kvConfig.json")
    kv.put("ns\ud800", "k", "v\udfff")
    kv.put("ns", "k", "v")
    saved = fastjson.loads((tmp_path / "kvConfig.json").read_bytes())
    assert saved["configTable"] == {"ns?": {"k": "v?"}, "ns": {"k": "v"}}


async def test_a_namesrv_with_a_kv_file_answers_a_put_quoting_a_surrogate(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.CRITICAL)  # the server logs the text it got, which pytest-xdist cannot ship
    config = NamesrvConfig(kv_config_path=str(tmp_path / "kv.json"))
    async with NameServer("127.0.0.1", 0, config=config) as namesrv:
        address = f"127.0.0.1:{namesrv.remoting.port}"
        frame = server_fuzz.json_request(
            RequestCode.PUT_KV_CONFIG, {"namespace": "N", "key": "k", "value": "\ud800"}
        )
        answer = await server_fuzz.ask(address, frame, 1)
        assert isinstance(answer, RemotingCommand) and answer.code == ResponseCode.SUCCESS
    assert fastjson.loads((tmp_path / "kv.json").read_bytes())["configTable"] == {"N": {"k": "?"}}


# -- rmq inspect -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_json", [False, True])
def test_rmq_inspect_prints_a_frame_holding_a_lone_surrogate(tmp_path: Path, as_json: bool) -> None:
    frame = server_fuzz.json_request(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "a\ud800b"}, remark="r\udc00"
    )
    capture = tmp_path / "frames.hex"
    capture.write_text(frame.hex() + "\n")
    env = {k: v for k, v in os.environ.items() if k != "RMQ_DEBUG"}
    env["PYTHONIOENCODING"] = "utf-8"  # strict: a lone surrogate written as such would fail
    result = subprocess.run(
        [sys.executable, "-m", "cli.main", "inspect", str(capture), *(["--json"] if as_json else [])],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "a\\ud800b" in result.stdout and "GET_ROUTEINFO" in result.stdout
    if as_json:
        assert '"remark": "r\\udc00"' in result.stdout
