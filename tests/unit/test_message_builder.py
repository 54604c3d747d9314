"""The producer's Message: property building in Java's order, validation, splitting a map back."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_wire.errors import CodecError
from rocketmq_wire.javahash import hashmap_order
from rocketmq_wire.message import Message, PropertiesFlavour, const, decode_properties, join_keys


def test_properties_in_java_insertion_order() -> None:
    message = Message("T", b"b", tags="TagA", keys=["k1", "k2"], properties={"color": "blue"}, delay_level=2)
    built = message.build_properties({const.UNIQ_KEY: "U"})
    assert list(built) == [const.TAGS, const.KEYS, const.WAIT, "color", const.DELAY, const.UNIQ_KEY]
    assert built[const.KEYS] == "k1 k2" and built[const.WAIT] == "true" and built[const.DELAY] == "2"


def test_encoded_properties_follow_the_hashmap_and_the_flavour() -> None:
    message = Message("T", tags="Delay", delay_level=2, wait_store_msg_ok=False)
    v4 = message.encode_properties(PropertiesFlavour.V4, [(const.UNIQ_KEY, "U")])
    v5 = message.encode_properties(PropertiesFlavour.V5, [(const.UNIQ_KEY, "U")])
    assert v5 == v4 + "\x02"
    names = list(decode_properties(v4))
    assert names == hashmap_order([const.TAGS, const.WAIT, const.DELAY, const.UNIQ_KEY])
    # WAIT and DELAY share a bucket: WAIT, inserted first, comes first, as in a Java producer's frame.
    assert names.index(const.WAIT) < names.index(const.DELAY)
    assert decode_properties(v4)[const.WAIT] == "false"


def test_no_tags_no_keys_still_writes_wait() -> None:
    assert Message("T").build_properties() == {const.WAIT: "true"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"properties": {const.TAGS: "x"}},
        {"properties": {"ok": " "}},
        {"keys": ["two words"]},
        {"keys": [""]},
        {"delay_level": -1},
    ],
)
def test_invalid_messages_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(CodecError):
        Message("T", **kwargs)  # type: ignore[arg-type]


def test_put_user_property_validates() -> None:
    message = Message("T")
    message.put_user_property("a", "1")
    with pytest.raises(CodecError, match="reserved"):
        message.put_user_property(const.UNIQ_KEY, "x")
    assert message.properties == {"a": "1"}


def test_join_keys() -> None:
    assert join_keys(["a", "b"]) == "a b" and join_keys([]) == ""


_user = st.dictionaries(
    st.text(st.sampled_from("abcxyz_"), min_size=1, max_size=6).filter(
        lambda n: n not in const.SYSTEM_PROPERTY_NAMES
    ),
    st.text(st.sampled_from("abc 1-é"), min_size=1, max_size=6).filter(lambda v: v.strip() != ""),
    max_size=4,
)


@given(
    tags=st.one_of(st.none(), st.text(st.sampled_from("TagAB"), min_size=1, max_size=5)),
    keys=st.lists(st.text(st.sampled_from("k123"), min_size=1, max_size=4), max_size=3),
    user=_user,
    delay=st.integers(0, 18),
    wait=st.booleans(),
    flavour=st.sampled_from(list(PropertiesFlavour)),
)
def test_from_properties_inverts_build(
    tags: str | None,
    keys: list[str],
    user: dict[str, str],
    delay: int,
    wait: bool,
    flavour: PropertiesFlavour,
) -> None:
    message = Message("T", b"body", tags, keys, user, delay, wait, 7)
    extra = {const.UNIQ_KEY: "U", const.TRAN_MSG: "true"}
    text = message.encode_properties(flavour, extra)
    rebuilt, system = Message.from_properties("T", b"body", text, 7)
    assert rebuilt == message
    assert system == extra
    assert rebuilt.encode_properties(flavour, system) == text


def test_from_properties_sets_aside_what_a_user_property_cannot_be() -> None:
    message, other = Message.from_properties("T", b"", {"CLUSTER": "c", "user": "v", "blank": "  "})
    assert message.properties == {"user": "v"}
    assert other == {"CLUSTER": "c", "blank": "  "}


def test_to_batch_entry_carries_flag_body_and_properties() -> None:
    entry = Message("T", b"payload", tags="B", flag=3).to_batch_entry(
        PropertiesFlavour.V5, {const.UNIQ_KEY: "U"}
    )
    assert (entry.body, entry.flag) == (b"payload", 3)
    assert entry.properties == {const.TAGS: "B", const.WAIT: "true", const.UNIQ_KEY: "U"}


def test_string_keys_and_body_are_taken_whole() -> None:
    from rocketmq_wire.message import Message as _Message

    msg = _Message("T", "héllo", keys="order-1 order-2")  # type: ignore[arg-type]
    assert msg.keys == ["order-1", "order-2"]
    assert msg.body == "héllo".encode()
    assert msg.build_properties()["KEYS"] == "order-1 order-2"
