"""The C accelerator (``rocketmq_wire._speedups``) against the pure-Python reference it must reproduce.

Three layers: the main round-trip checks run on both paths (the ``impl`` fixture); differential tests run
the same input through both and demand the same result, or the same exception type and message, on golden,
mutated and generated input; and the codec's own test files are run once more, in a subprocess, on the path
this process is not using. Plus build hygiene (warning-free C) and a leak check.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.util
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import sys
import sysconfig
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rocketmq_wire import (
    CodecError,
    ExtFields,
    LanguageCode,
    RemotingCommand,
    SerializeType,
    accel,
    header_binary,
    header_json,
    javahash,
)
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.fastjson import dump_str
from rocketmq_wire.headers import ALL_HEADERS, SendMessageRequestHeaderV2
from rocketmq_wire.headers.base import CommandHeader, jint, jstr
from rocketmq_wire.javatext import java_utf8
from rocketmq_wire.message.batch import BatchEntry, decode_batch
from rocketmq_wire.message.properties import PropertiesFlavour, decode_properties, encode_properties
from rocketmq_wire.message.stored import MessageExt, encode_stored_message
from tests.golden import load_golden
from tests.installed_package import needs_work_tree

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "rocketmq_wire" / "_speedups.c"
#: Examples of the slowest differential properties (whole generated commands, damaged JSON layouts): each
#: run draws new ones, so over the suite's runs they add up; 600 keeps one run near 15 s instead of 40 s.
DIFFERENTIAL_EXAMPLES = 600

needs_c = pytest.mark.skipif(
    not accel.ACCELERATED, reason="the C accelerator is not built or is switched off"
)


def _built() -> bool:
    return importlib.util.find_spec("rocketmq_wire._speedups") is not None


@pytest.fixture(params=["python", "c"])
def impl(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs the test on the pure-Python reference and on the C accelerator."""
    if request.param == "c":
        if not accel.ACCELERATED:
            pytest.skip("the C accelerator is not built or is switched off")
        yield "c"
    else:
        with accel.pure_python():
            yield "python"


Outcome = tuple[str, Any]


def _outcome(fn: Callable[[], Any]) -> Outcome:
    try:
        return ("ok", fn())
    except Exception as exc:  # the exact exception is what is compared
        return ("error", (type(exc), str(exc)))


def _both(fn: Callable[[], Any], snapshot: Callable[[Any], Any] = lambda value: value) -> tuple[Any, Any]:
    """fn's outcome with the C accelerator and with the reference, values passed through ``snapshot``."""

    def run() -> Outcome:
        kind, value = _outcome(fn)
        return (kind, snapshot(value)) if kind == "ok" else (kind, value)

    fast = run()
    with accel.pure_python():
        reference = run()
    return fast, reference


def _ext_snapshot(ext: ExtFields | None) -> object:
    if ext is None:
        return None
    return (type(ext), list(ext.items()), ext.capacity)


def _language_snapshot(language: LanguageCode) -> object:
    return (type(language), int(language), language.name)


def _command_snapshot(cmd: RemotingCommand) -> object:
    header = cmd.custom_header
    return (
        type(cmd),
        cmd.code,
        _language_snapshot(cmd.language),
        cmd.version,
        cmd.opaque,
        cmd.flag,
        cmd.remark,
        _ext_snapshot(cmd.ext_fields),
        (type(header), header),
        cmd.body,
        (type(cmd.serialize_type), cmd.serialize_type),
    )


def _fields_snapshot(fields: Any) -> object:
    return (
        type(fields),
        fields.code,
        _language_snapshot(fields.language),
        fields.version,
        fields.opaque,
        fields.flag,
        fields.remark,
        _ext_snapshot(fields.ext_fields),
        (type(fields.fast_header), fields.fast_header),
    )


# -- the accelerator module ------------------------------------------------------------------------------


def test_accel_reports_the_active_path() -> None:
    assert accel.ACCELERATED is (accel.speedups is not None)
    if os.environ.get("RMQ_NO_SPEEDUPS", "") not in ("", "0"):
        assert not accel.ACCELERATED


