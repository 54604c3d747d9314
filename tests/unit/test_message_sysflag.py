"""Message and pull sysFlag bits, with the values Java assigns them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.message import sysflag


def test_message_bits_are_javas() -> None:
    assert [sysflag.COMPRESSED, sysflag.MULTI_TAGS, sysflag.BORNHOST_V6, sysflag.STOREHOSTADDRESS_V6] == [
        1,
        2,
        16,
        32,
    ]
    assert [sysflag.NEED_UNWRAP, sysflag.INNER_BATCH] == [64, 128]
    assert [t.value for t in sysflag.TransactionType] == [0, 4, 8, 12]
    assert sysflag.COMPRESSION_TYPE_MASK == 0x700


@given(st.integers(0, 2**31 - 1), st.sampled_from(list(sysflag.TransactionType)))
def test_transaction_type_replacement_touches_only_its_bits(flag: int, kind: sysflag.TransactionType) -> None:
    changed = sysflag.with_transaction_type(flag, kind)
    assert sysflag.transaction_type(changed) is kind
    assert changed & ~sysflag.TRANSACTION_MASK == flag & ~sysflag.TRANSACTION_MASK


@given(st.integers(0, 2**31 - 1), st.integers(0, 7))
def test_compression_bits(flag: int, codec: int) -> None:
    changed = sysflag.with_compression_bits(flag, codec)
    assert sysflag.compression_bits(changed) == codec
    assert changed & ~sysflag.COMPRESSION_TYPE_MASK == flag & ~sysflag.COMPRESSION_TYPE_MASK
    assert sysflag.is_compressed(flag | 1) and not sysflag.is_compressed(sysflag.without_compressed(flag))


@pytest.mark.parametrize(
    ("flag", "lengths"),
    [(0, (8, 8)), (sysflag.BORNHOST_V6, (20, 8)), (sysflag.STOREHOSTADDRESS_V6, (8, 20)), (0x30, (20, 20))],
)
def test_host_lengths(flag: int, lengths: tuple[int, int]) -> None:
    assert sysflag.host_lengths(flag) == lengths


def test_pull_flags_as_java_builds_them() -> None:
    # What a push consumer sends: commit offset, suspend, subscription.
    flag = sysflag.build_pull_sys_flag(commit_offset=True, suspend=True, subscription=True)
    assert flag == 0b111
    assert sysflag.has_commit_offset(flag) and sysflag.has_suspend(flag) and sysflag.has_subscription(flag)
    assert not sysflag.has_class_filter(flag) and not sysflag.has_lite_pull(flag)
    assert sysflag.build_pull_sys_flag(class_filter=True, lite_pull=True) == 0b11000
    assert sysflag.without_commit_offset(flag) == 0b110
    assert sysflag.without_suspend(flag) == 0b101
    assert sysflag.with_subscription(0) == 0b100
