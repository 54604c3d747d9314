"""The struct fast paths describe the same bytes as the construct declarations."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire import LanguageCode, RemotingCommand, SerializeType
from rocketmq_wire.layouts import FRAME, ROCKETMQ_HEADER

_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)


@given(
    code=st.integers(-(2**15), 2**15 - 1),
    version=st.integers(-(2**15), 2**15 - 1),
    opaque=st.integers(-(2**31), 2**31 - 1),
    flag=st.integers(-(2**31), 2**31 - 1),
    remark=_text,
    ext=st.dictionaries(_text, _text, max_size=6),
    body=st.binary(max_size=32),
)
def test_binary_frame_matches_the_declaration(
    code: int, version: int, opaque: int, flag: int, remark: str, ext: dict[str, str], body: bytes
) -> None:
    cmd = RemotingCommand(
        code=code,
        version=version,
        opaque=opaque,
        flag=flag,
        remark=remark,
        ext_fields=ext,
        body=body,
        language=LanguageCode.GO,
        serialize_type=SerializeType.ROCKETMQ,
    )
    frame = cmd.encode()
    parsed = FRAME.parse(frame)
    assert parsed.header_word >> 24 == SerializeType.ROCKETMQ
    assert parsed.body == body
    header = ROCKETMQ_HEADER.parse(parsed.header)
    assert (header.code, header.language, header.version, header.opaque, header.flag) == (
        code,
        LanguageCode.GO,
        version,
        opaque,
        flag,
    )
    assert header.remark == remark
    assert {e.key: e.value for e in header.ext} == ext
    # And the other way round: what construct builds, the fast decoder reads.
    rebuilt = ROCKETMQ_HEADER.build(header)
    assert rebuilt == parsed.header