def test_environment_switch_forces_pure_python() -> None:
    code = "from rocketmq_wire import accel, command; print(accel.ACCELERATED, command._c is None)"
    env = {**os.environ, "RMQ_NO_SPEEDUPS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_pure_python_switches_every_wired_module_and_restores_them() -> None:

    modules = [importlib.import_module(name) for name in accel.WIRED_MODULES]
    before = [module._c for module in modules]
    with accel.pure_python():
        assert all(module._c is None for module in modules)
    assert [module._c for module in modules] == before


@needs_c
@needs_work_tree("rocketmq_wire/_speedups.c")
def test_c_source_compiles_without_warnings(tmp_path: Path) -> None:
    gcc = shutil.which("gcc")
    include = sysconfig.get_paths()["include"]
    if gcc is None or not (Path(include) / "Python.h").is_file():
        pytest.skip("gcc or the Python headers are not available")
    flags = ["-O2", "-Wall", "-Wextra", "-Werror", "-fPIC", "-c", f"-I{include}"]
    result = subprocess.run(
        [gcc, *flags, str(SOURCE), "-o", str(tmp_path / "speedups.o")], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr


def test_codec_tests_pass_on_the_other_path() -> None:
    """The codec's own test files, run on whichever path this process is not using."""
    if not _built():
        pytest.skip("the C accelerator is not built: only the pure-Python path exists")
    env = {**os.environ, "RMQ_NO_SPEEDUPS": "0" if not accel.ACCELERATED else "1"}
    files = [
        "tests/unit/test_golden_frames.py",
        "tests/unit/test_headers_golden.py",
        "tests/unit/test_headers.py",
        "tests/unit/test_pop_headers.py",
        "tests/unit/test_command.py",
        "tests/unit/test_codec_fuzz.py",
        "tests/unit/test_javahash.py",
        "tests/unit/test_framing.py",
        "tests/unit/test_message_batch.py",
    ]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", *files],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]


# -- golden frames on both paths -------------------------------------------------------------------------


def test_golden_frames_round_trip(impl: str) -> None:
    for f in load_golden():
        cmd = RemotingCommand.decode(f.frame)
        assert cmd.code == f.code and cmd.opaque == f.opaque, f.id
        assert cmd.language.name == f.language and cmd.serialize_type.name == f.serialize, f.id
        assert cmd.body == f.body, f.id
        again = RemotingCommand.decode(cmd.encode())
        assert again.fields() == cmd.fields(), f.id
        if f.from_java:
            assert cmd.encode() == f.frame, f.id


@needs_c
def test_golden_frames_decode_and_encode_alike_on_both_paths() -> None:
    for f in load_golden():
        fast, reference = _both(functools.partial(RemotingCommand.decode, f.frame), _command_snapshot)
        assert fast == reference, f.id
        with accel.pure_python():
            cmd = RemotingCommand.decode(f.frame)
        fast_frame, reference_frame = _both(cmd.encode)
        assert fast_frame == reference_frame, f.id
        fast_header, reference_header = _both(cmd.encode_header)
        assert fast_header == reference_header, f.id


@needs_c
def test_golden_headers_decode_alike_through_the_header_functions() -> None:
    for f in load_golden():
        data = f.frame[8 : 8 + f.header_length]
        decode = (
            header_json.decode_json_header if f.serialize == "JSON" else header_binary.decode_binary_header
        )
        fast, reference = _both(functools.partial(decode, data), _fields_snapshot)
        assert fast == reference, f.id


def _mutate(frame: bytes, rng: random.Random) -> bytes:
    """Random byte damage; mostly with the length prefix made to fit, so the header readers see it."""
    data = bytearray(frame)
    for _ in range(rng.randint(1, 6)):
        choice = rng.random()
        pos = rng.randrange(len(data) + 1)
        if choice < 0.5 and pos < len(data):
            data[pos] = rng.randrange(256)
        elif choice < 0.7:
            del data[pos : pos + rng.randint(1, 8)]
        else:
            data[pos:pos] = rng.randbytes(rng.randint(1, 8))
    if rng.random() < 0.8 and len(data) >= 4:
        data[0:4] = (len(data) - 4).to_bytes(4, "big")
    return bytes(data)


@needs_c
@settings(max_examples=1500, deadline=None)
@given(st.integers(0, 2**63))
def test_mutated_frames_give_the_same_result_or_the_same_error(seed: int) -> None:
    frames = load_golden()
    rng = random.Random(seed)
    frame = _mutate(frames[rng.randrange(len(frames))].frame, rng)
    fast, reference = _both(lambda: RemotingCommand.decode(frame), _command_snapshot)
    assert fast == reference
    if fast[0] == "error":
        assert issubclass(fast[1][0], CodecError), fast
        return
    with accel.pure_python():
        cmd = RemotingCommand.decode(frame)
    fast_frame, reference_frame = _both(cmd.encode)
    assert fast_frame == reference_frame


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**63))
def test_mutated_header_regions_alike(seed: int) -> None:
    """The header readers on their own, with damage anywhere in the header bytes."""
    frames = load_golden()
    rng = random.Random(seed)
    f = frames[rng.randrange(len(frames))]
    data = bytearray(f.frame[8 : 8 + f.header_length])
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    if rng.random() < 0.3:
        data = data[: rng.randrange(len(data) + 1)]
    decode = header_json.decode_json_header if f.serialize == "JSON" else header_binary.decode_binary_header
    fast, reference = _both(lambda: decode(bytes(data)), _fields_snapshot)
    assert fast == reference


# -- JSON headers: the fast reader and writer ------------------------------------------------------------

#: Characters the JSON writers treat specially (escapes, the C1 range, separators, surrogates), made common.
_SPECIAL = st.sampled_from(
    [
        *map(chr, range(0x20)),
        '"',
        "\\",
        "/",
        "\x7f",
        "\x80",
        "\x9f",
        "\xa0",
        "\u2028",
        "\u2029",
        "\ud800",
        "\U0001f600",
    ]
)
_ANY_TEXT = st.text(st.characters() | _SPECIAL, max_size=24)  # lone surrogates too: written as Java does
_WIRE_TEXT = st.text(  # what can travel: no lone surrogates
    st.characters(exclude_categories=["Cs"]) | _SPECIAL.filter(lambda c: c != "\ud800"), max_size=24
)


def _java_json(ext: dict[str, str] | None, remark: str | None, language: str = "JAVA") -> bytes:
    """A header laid out as Java writes it (the fastjson writer of the reference)."""
    parts = ['"code":310']
    if ext is not None:
        parts.append(
            '"extFields":{' + ",".join(dump_str(k) + ":" + dump_str(v) for k, v in ext.items()) + "}"
        )
    parts += ['"flag":0', f'"language":{dump_str(language)}', '"opaque":7']
    if remark is not None:
        parts.append(f'"remark":{dump_str(remark)}')
    parts += ['"serializeTypeCurrentRPC":"JSON"', '"version":409']
    return ("{" + ",".join(parts) + "}").encode("utf-8", "surrogatepass")


@needs_c
@settings(max_examples=400, deadline=None)
@given(st.none() | st.dictionaries(_ANY_TEXT, _ANY_TEXT, max_size=6), st.none() | _ANY_TEXT)
def test_json_reader_agrees_on_java_layout(ext: dict[str, str] | None, remark: str | None) -> None:
    data = _java_json(ext, remark)
    fast, reference = _both(lambda: header_json.decode_json_header(data), _fields_snapshot)
    assert fast == reference


