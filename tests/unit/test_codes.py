"""Codes and version numbers: open enums, Java's aliases, and what the captured Apache frames carry."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.codes import LanguageCode, MQVersion, RequestCode, ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from tests.golden import load_golden

_JAVA_CONSTANT = re.compile(r"[A-Z][A-Z0-9_]*")


@pytest.mark.parametrize("enum_type", [RequestCode, ResponseCode, LanguageCode, SerializeType])
@given(value=st.integers(min_value=-(1 << 31), max_value=(1 << 31) - 1))
def test_unknown_values_are_kept_not_rejected(
    enum_type: type[RequestCode | ResponseCode | LanguageCode | SerializeType], value: int
) -> None:
    member = enum_type(value)
    assert int(member) == value
    known = value in {int(m) for m in enum_type}
    assert member.name.startswith("UNKNOWN_") != known
    if not known:
        assert member.name == f"UNKNOWN_{value}"


@pytest.mark.parametrize("enum_type", [RequestCode, LanguageCode, SerializeType])
def test_every_value_has_exactly_one_name(enum_type: type[RequestCode | LanguageCode]) -> None:
    # Enum turns a repeated value into a silent alias; only ResponseCode may have those (see below).
    assert len(enum_type.__members__) == len(enum_type)


def test_response_code_aliases_are_the_documented_reuses() -> None:
    aliases = {name: member.name for name, member in ResponseCode.__members__.items() if name != member.name}
    assert aliases == {
        "FLUSH_DISK_FAILED": "INVALID_PARAMETER",
        "UPDATE_AND_CREATE_ACL_CONFIG_FAILED": "POLLING_FULL",
        "DELETE_ACL_CONFIG_FAILED": "POLLING_TIMEOUT",
        "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED": "BROKER_NOT_EXIST",
    }
    assert ResponseCode(209) is ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED


@pytest.mark.parametrize("enum_type", [RequestCode, ResponseCode, LanguageCode])
def test_names_are_java_constant_names(enum_type: type[RequestCode]) -> None:
    bad = [name for name in enum_type.__members__ if not _JAVA_CONSTANT.fullmatch(name)]
    assert bad == []


def test_codes_compare_and_render_as_plain_ints() -> None:
    # Handlers and wire code use the members as ints; str() must not turn them into names.
    code: int = RequestCode.SEND_MESSAGE_V2
    assert code == 310
    assert str(RequestCode.PULL_MESSAGE) == "11"
    assert f"{ResponseCode.TOPIC_NOT_EXIST}" == "17"
    by_code: dict[int, str] = {RequestCode.HEART_BEAT: "x"}
    assert by_code[34] == "x"


def test_every_code_in_the_captured_frames_is_named() -> None:
    unnamed: set[tuple[str, int]] = set()
    for frame in load_golden():
        enum_type = ResponseCode if frame.kind == "response" else RequestCode
        if enum_type(frame.code).name.startswith("UNKNOWN_"):
            unnamed.add((frame.kind, frame.code))
    assert unnamed == set()


def test_languages_in_the_captured_frames_match_their_codes() -> None:
    seen: set[str] = set()
    for frame in load_golden():
        cmd = RemotingCommand.decode(frame.frame)
        assert cmd.language.name == frame.language
        seen.add(frame.language)
        if frame.serialize == "ROCKETMQ":
            # The binary header carries the byte: code(2) then language(1).
            assert frame.frame[10] == LanguageCode[frame.language]
        else:
            header = json.loads(frame.frame[8 : 8 + frame.header_length])
            assert header["language"] == frame.language
    assert seen == {"JAVA", "CPP"}


# -- MQVersion ---------------------------------------------------------------------------------------------


def test_version_constants_match_what_java_peers_send() -> None:
    versions: dict[str, set[int]] = {}
    for frame in load_golden():
        if frame.from_java:
            versions.setdefault(frame.capture[:7], set()).add(RemotingCommand.decode(frame.frame).version)
    assert versions == {"java498": {MQVersion.V4_9_8}, "java533": {MQVersion.V5_3_3}}
    assert (MQVersion.V4_9_8, MQVersion.V5_3_3) == (409, 479)
    assert MQVersion.name_of(409) == "V4_9_8"
    assert MQVersion.name_of(479) == "V5_3_3"


def test_version_table_shape() -> None:
    names = MQVersion.NAMES
    assert len(set(names)) == len(names)
    assert names[0] == "V3_0_0_SNAPSHOT"
    assert names[-1] == "HIGHER_VERSION"
    # Past the irregular 3.0.0 betas, every release directly follows its own snapshot.
    start = names.index("V3_0_0_FINAL") + 1
    for i in range(start, len(names) - 1, 2):
        assert names[i] == f"{names[i + 1]}_SNAPSHOT"
    assert names.index("V4_0_0") == names.index("V3_9_9") + 2


@given(value=st.integers(min_value=0, max_value=MQVersion.HIGHER_VERSION))
def test_version_name_round_trip(value: int) -> None:
    assert MQVersion.value_of(MQVersion.name_of(value)) == value


@given(value=st.integers(min_value=MQVersion.HIGHER_VERSION, max_value=(1 << 31) - 1))
def test_versions_past_the_table_read_as_higher_version(value: int) -> None:
    assert MQVersion.name_of(value) == "HIGHER_VERSION"


def test_bad_versions_raise_codec_error() -> None:
    with pytest.raises(CodecError, match="negative"):
        MQVersion.name_of(-1)
    with pytest.raises(CodecError, match="V9_9_9"):
        MQVersion.value_of("V9_9_9")
