"""The message codecs against the captured Apache frames (shared/golden).

Send requests' properties strings, batch bodies and every stored-message body (pull, query and view
responses) must decode and re-encode to the captured bytes; ids found in them must parse to what the frames
around them say. Each test also checks that it saw every frame of its kind, so a filter that silently drops
frames cannot make it pass.
"""

from __future__ import annotations

import datetime as dt
import random

import pytest

from rocketmq_wire import RemotingCommand
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javahash import final_table_size, hashmap_spread
from rocketmq_wire.message import (
    Message,
    PropertiesFlavour,
    compress,
    compression_type_of,
    const,
    decode_batch,
    decode_cpp_unique_id,
    decode_messages,
    decode_offset_msg_id,
    decode_properties,
    decode_unique_id,
    detect_flavour,
    encode_batch,
    encode_java_properties,
    encode_properties,
    encode_stored_message,
    parse_host,
)
from tests.golden import CAPTURES, GoldenFrame, load_golden, request_of

SEND_CODES = (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
VIEW_MESSAGE_BY_ID = 33
STORED_BODY_CODES = (RequestCode.PULL_MESSAGE, RequestCode.QUERY_MESSAGE, VIEW_MESSAGE_BY_ID)
#: The captures were made on hosts running in UTC: month-relative id times are counted from UTC midnights.
CAPTURE_TZ = dt.UTC


def _send_requests(capture: str) -> list[GoldenFrame]:
    frames = load_golden()
    return [f for f in frames if f.capture == capture and f.kind != "response" and f.code in SEND_CODES]


def _properties_of(frame: GoldenFrame) -> str:
    fields = RemotingCommand.decode(frame.frame).fields()
    # SEND_MESSAGE_V2 and SEND_BATCH_MESSAGE abbreviate the header field names; SEND_MESSAGE spells them out.
    return fields["i"] if frame.code != RequestCode.SEND_MESSAGE else fields["properties"]


def _born_timestamp_of(frame: GoldenFrame) -> int:
    fields = RemotingCommand.decode(frame.frame).fields()
    return int(fields["g"] if frame.code != RequestCode.SEND_MESSAGE else fields["bornTimestamp"])


def _stored_bodies(capture: str) -> list[tuple[GoldenFrame, GoldenFrame]]:
    """(request, response) for each successful answer to a request whose response body is stored messages."""
    pairs = []
    for f in load_golden():
        if f.capture != capture or f.kind != "response" or f.code != 0:
            continue
        request = request_of(f)
        if request is not None and request.code in STORED_BODY_CODES:
            pairs.append((request, f))
    return pairs


def _collides(keys: list[str], capacity: int | None = None) -> bool:
    mask = final_table_size(len(keys), capacity) - 1
    buckets = [hashmap_spread(k) & mask for k in keys]
    return len(set(buckets)) != len(buckets)


@pytest.mark.parametrize("capture", CAPTURES)
def test_send_properties_decode_and_reencode(capture: str) -> None:
    requests = _send_requests(capture)
    assert requests, f"{capture}: no send requests"
    for frame in requests:
        text = _properties_of(frame)
        flavour = detect_flavour(text)
        decoded = decode_properties(text)
        assert decoded, frame.id
        assert encode_properties(decoded, flavour) == text, frame.id
        if frame.from_java:
            expected = PropertiesFlavour.V4 if capture.startswith("java498") else PropertiesFlavour.V5
            assert flavour is expected, frame.id
            # The order is computed: Java's HashMap order from the names alone where no two share a bucket.
            if not _collides(list(decoded)):
                assert encode_java_properties(dict(sorted(decoded.items())), flavour) == text, frame.id
            assert encode_java_properties(decoded, flavour) == text, frame.id
        else:
            # The C++ client writes its std::map: sorted names, every pair terminated.
            assert list(decoded) == sorted(decoded), frame.id
            assert flavour is PropertiesFlavour.V5, frame.id


@pytest.mark.parametrize("capture", CAPTURES)
def test_java_send_properties_rebuild_from_a_message(capture: str) -> None:
    """A Message holding what the Java producer held writes the captured string (tags, keys, wait, delay)."""
    rebuilt = 0
    for frame in _send_requests(capture):
        if not frame.from_java or frame.code == RequestCode.SEND_BATCH_MESSAGE:
            continue
        text = _properties_of(frame)
        topic = RemotingCommand.decode(frame.frame).fields()["b"]
        message, system = Message.from_properties(topic, frame.body, text)
        assert const.UNIQ_KEY in system, frame.id
        assert message.encode_properties(detect_flavour(text), extra=system) == text, frame.id
        rebuilt += 1
    labelled = [f for f in load_golden() if f.capture == capture and f.code == RequestCode.SEND_MESSAGE_V2]
    assert rebuilt == sum(1 for f in labelled if f.kind != "response" and f.from_java) > 0


@pytest.mark.parametrize("capture", CAPTURES)
def test_batch_bodies_decode_and_reencode(capture: str) -> None:
    batches = [f for f in _send_requests(capture) if f.code == RequestCode.SEND_BATCH_MESSAGE]
    assert len(batches) == 1, f"{capture}: the scenario sends one batch"
    for frame in batches:
        entries = decode_batch(frame.body)
        assert len(entries) == 3, frame.id
        assert encode_batch(entries) == frame.body, frame.id
        batch_flavour = detect_flavour(_properties_of(frame))
        for index, entry in enumerate(entries):
            assert entry.magic == 0 and entry.body_crc == 0, frame.id
            assert entry.body == f"batch body {index}".encode(), frame.id
            assert detect_flavour(entry.properties_string) is batch_flavour, frame.id
            assert encode_properties(entry.properties, batch_flavour) == entry.properties_string, frame.id
            assert entry.properties[const.KEYS] == f"batch-key-{index}", frame.id


@pytest.mark.parametrize("capture", CAPTURES)
def test_stored_message_bodies_decode_and_reencode(capture: str) -> None:
    pairs = _stored_bodies(capture)
    with_body = [(req, resp) for req, resp in pairs if resp.body]
    assert with_body, f"{capture}: no stored-message bodies"
    assert all(req.code == RequestCode.PULL_MESSAGE for req, resp in pairs if not resp.body)
    messages = 0
    for request, response in with_body:
        stored = decode_messages(response.body, decompress_body=False, check_crc=True)
        assert b"".join(encode_stored_message(m) for m in stored) == response.body, response.id
        # Decompressed, then compressed again as Java's MessageDecoder.encode would: the same bytes.
        unpacked = decode_messages(response.body)
        assert b"".join(encode_stored_message(m, compress_body=True) for m in unpacked) == response.body
        for raw, message in zip(stored, unpacked, strict=True):
            store_ip, store_port = parse_host(message.store_host)
            assert decode_offset_msg_id(message.msg_id).offset == message.commit_log_offset
            assert decode_offset_msg_id(message.msg_id).ip == store_ip, response.id
            assert decode_offset_msg_id(message.msg_id).port == store_port, response.id
            assert message.store_size == len(encode_stored_message(raw)), response.id
            if request.code == RequestCode.PULL_MESSAGE:
                pulled_topic = RemotingCommand.decode(request.frame).fields().get("topic")
                assert message.topic == pulled_topic, response.id
        messages += len(stored)
    assert messages >= len(with_body)


@pytest.mark.parametrize("capture", CAPTURES)
def test_compressed_bodies_decompress_to_what_was_compressed(capture: str) -> None:
    compressed = 0
    for _, response in _stored_bodies(capture):
        for raw, message in zip(
            decode_messages(response.body, decompress_body=False), decode_messages(response.body), strict=True
        ):
            if not raw.is_compressed:
                assert raw.body == message.body
                continue
            compressed += 1
            kind = compression_type_of(raw.sys_flag)
            assert len(message.body) > 4096, response.id
            assert compress(message.body, kind) == raw.body, response.id
    assert compressed >= 1, f"{capture}: the scenario pulls its > 4 KiB compressed message"


@pytest.mark.parametrize("capture", CAPTURES)
def test_view_by_id_offset_finds_the_message(capture: str) -> None:
    views = [(req, resp) for req, resp in _stored_bodies(capture) if req.code == VIEW_MESSAGE_BY_ID]
    assert len(views) == 1, f"{capture}: the scenario views one message by its offset id"
    for request, response in views:
        offset = int(RemotingCommand.decode(request.frame).fields()["offset"])
        (message,) = decode_messages(response.body)
        assert message.commit_log_offset == offset
        assert decode_offset_msg_id(message.msg_id).offset == offset


@pytest.mark.parametrize("capture", CAPTURES)
def test_send_results_carry_offset_ids_that_parse(capture: str) -> None:
    checked = 0
    for f in load_golden():
        if f.capture != capture or f.kind != "response" or f.code != 0:
            continue
        request = request_of(f)
        if request is None or request.code not in SEND_CODES:
            continue
        fields = RemotingCommand.decode(f.frame).fields()
        ids = fields["msgId"].split(",")
        expected = 3 if request.code == RequestCode.SEND_BATCH_MESSAGE else 1
        assert len(ids) == expected, f.id
        offsets = [decode_offset_msg_id(i).offset for i in ids]
        assert offsets == sorted(offsets) and len(set(offsets)) == expected, f.id
        for i in ids:
            assert decode_offset_msg_id(i).address == "127.0.0.1:10911", f.id
        if "transactionId" in fields:  # 5.x answers with the unique id of the message as well
            assert fields["transactionId"] in _properties_of(request), f.id
        checked += 1
    sends = [f for f in _send_requests(capture) if f.kind == "request"]
    assert checked == len(sends)


def _producer_languages() -> dict[str, tuple[str, int]]:
    """UNIQ_KEY → (language of the producer that sent it, born timestamp of its send)."""
    found: dict[str, tuple[str, int]] = {}
    for capture in CAPTURES:
        for frame in _send_requests(capture):
            born = _born_timestamp_of(frame)
            texts = [_properties_of(frame)]
            if frame.code == RequestCode.SEND_BATCH_MESSAGE:
                texts += [entry.properties_string for entry in decode_batch(frame.body)]
            for text in texts:
                uniq = decode_properties(text).get(const.UNIQ_KEY)
                if uniq is not None:
                    found[uniq] = (frame.language, born)
    return found


def test_unique_ids_decode_to_their_send_times() -> None:
    checked = {"JAVA": 0, "CPP": 0}
    for uniq, (language, born) in _producer_languages().items():
        if language == "JAVA":
            parts = decode_unique_id(uniq)
            made = parts.timestamp_ms(born + 1000, CAPTURE_TZ)
            assert born - 1000 <= made <= born, uniq
        else:
            parts = decode_cpp_unique_id(uniq)
            made = parts.timestamp_ms(born + 1000, CAPTURE_TZ)
            assert abs(made - born) <= 1000, uniq
            assert parts.ip == "127.0.0.1", uniq
        checked[language] += 1
    assert checked["JAVA"] >= 4 * 12 and checked["CPP"] >= 3 * 3


def test_stored_unique_ids_match_born_timestamps() -> None:
    languages = _producer_languages()
    checked = 0
    for capture in CAPTURES:
        for _, response in _stored_bodies(capture):
            for message in decode_messages(response.body):
                uniq = message.unique_id
                assert uniq is not None and uniq in languages, response.id
                if languages[uniq][0] == "JAVA":
                    made = decode_unique_id(uniq).timestamp_ms(message.born_timestamp + 1000, CAPTURE_TZ)
                    assert message.born_timestamp - 1000 <= made <= message.born_timestamp, uniq
                else:
                    made = decode_cpp_unique_id(uniq).timestamp_ms(message.born_timestamp + 1000, CAPTURE_TZ)
                    assert abs(made - message.born_timestamp) <= 1000, uniq
                for origin in (message.properties.get(const.ORIGIN_MESSAGE_ID),):
                    if origin is not None:
                        assert decode_offset_msg_id(origin).address == message.store_host
                checked += 1
    assert checked > 0


def test_stored_batch_messages_keep_the_last_repeated_value() -> None:
    """A broker appends the batch's properties to each entry's; readers keep the last value of a name."""
    repeated = 0
    for capture in CAPTURES:
        for _, response in _stored_bodies(capture):
            for message in decode_messages(response.body):
                pairs = [p for p in message.properties_string.split("\x02") if p]
                names = [p.split("\x01", 1)[0] for p in pairs]
                for name in {n for n in names if names.count(n) > 1}:
                    last = [p for p in pairs if p.startswith(name + "\x01")][-1].split("\x01", 1)[1]
                    assert message.properties[name] == last
                    repeated += 1
    assert repeated > 0, "the stored batch messages repeat WAIT (4.9.8) and UNIQ_KEY (5.3.3)"


@pytest.mark.parametrize("capture", CAPTURES)
def test_mutated_golden_bodies_raise_only_codec_errors(capture: str) -> None:
    """Real pull / query / view bodies and batch bodies with bytes overwritten or cut short."""
    rng = random.Random(capture)
    bodies = [resp.body for _, resp in _stored_bodies(capture) if resp.body]
    batches = [f.body for f in _send_requests(capture) if f.code == RequestCode.SEND_BATCH_MESSAGE]
    failures = 0
    for decode, samples in ((decode_messages, bodies), (decode_batch, batches)):
        for body in samples:
            for _ in range(50):
                mutated = bytearray(body)
                for _ in range(rng.randint(1, 3)):
                    mutated[rng.randrange(len(mutated))] = rng.randrange(256)
                if rng.random() < 0.3:
                    mutated = mutated[: rng.randrange(len(mutated))]
                try:
                    decode(bytes(mutated))
                except CodecError:
                    failures += 1
    assert failures > 0, "some mutations must be detected"