_JSON_PIECES = [
    b" ",
    b"\n",
    b'"',
    b"\\",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"\\uD83D\\uDE00",
    b"\\u00e9",
    b"\\/",
    b"\\x",
    b"\xed\xa0\x80",
    b"\xc3\xa9",
    b"\xc3",
    b"\xff",
    b"\x01",
    b"\x7f",
    b"0",
    b"-",
    b"1.5",
    b"1e3",
    b"99999999999",
    b"-2147483648",
    b"2147483648",
    b"null",
    b"true",
    b"{",
    b"}",
    b"[1]",
    b",",
    b":",
    b'"extFields":{}',
    b'"language":"CPP"',
    b'"language":"NOPE"',
    b'"remark":null',
    b'"remark":5',
]


@needs_c
@settings(max_examples=DIFFERENTIAL_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(_WIRE_TEXT, _WIRE_TEXT, max_size=4),
    st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_JSON_PIECES), st.booleans()), max_size=4),
)
def test_json_reader_agrees_on_damaged_java_layout(
    ext: dict[str, str], edits: list[tuple[int, bytes, bool]]
) -> None:
    data = bytearray(_java_json(ext, "r"))
    for where, piece, replace in edits:
        pos = where % (len(data) + 1)
        data[pos : pos + (len(piece) if replace else 0)] = piece
    fast, reference = _both(lambda: header_json.decode_json_header(bytes(data)), _fields_snapshot)
    assert fast == reference


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40), st.integers(-(2**33), 2**33))
def test_json_reader_agrees_on_numbers(code: int, opaque: int, version: int) -> None:
    data = (
        f'{{"code":{code},"flag":0,"language":"JAVA","opaque":{opaque},'
        f'"serializeTypeCurrentRPC":"JSON","version":{version}}}'
    ).encode()
    fast, reference = _both(lambda: header_json.decode_json_header(data), _fields_snapshot)
    assert fast == reference


@needs_c
@settings(max_examples=500, deadline=None)
@given(_ANY_TEXT, _ANY_TEXT, st.none() | _ANY_TEXT)
def test_json_writer_escapes_as_fastjson(key: str, value: str, remark: str | None) -> None:
    fast, reference = _both(
        lambda: header_json.encode_json_header(1, LanguageCode.JAVA, 409, 1, 0, remark, [(key, value)])
    )
    assert fast == reference
    if fast[0] == "ok":
        assert fast[1] == _java_json_with(key, value, remark)


def _java_json_with(key: str, value: str, remark: str | None) -> bytes:
    text = '{"code":1,"extFields":{' + dump_str(key) + ":" + dump_str(value) + '},"flag":0,"language":"JAVA"'
    text += ',"opaque":1' + (f',"remark":{dump_str(remark)}' if remark is not None else "")
    return java_utf8(text + ',"serializeTypeCurrentRPC":"JSON","version":409}')


def test_json_writer_escapes_the_special_ranges(impl: str) -> None:
    special = "".join(
        chr(c) for c in [*range(0x20), 0x22, 0x5C, 0x2F, *range(0x7F, 0xA1), 0x2028, 0x2029, 0x1F600]
    )
    data = header_json.encode_json_header(1, LanguageCode.JAVA, 409, 1, 0, None, [("k", special)])
    assert dump_str(special).encode() in data
    assert b"\\u001F" in data and b"\\u007F" in data and b"\\u009F" in data and b"\\u2028" in data
    assert "\u00a0".encode() in data and "\U0001f600".encode() in data and b"/" in data


def test_json_writer_escapes_del_in_ascii_text(impl: str) -> None:
    """DEL is the one ASCII character fastjson escapes that the stdlib encoder leaves raw."""
    assert (
        header_json.encode_json_header(1, LanguageCode.JAVA, 1, 1, 0, "a\x7fb", None).count(b"a\\u007Fb") == 1
    )
    cmd = RemotingCommand(code=1, ext_fields={"k": "\x7f"})
    assert b'"k":"\\u007F"' in cmd.encode()


def test_json_writer_writes_lone_surrogates_as_java_getbytes(impl: str) -> None:
    """fastjson leaves a lone surrogate as it is and ``getBytes(UTF_8)`` writes ``?`` for it; two halves
    that meet are one character."""
    data = header_json.encode_json_header(1, LanguageCode.JAVA, 409, 1, 0, "a\ud800b", None)
    assert b'"remark":"a?b"' in data
    cmd = RemotingCommand(code=1, ext_fields={"k": "x\udfff", "\ud800": "\ud83d\ude00\ud800\ud83d\ude00"})
    frame = cmd.encode()
    assert b'"k":"x?"' in frame and '"?":"\U0001f600?\U0001f600"'.encode() in frame


def test_json_reader_unescapes_every_form(impl: str) -> None:
    text = (
        b'{"code":1,"extFields":{"k\\u00e9":"\\"\\\\\\/\\b\\f\\n\\r\\t\\u00E9\\uD83D\\uDE00\\ud800x\\udc00",'
        b'"raw":"\xc3\xa9\xf0\x9f\x98\x80\xed\xa0\x80"},"flag":0,"language":"JAVA","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":1}'
    )
    fields = header_json.decode_json_header(text)
    assert fields.ext_fields == {
        "k\u00e9": '"\\/\b\f\n\r\t\u00e9\U0001f600\ud800x\udc00',
        "raw": "\u00e9\U0001f600\ud800",
    }


def test_header_entries_and_ext_entries_merge_by_equal_keys(impl: str) -> None:
    """An ext key equal to a header field's wire name, but another str object, replaces its value in place."""
    from rocketmq_wire.headers import GetRouteInfoRequestHeader

    topic = "".join(["to", "pic"])  # equal to the header's "topic", not the same (interned) object
    for serialize in SerializeType.JSON, SerializeType.ROCKETMQ:
        cmd = RemotingCommand(
            code=RequestCode.GET_ROUTEINFO_BY_TOPIC,
            custom_header=GetRouteInfoRequestHeader(topic="A"),
            ext_fields={topic: "B", "".join(["z", "z"]): "C"},
            serialize_type=serialize,
        )
        frame = cmd.encode()
        assert frame.count(b"topic") == 1 and b"B" in frame and b"A" not in frame[8:]
        assert RemotingCommand.decode(frame).fields() == {"topic": "B", "zz": "C"}


