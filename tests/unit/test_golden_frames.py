"""The codec against frames captured from real Apache RocketMQ 4.9.8 / 5.3.3 peers and the C++ client.

What must hold (see shared/golden/README.md): every frame decodes; every frame a Java process wrote encodes
again to exactly the captured bytes from its decoded attributes, with the ext-field order *computed* (so
sorted input gives the same bytes wherever the key set alone fixes the order).
"""

from __future__ import annotations

import collections

import pytest

from rocketmq_wire import ExtFields, RemotingCommand, SerializeType
from rocketmq_wire.javahash import final_table_size, hashmap_spread
from tests.golden import CAPTURES, GoldenFrame, load_golden


def _frames(capture: str) -> list[GoldenFrame]:
    return [f for f in load_golden() if f.capture == capture]


def _rebuild(cmd: RemotingCommand, ext: ExtFields | dict[str, str] | None) -> bytes:
    return RemotingCommand(
        code=cmd.code,
        language=cmd.language,
        version=cmd.version,
        opaque=cmd.opaque,
        flag=cmd.flag,
        remark=cmd.remark,
        ext_fields=ext,
        body=cmd.body,
        serialize_type=cmd.serialize_type,
        custom_header=cmd.custom_header,
    ).encode()


def _keys_collide(keys: list[str], capacity: int | None) -> bool:
    mask = final_table_size(len(keys), capacity) - 1
    buckets = [hashmap_spread(k) & mask for k in keys]
    return len(set(buckets)) != len(buckets)


@pytest.mark.parametrize("capture", CAPTURES)
def test_every_frame_decodes_with_its_labels(capture: str) -> None:
    frames = _frames(capture)
    assert frames, f"no frames in {capture}"
    for f in frames:
        cmd = RemotingCommand.decode(f.frame)
        assert cmd.code == f.code, f.id
        assert cmd.opaque == f.opaque, f.id
        assert cmd.language.name == f.language, f.id
        assert cmd.serialize_type.name == f.serialize, f.id
        expected_kind = "response" if cmd.is_response else ("oneway" if cmd.is_oneway else "request")
        assert expected_kind == f.kind, f.id
        assert cmd.body == f.body, f.id


@pytest.mark.parametrize("capture", CAPTURES)
def test_java_frames_reencode_byte_for_byte(capture: str) -> None:
    java = [f for f in _frames(capture) if f.from_java]
    mismatched = []
    for f in java:
        cmd = RemotingCommand.decode(f.frame)
        if _rebuild(cmd, cmd.ext_fields.copy() if cmd.ext_fields is not None else None) != f.frame:
            mismatched.append(f.id)
        if cmd.encode() != f.frame:
            mismatched.append(f.id + "(direct)")
    assert not mismatched, f"{len(mismatched)} of {len(java)} Java frames differ: {mismatched[:10]}"


@pytest.mark.parametrize("capture", CAPTURES)
def test_fast_path_frames_carry_their_typed_header(capture: str) -> None:
    """In the ROCKETMQ captures the send/pull headers come back as typed headers, not as ext entries."""
    if not capture.endswith("rocketmq"):
        pytest.skip("the fast path exists only in the ROCKETMQ serialization")
    typed = collections.Counter()
    for f in _frames(capture):
        if f.serialize != "ROCKETMQ":
            continue
        cmd = RemotingCommand.decode(f.frame)
        if cmd.custom_header is not None:
            typed[type(cmd.custom_header).__name__] += 1
            # The merged view holds every header field, exactly as Java's decoded ext map would.
            for key, _value in cmd.custom_header.ext_items():
                assert key in cmd.fields(), (f.id, key)
            rebuilt = RemotingCommand(
                code=cmd.code,
                language=cmd.language,
                version=cmd.version,
                opaque=cmd.opaque,
                flag=cmd.flag,
                remark=cmd.remark,
                ext_fields=cmd.ext_fields,
                body=cmd.body,
                serialize_type=SerializeType.ROCKETMQ,
                custom_header=type(cmd.custom_header).from_ext(dict(cmd.custom_header.ext_items())),
            )
            assert rebuilt.encode() == f.frame, f.id
    # Both versions send V2 requests and pull requests on the fast path, and answer on it.
    for name in (
        "SendMessageRequestHeaderV2",
        "PullMessageRequestHeader",
        "PullMessageResponseHeader",
        "SendMessageResponseHeader",
    ):
        assert typed[name] > 0, f"no {name} recognised in {capture}: {dict(typed)}"