def test_cpp_style_headers_are_read_by_the_reference(impl: str) -> None:
    text = (
        b'{"code":11,"extFields":{"queueId":3,"topic":"T"},"flag":0,"language":"CPP",'
        b'"opaque":5,"remark":"","version":0}\n'
    )
    fields = header_json.decode_json_header(text)
    assert fields.ext_fields == {"queueId": "3", "topic": "T"}
    assert fields.language is LanguageCode.CPP and fields.remark == ""


# -- binary headers --------------------------------------------------------------------------------------


def _entry(key: bytes, value: bytes) -> bytes:
    return struct.pack(">h", len(key)) + key + struct.pack(">i", len(value)) + value


def _binary_header(entries: bytes, remark: bytes = b"", flag: int = 0, code: int = 310) -> bytes:
    return (
        struct.pack(">hbhiii", code, 0, 409, 1, flag, len(remark))
        + remark
        + struct.pack(">i", len(entries))
        + entries
    )


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (b"\x00" * 20, "shorter than the fixed part"),
        (struct.pack(">hbhiii", 1, 0, 1, 1, 0, 50) + b"\x00" * 4, "remark length 50 runs past"),
        (struct.pack(">hbhiii", 1, 0, 1, 1, 0, -1) + b"\x00" * 4, "remark length -1 runs past"),
        (
            struct.pack(">hbhiii", 1, 0, 1, 1, 0, 1) + b"\xff" + b"\x00" * 4,
            "remark is not valid UTF-8: invalid start byte",
        ),
        (_binary_header(b"")[:-4] + struct.pack(">i", 9), "ext map length 9 runs past"),
        (_binary_header(b"")[:-4] + struct.pack(">i", -3), "ext map length -3 runs past"),
        (_binary_header(b"\x00\x01a\x00"), "ext map ends inside an entry header at offset 21"),
        (_binary_header(struct.pack(">h", -2) + b"\x00" * 6), "ext key length -2 at offset 21 runs past"),
        (
            _binary_header(struct.pack(">h", 9) + b"ab\x00\x00\x00\x00"),
            "ext key length 9 at offset 21 runs past",
        ),
        (
            _binary_header(b"\x00\x01k" + struct.pack(">i", 5) + b"v"),
            "ext value length 5 for key 'k' runs past",
        ),
        (
            _binary_header(_entry(b"\xc3", b"v")),
            "ext entry near offset 23 is not valid UTF-8: unexpected end of data",
        ),
        (
            _binary_header(_entry(b"k", b"\xe0\x80")),
            "ext entry near offset 28 is not valid UTF-8: invalid continuation",
        ),
        (_binary_header(_entry(b"k", b"\xed\xa0\x80")), "ext entry near offset 28 is not valid UTF-8"),
    ],
)
def test_binary_reader_refuses_malformed_headers_with_the_reference_message(
    impl: str, header: bytes, message: str
) -> None:
    with pytest.raises(CodecError, match=message):
        header_binary.decode_binary_header(header)
    frame = struct.pack(">II", 4 + len(header), (1 << 24) | len(header)) + header
    with pytest.raises(CodecError, match=message):
        RemotingCommand.decode(frame)


@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (b"\x00\x00\x00", "frame of 3 bytes is shorter than the 8-byte minimum"),
        (struct.pack(">II", 9, 0), "length prefix says 9 bytes follow, but the frame holds 4"),
        (struct.pack(">II", 4, 5), "header length 5 runs past the frame of 8 bytes"),
        (struct.pack(">II", 4, 2 << 24), "unknown serialize type 2 in the header length word"),
        (struct.pack(">II", 4, 0), "JSON header does not parse"),
    ],
)
def test_frame_prefix_errors_carry_the_reference_message(impl: str, frame: bytes, message: str) -> None:
    with pytest.raises(CodecError, match=message):
        RemotingCommand.decode(frame)


@needs_c
@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=80), st.integers(0, 80), st.integers(0, 80))
def test_decode_entries_alike_on_random_bytes(data: bytes, start: int, end: int) -> None:
    fast, reference = _both(lambda: header_binary.decode_entries(data, start, end))
    assert fast == reference


@needs_c
@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_ANY_TEXT, _ANY_TEXT), max_size=6))
def test_encode_entries_alike(entries: list[tuple[str, str]]) -> None:
    fast, reference = _both(lambda: header_binary.encode_entries(entries))
    assert fast == reference
    assert _both(lambda: header_binary.encode_entries(iter(entries))) == (fast, reference)


def test_binary_writer_range_errors(impl: str) -> None:
    cases = [
        (dict(code=40000), "code 40000 does not fit the binary header (-32768..32767)"),
        (dict(version=-40000), "version -40000 does not fit"),
        (dict(opaque=1 << 31), "opaque 2147483648 does not fit"),
        (dict(flag=-(1 << 31) - 1), "flag -2147483649 does not fit"),
        (dict(code=1 << 70), "code 1180591620717411303424 does not fit"),
    ]
    for attrs, message in cases:
        cmd = RemotingCommand(serialize_type=SerializeType.ROCKETMQ)
        for name, value in attrs.items():
            setattr(cmd, name, value)
        with pytest.raises(CodecError, match=re.escape(message)):
            cmd.encode()
    cmd = RemotingCommand(serialize_type=SerializeType.ROCKETMQ, language=LanguageCode(200))
    with pytest.raises(CodecError, match="language 200 does not fit in a byte"):
        cmd.encode()
    cmd = RemotingCommand(serialize_type=SerializeType.ROCKETMQ, ext_fields={"k" * 40000: "v"})
    with pytest.raises(CodecError, match="ext key of 40000 bytes is too long for the binary header"):
        cmd.encode()
    cmd = RemotingCommand(serialize_type=SerializeType.ROCKETMQ, remark="\ud800")
    assert b"\x00\x00\x00\x01?" in cmd.encode()  # not a range error: Java writes a lone surrogate as "?"


# -- generated commands ----------------------------------------------------------------------------------


@dataclasses.dataclass(slots=True, kw_only=True)
class _CustomRendering(CommandHeader):
    """A header that renders itself: the C encoder must leave it to the reference."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = ()
    name: str | None = jstr("name")
    count: int | None = jint("count")

    def ext_items(self) -> list[tuple[str, str]]:
        return [("custom", "yes"), *CommandHeader.ext_items(self)]


_HEADER_CLASSES = [*ALL_HEADERS, _CustomRendering]


@st.composite
def _header_values(draw: st.DrawFn, cls: type[CommandHeader]) -> CommandHeader:
    values: dict[str, object] = {}
    for f in cls.java_fields():
        choice = draw(st.integers(0, 9))
        if choice == 0:
            values[f.attr] = None
        elif f.kind is str:
            values[f.attr] = draw(_WIRE_TEXT if choice < 8 else st.integers(-5, 5))  # wrong types render too
        elif f.kind is int:
            values[f.attr] = draw(st.integers(-(2**70), 2**70) if choice < 8 else st.booleans())
        elif f.kind is bool:
            values[f.attr] = draw(st.booleans() if choice < 8 else st.floats(allow_nan=True))
    return cls(**values)


@st.composite
def _commands(draw: st.DrawFn) -> RemotingCommand:
    serialize = draw(st.sampled_from([SerializeType.JSON, SerializeType.ROCKETMQ]))
    header = None
    if draw(st.booleans()):
        header = draw(_header_values(draw(st.sampled_from(_HEADER_CLASSES))))
    ext: ExtFields | None = None
    if draw(st.booleans()):
        keys = st.sampled_from(["a", "b", "topic", "queueId", "bname", "Aa", "BB", "k"]) | _WIRE_TEXT
        ext = ExtFields(
            draw(st.dictionaries(keys, _WIRE_TEXT, max_size=8)),
            capacity=draw(st.sampled_from([None, 256, 0, 1, 3, 1 << 40, -5])),
        )
    small = st.integers(-(2**15), 2**15 - 1)
    cmd = RemotingCommand(
        code=draw(small | st.integers(-(2**40), 2**40)),
        language=LanguageCode(draw(st.sampled_from([0, 1, 3, 9, 12, 127, 99, 300]))),
        version=draw(small),
        opaque=draw(st.integers(-(2**31), 2**31 - 1) | st.integers(-(2**40), 2**40)),
        flag=draw(st.integers(0, 3) | st.integers(-(2**31), 2**31 - 1)),
        remark=draw(st.none() | _WIRE_TEXT),
        ext_fields=ext,
        body=draw(st.binary(max_size=40)),
        serialize_type=serialize,
        custom_header=header,
    )
    return cmd


@needs_c
@settings(max_examples=DIFFERENTIAL_EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_commands())
def test_generated_commands_encode_and_decode_alike(cmd: RemotingCommand) -> None:
    fast, reference = _both(cmd.encode)
    assert fast == reference
    fast_header, reference_header = _both(cmd.encode_header)
    assert fast_header == reference_header
    if fast[0] != "ok":
        return
    frame = fast[1]
    decoded_fast, decoded_reference = _both(lambda: RemotingCommand.decode(frame), _command_snapshot)
    assert decoded_fast == decoded_reference  # JSON writes numbers it cannot read back: refused alike


def test_fast_path_header_round_trip(impl: str) -> None:
    header = SendMessageRequestHeaderV2(
        producer_group="G",
        topic="T",
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=0,
        born_timestamp=1 << 62,
        flag=0,
        properties="KEYS\x01k\x02",
        unit_mode=True,
        batch=False,
        namespace="ns",
    )
    cmd = RemotingCommand(
        code=RequestCode.SEND_MESSAGE_V2,
        custom_header=header,
        ext_fields={"extra": "1"},
        serialize_type=SerializeType.ROCKETMQ,
    )
    again = RemotingCommand.decode(cmd.encode())
    # ns is not a fast-path field: Java's binary fast path drops it, and so does the codec
    assert again.custom_header == dataclasses.replace(header, namespace=None)
    assert again.fields() == {k: v for k, v in cmd.fields().items() if k != "ns"}
    assert again.encode() == cmd.encode()


# -- typed headers ---------------------------------------------------------------------------------------

#: Numbers, booleans and the near misses that int(), str.isdigit() or str.lower() treat specially.
_EXT_TEXT = st.sampled_from(
    "|0|7|-3|+4|007|true|TRUE|tRuE|false|x|١٢|1.5|99999999999999999999999".split("|")
    + "1:2|:|/|1/| 1|1 |1_000|٣|0x1f|truE |trüe|urue".split("|")
)


@needs_c
@settings(max_examples=800, deadline=None)
@given(st.sampled_from(_HEADER_CLASSES), st.data())
def test_from_ext_and_render_alike(cls: type[CommandHeader], data: st.DataObject) -> None:
    names = [f.java for f in cls.java_fields()]
    ext = data.draw(
        st.dictionaries(st.sampled_from([*names, "other"]), _EXT_TEXT | _WIRE_TEXT, max_size=len(names) + 1)
    )
    fast, reference = _both(lambda: cls.from_ext(ext), lambda h: (type(h), h))
    assert fast == reference
    header = data.draw(_header_values(cls))
    fast_items, reference_items = _both(header.ext_items)
    assert fast_items == reference_items
    fast_items, reference_items = _both(header.fast_items)
    assert fast_items == reference_items


def test_from_ext_reports_missing_required_fields(impl: str) -> None:
    with pytest.raises(CodecError, match=r"SendMessageRequestHeaderV2: the custom field <a> is null"):
        SendMessageRequestHeaderV2.from_ext({"b": "T"})
    with pytest.raises(CodecError, match="is not a decimal integer"):
        SendMessageRequestHeaderV2.from_ext({c: "x" for c in "abcdefgh"})


def test_numbers_with_thousands_of_digits_are_codec_errors(impl: str) -> None:
    """int() refuses them (sys.set_int_max_str_digits); a header field says so as a CodecError."""
    fields = {"a": "G", "b": "T", "c": "D", "d": "4", "e": "1", "f": "0", "g": "9" * 5000, "h": "0"}
    with pytest.raises(CodecError, match="header field 'g': a number of 5000 digits is too long"):
        SendMessageRequestHeaderV2.from_ext(fields)
    with pytest.raises(CodecError, match="a number of 5000 digits is too long"):
        SendMessageRequestHeaderV2.from_ext({**fields, "g": "-" + "9" * 5000})
    ext = header_binary.encode_entries(list(fields.items()))
    header = (
        struct.pack(">hbhiii", RequestCode.SEND_MESSAGE_V2, 0, 409, 1, 0, 0)
        + struct.pack(">i", len(ext))
        + ext
    )
    frame = struct.pack(">II", 4 + len(header), (1 << 24) | len(header)) + header
    cmd = RemotingCommand.decode(frame)  # the fast path refuses the prefix: the entries stay in the ext map
    assert cmd.custom_header is None and cmd.fields() == fields
    with pytest.raises(CodecError, match="digits is too long"):
        cmd.read_header(SendMessageRequestHeaderV2)


# -- Java hashing ----------------------------------------------------------------------------------------


@needs_c
@settings(max_examples=500, deadline=None)
@given(st.text(max_size=20))
def test_string_hash_alike(text: str) -> None:
    assert accel.speedups is not None
    assert accel.speedups.java_string_hash(text) == javahash._java_string_hash(text)


@needs_c
@settings(max_examples=500, deadline=None)
@given(
    st.dictionaries(st.text(max_size=6), st.text(max_size=3), max_size=40),
    st.sampled_from([None, 0, 1, 2, 3, 16, 200, 256, 1 << 29, 1 << 31, 1 << 80, -1, True]),
)
def test_java_order_and_capacity_alike(items: dict[str, str], capacity: int | None) -> None:
    ext = ExtFields(items, capacity=capacity)
    fast, reference = _both(ext.items_java_order)
    assert fast == reference
    keys = [k for k, _ in fast[1]]
    sources: list[Callable[[], Iterable[str]]] = [
        lambda: keys,
        lambda: tuple(keys),
        lambda: dict.fromkeys(keys),
        lambda: iter(keys),  # a fresh iterator for each path
    ]
    for source in sources:
        fast_capacity, reference_capacity = _both(functools.partial(_infer_capacity_of, source))
        assert fast_capacity == reference_capacity


def _infer_capacity_of(source: Callable[[], Iterable[str]]) -> int | None:
    return javahash.infer_capacity(source())


def test_declined_inputs_take_the_reference(impl: str) -> None:
    ext = ExtFields({"a": "1"})
    ext["n"] = 5  # type: ignore[assignment]  # not a str: C declines, the reference decides
    cmd = RemotingCommand(code=1, ext_fields=ext)
    assert b'"n":5' in cmd.encode()
    assert javahash.infer_capacity(["a", "b"]) is None
    cmd = RemotingCommand(code=RequestCode.HEART_BEAT, custom_header=_CustomRendering(name="n", count=2))
    assert RemotingCommand.decode(cmd.encode()).fields() == {"custom": "yes", "name": "n", "count": "2"}


# -- stored messages -------------------------------------------------------------------------------------

_HOSTS = st.one_of(
    st.builds(
        "{}.{}.{}.{}:{}".format,
        *[st.integers(0, 255)] * 4,
        st.integers(0, 70_000),
    ),
    st.sampled_from(
        [
            "127.0.0.1:10911",
            "01.2.3.4:5",
            "1.2.3.4:010911",
            " 1.2.3.4:5",
            "1.2.3:4",
            "::1:10911",
            "[fd00::2]:10911",
            "::ffff:10.0.0.1:80",
            "1.2.3.4:",
            "1.2.3.4:\u0661",
            "host:1",
        ]
    ),
)
_INT32 = st.one_of(st.integers(-(2**31), 2**31 - 1), st.sampled_from([2**31, -(2**31) - 1]))
_INT64 = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([2**63, True]))


@needs_c
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    topic=st.one_of(st.text(min_size=1, max_size=4), st.sampled_from(["T" * 127, "T" * 128, "\u00e9" * 100])),
    body=st.binary(max_size=64),
    properties=st.one_of(st.text(max_size=12), st.just("x" * 40_000), st.just("\ud800")),
    ints32=st.tuples(_INT32, _INT32, st.one_of(_INT32, st.sampled_from([16, 32, 48])), _INT32),
    ints64=st.tuples(_INT64, _INT64, _INT64, _INT64, _INT64),
    born_host=_HOSTS,
    store_host=_HOSTS,
)
def test_stored_records_alike(
    topic: str,
    body: bytes,
    properties: str,
    ints32: tuple[int, int, int, int],
    ints64: tuple[int, int, int, int, int],
    born_host: str,
    store_host: str,
) -> None:
    """The C record writer gives the reference's bytes, or declines so that the reference raises."""
    flag, queue_id, sys_flag, reconsume_times = ints32
    queue_offset, commit_log_offset, born_timestamp, store_timestamp, prepared = ints64
    message = MessageExt(
        topic=topic,
        body=body,
        flag=flag,
        properties_string=properties,
        queue_id=queue_id,
        queue_offset=queue_offset,
        commit_log_offset=commit_log_offset,
        sys_flag=sys_flag,
        born_timestamp=born_timestamp,
        born_host=born_host,
        store_timestamp=store_timestamp,
        store_host=store_host,
        reconsume_times=reconsume_times,
        prepared_transaction_offset=prepared,
    )
    fast, reference = _both(lambda: encode_stored_message(message))
    assert fast == reference