@pytest.mark.parametrize("capture", CAPTURES)
def test_sorted_ext_fields_give_the_same_bytes_when_the_key_set_fixes_the_order(capture: str) -> None:
    checked = 0
    for f in _frames(capture):
        if not f.from_java:
            continue
        cmd = RemotingCommand.decode(f.frame)
        ext = cmd.ext_fields
        if not ext:
            continue
        keys = list(ext)
        if _keys_collide(keys, ext.capacity):
            continue
        ordered = sorted(ext.items())
        # A plain dict means "Java's default table"; a 256-slot map (5.x addExtField) must say so.
        supplied = dict(ordered) if ext.capacity is None else ExtFields(ordered, capacity=ext.capacity)
        assert _rebuild(cmd, supplied) == f.frame, f.id
        checked += 1
    assert checked > 100


def test_ext_map_capacity_is_inferred_where_5x_used_256_slots() -> None:
    counts = collections.Counter()
    for f in load_golden():
        if not f.from_java:
            continue
        cmd = RemotingCommand.decode(f.frame)
        if cmd.ext_fields is not None and cmd.ext_fields.capacity == 256:
            counts[f.capture[:7]] += 1
    assert counts["java498"] == 0, "4.9.8 never creates 256-slot ext maps"
    assert counts["java533"] > 0


def test_cpp_frames_decode_with_numbers_stringified() -> None:
    cpp = [f for f in load_golden() if f.language == "CPP"]
    assert len(cpp) > 50
    saw_number = False
    for f in cpp:
        cmd = RemotingCommand.decode(f.frame)
        assert cmd.remark in (None, "") or isinstance(cmd.remark, str)
        for value in (cmd.ext_fields or {}).values():
            assert isinstance(value, str)
        raw_header = f.frame[8 : 8 + f.header_length]
        if b'"queueId":0' in raw_header:
            assert cmd.fields()["queueId"] == "0"
            saw_number = True
    assert saw_number


def test_empty_ext_map_and_absent_ext_map_stay_distinct() -> None:
    """4.9.8 responses say ``"extFields":{}``, 5.3.3 ones leave the key out: both come back as sent."""
    seen = set()
    for f in load_golden():
        if f.serialize != "JSON" or not f.from_java or f.kind != "response":
            continue
        cmd = RemotingCommand.decode(f.frame)
        header = f.frame[8 : 8 + f.header_length]
        if b'"extFields":{}' in header:
            assert cmd.ext_fields == {} and cmd.ext_fields is not None
            seen.add("empty")
        elif b'"extFields"' not in header:
            assert cmd.ext_fields is None
            seen.add("absent")
    assert seen == {"empty", "absent"}


def _typed_rebuild(cmd: RemotingCommand) -> tuple[str, bytes] | None:
    """Rebuild a request from its typed header plus the ext entries the header does not cover."""
    from rocketmq_wire.headers import header_for_request

    if cmd.custom_header is not None:  # binary fast path: already typed
        return type(cmd.custom_header).__name__, cmd.encode()
    header_cls = header_for_request(cmd.code)
    if header_cls is None or cmd.is_response:
        return None
    header = header_cls.from_ext(cmd.fields())
    covered = {k for k, _ in header.ext_items()}
    original = cmd.ext_fields if cmd.ext_fields is not None else ExtFields()
    rest: ExtFields | None = ExtFields(
        ((k, v) for k, v in original.items() if k not in covered), capacity=original.capacity
    )
    if cmd.ext_fields is None and not rest:
        rest = None  # the sender had no map at all (4.9.8 heartbeats carry no header object)
    rebuilt = RemotingCommand(
        code=cmd.code,
        language=cmd.language,
        version=cmd.version,
        opaque=cmd.opaque,
        flag=cmd.flag,
        remark=cmd.remark,
        ext_fields=rest,
        body=cmd.body,
        serialize_type=cmd.serialize_type,
        custom_header=header,
    )
    return header_cls.__name__, rebuilt.encode()


@pytest.mark.parametrize("capture", CAPTURES)
def test_java_requests_rebuilt_from_their_typed_header_give_the_captured_bytes(capture: str) -> None:
    rebuilt = collections.Counter()
    mismatched = []
    for f in _frames(capture):
        if not f.from_java or f.kind == "response":
            continue
        result = _typed_rebuild(RemotingCommand.decode(f.frame))
        if result is None:
            continue
        name, frame = result
        rebuilt[name] += 1
        if frame != f.frame:
            mismatched.append(f"{f.id}:{name}")
    assert sum(rebuilt.values()) > 100, dict(rebuilt)
    assert not mismatched, f"{len(mismatched)} of {sum(rebuilt.values())} differ: {mismatched[:12]}"