@needs_c
def test_stored_record_writer_takes_the_common_message_and_declines_the_rest() -> None:
    assert accel.speedups is not None
    message = MessageExt(
        topic="TopicA",
        body=b"payload",
        properties_string="TAGS\x01a\x02UNIQ_KEY\x01b\x02",
        born_host="10.0.0.7:51234",
        store_host="10.0.0.1:10911",
        queue_offset=7,
        commit_log_offset=1 << 33,
    )
    record = accel.speedups.encode_stored(message)
    with accel.pure_python():
        assert record == encode_stored_message(message)
    for unusual in (
        dataclasses.replace(message, store_host="[fd00::1]:10911"),
        dataclasses.replace(message, topic="T" * 128),
        dataclasses.replace(message, queue_id=1 << 31),
        dataclasses.replace(message, body=bytearray(b"x")),  # type: ignore[arg-type]
    ):
        assert accel.speedups.encode_stored(unusual) is None


# -- message properties ------------------------------------------------------------------------------------

# Names and values drawn around the separators, so every rule of the reference is exercised.
_PROPERTY_TEXT = st.text(
    alphabet=st.sampled_from(["a", "B", "\x01", "\x02", "\u00e9", "\U0001f600"]), max_size=5
)


@needs_c
@settings(max_examples=500, deadline=None)
@given(
    pairs=st.lists(st.tuples(_PROPERTY_TEXT, st.one_of(st.none(), _PROPERTY_TEXT)), max_size=5),
    as_dict=st.booleans(),
    flavour=st.sampled_from(list(PropertiesFlavour)),
)
def test_properties_encode_alike(
    pairs: list[tuple[str, str | None]], as_dict: bool, flavour: PropertiesFlavour
) -> None:
    """The C writer gives the reference's string, or declines so that the reference raises its error."""
    source: dict[str, str | None] | list[tuple[str, str | None]] = dict(pairs) if as_dict else pairs
    fast, reference = _both(lambda: encode_properties(source, flavour))
    assert fast == reference


@needs_c
@settings(max_examples=500, deadline=None)
@given(
    text=st.one_of(_PROPERTY_TEXT, st.text(alphabet=st.sampled_from(["k", "v", "\x01", "\x02", "\u00e9"])))
)
def test_properties_decode_alike(text: str) -> None:
    fast, reference = _both(lambda: decode_properties(text), lambda d: list(d.items()))
    assert fast == reference


@needs_c
def test_properties_c_functions_take_the_usual_strings_and_decline_the_rest() -> None:
    c = accel.speedups
    assert c is not None
    usual = {"UNIQ_KEY": "7F00000100002A9F", "TAGS": "TagA", "KEYS": "k1 k2", "\u00e9t\u00e9": "\U0001f600"}
    text = c.encode_properties(usual, False)
    assert (
        text == "UNIQ_KEY\x017F00000100002A9F\x02TAGS\x01TagA\x02KEYS\x01k1 k2\x02\u00e9t\u00e9\x01\U0001f600"
    )
    assert c.encode_properties(list(usual.items()), True) == text + "\x02"
    assert c.decode_properties(text) == usual and c.decode_properties(text + "\x02") == usual
    assert c.decode_properties("A\x011\x02B\x012\x02A\x013") == {
        "A": "3",
        "B": "2",
    }  # first place, last value
    for declined in ({"": "v"}, {"a\x01": "v"}, {"a": "v\x02"}, {"a": 1}, [("a", "b", "c")], ("a", "b")):
        assert c.encode_properties(declined, True) is None  # type: ignore[arg-type]
    for skipped in ("A\x01", "\x01v", "A", "A\x011\x02\x02", "\x02"):
        assert c.decode_properties(skipped) is None


# -- batch bodies ------------------------------------------------------------------------------------------

_BATCH_ENTRY = st.builds(
    BatchEntry,
    st.binary(max_size=40),
    st.text(alphabet=st.sampled_from(["a", "\x01", "\x02", "\u00e9", "\U0001f600"]), max_size=8),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**31), 2**31 - 1),
    st.integers(-(2**31), 2**31 - 1),
)


def _encoded_entry(entry: BatchEntry) -> bytes:
    properties = entry.properties_string.encode()
    total = 20 + len(entry.body) + 2 + len(properties)
    head = struct.pack(">iiiii", total, entry.magic, entry.body_crc, entry.flag, len(entry.body))
    return head + entry.body + struct.pack(">H", len(properties)) + properties


@needs_c
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_BATCH_ENTRY, max_size=5), st.data())
def test_batch_bodies_decode_alike_whole_cut_and_damaged(
    entries: list[BatchEntry], data: st.DataObject
) -> None:
    body = b"".join(_encoded_entry(entry) for entry in entries)
    fast, reference = _both(lambda: decode_batch(body))
    assert fast == reference == ("ok", entries)
    if body:
        cut = data.draw(st.integers(0, len(body) - 1))
        flip = data.draw(st.integers(0, len(body) - 1))
        damaged = bytearray(body)
        damaged[flip] ^= data.draw(st.integers(1, 255))
        for variant in (body[:cut], bytes(damaged), body + b"\x00" * data.draw(st.integers(1, 25))):
            assert _both(lambda variant=variant: decode_batch(variant)) == _both(
                lambda variant=variant: decode_batch(bytearray(variant))
            )
            fast, reference = _both(lambda variant=variant: decode_batch(variant))
            assert fast == reference


@needs_c
def test_batch_c_function_takes_well_formed_bodies_and_declines_the_rest() -> None:
    c = accel.speedups
    assert c is not None
    entries = [
        BatchEntry(b"one", "UNIQ_KEY\x01A\x02WAIT\x01true", 0),
        BatchEntry(b"", "\u00e9t\u00e9\x01v", 3, 1, 2),
    ]
    body = b"".join(_encoded_entry(entry) for entry in entries)
    assert c.decode_batch(BatchEntry, body) == entries
    assert c.decode_batch(BatchEntry, b"") == []
    not_utf8 = body[:-1] + b"\xff"
    for declined in (body[:-1], body + b"\x00", not_utf8, bytearray(body)):
        assert c.decode_batch(BatchEntry, declined) is None  # type: ignore[arg-type]
    with pytest.raises(CodecError, match="not valid UTF-8"):
        decode_batch(not_utf8)  # the reference says why


# -- the store's file map --------------------------------------------------------------------------------


@needs_c
def test_file_map_writes_into_the_file_and_refuses_what_falls_outside(tmp_path: Path) -> None:
    c = accel.speedups
    file_map_type = getattr(c, "FileMap", None)
    if file_map_type is None:
        pytest.skip("this build of the accelerator has no FileMap (not a POSIX system)")
    fd = os.open(tmp_path / "f", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.ftruncate(fd, 8192)
        before = len(os.listdir("/proc/self/fd")) if Path("/proc/self/fd").is_dir() else None
        file_map = file_map_type(fd, 8192)
        if before is not None:
            assert len(os.listdir("/proc/self/fd")) == before  # no descriptor of its own
        file_map.write(8187, memoryview(b"tail!"))
        file_map.write(0, b"head")
        assert os.pread(fd, 4, 0) == b"head" and os.pread(fd, 5, 8187) == b"tail!"
        for offset, data in ((8188, b"tail!"), (-1, b"x"), (8192, b"x")):
            with pytest.raises(ValueError, match="outside a file map of 8192 bytes"):
                file_map.write(offset, data)
        with pytest.raises(TypeError):
            file_map.write(0, "text")
        assert not file_map.closed
        file_map.close()
        file_map.close()  # twice is fine
        assert file_map.closed
        with pytest.raises(ValueError, match="closed"):
            file_map.write(0, b"x")
        with pytest.raises(ValueError, match="positive size"):
            file_map_type(fd, 0)
    finally:
        os.close(fd)
    with pytest.raises(OSError):
        file_map_type(fd, 8192)  # closed descriptor


# -- leaks -----------------------------------------------------------------------------------------------


def _rss_kib() -> int:
    statm = Path("/proc/self/statm")
    if not statm.is_file():
        pytest.skip("no /proc/self/statm to read the resident set size from")
    return int(statm.read_text().split()[1]) * (resource.getpagesize() // 1024)


@needs_c
def test_no_memory_grows_over_many_calls(tmp_path: Path) -> None:
    """Round trips, refused frames and refused encodes, repeated: a leaked object per call would show."""
    map_path = tmp_path / "mapped"
    good = [f.frame for f in load_golden() if f.from_java][:40]
    binary = _binary_header(_entry(b"k", b"\xff"))
    bad = [
        struct.pack(">II", 6, 2) + b"{x",
        struct.pack(">II", 4 + len(binary), (1 << 24) | len(binary)) + binary,
    ]
    too_big = RemotingCommand(code=1 << 20, serialize_type=SerializeType.ROCKETMQ)
    stored = MessageExt(topic="T", body=b"x" * 100, properties_string="TAGS\x01a", born_host="1.2.3.4:5")
    declined = dataclasses.replace(stored, store_host="[::1]:5")

    def work(rounds: int) -> None:
        for _ in range(rounds):
            for frame in good:
                RemotingCommand.decode(frame).encode()
            for frame in bad:
                with pytest.raises(CodecError):
                    RemotingCommand.decode(frame)
            with pytest.raises(CodecError):
                too_big.encode()
            encode_stored_message(stored)
            encode_stored_message(declined)
            decode_properties(encode_properties({"TAGS": "a", "KEYS": "b c", "\u00e9": "\U0001f600"}))
            decode_properties("A\x01")  # declined by C
            c = accel.speedups
            assert c is not None
            index_map = bytearray(40 + 4 * 4 + 8 * 20)
            assert c.index_put(index_map, 4, 56, 7, 1, 0, 0, [("T#a", 1, 2), ("T#b", 3, 4)]) is not None
            assert c.index_put(index_map, 4, 56, 7, 1, 0, 0, [("T#a", 2**63, 2)]) is None  # declined
            assert (
                c.index_put(bytearray(8), 4, 56, 7, 1, 0, 0, [("T#a", 1, 2)]) is None
            )  # too small: declined
            with pytest.raises(CodecError):
                encode_properties({"a": "b\x02"})  # declined by C, refused by the reference

            file_map = c.FileMap(map_fd, 8192)  # type: ignore[attr-defined]
            file_map.write(4096, b"x" * 100)  # a page touched: it counts while mapped
            with pytest.raises(ValueError):
                file_map.write(8190, b"xyz")
            if rounds % 2:
                file_map.close()  # else dropped unclosed: the map goes with the object

    map_fd = os.open(map_path, os.O_RDWR | os.O_CREAT, 0o600)
    os.ftruncate(map_fd, 8192)
    try:
        work(201)  # warm caches and allocator pools
        before = _rss_kib()
        work(2000)  # about 90k frames
    finally:
        os.close(map_fd)
    grown = _rss_kib() - before
    assert grown < 4096, f"resident set grew by {grown} KiB"


def test_malformed_json_is_worded_by_json_loads(impl: str) -> None:
    with pytest.raises(CodecError, match="does not parse: Expecting property name"):
        header_json.decode_json_header(b'{"code":1,')
