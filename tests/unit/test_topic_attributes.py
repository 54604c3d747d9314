"""Topic attribute modifications (5.x): read as Apache's AttributeParser reads them, written in the order its
HashMap gives them; and the admin and ``rmq`` refusing them on a broker that would drop them."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from admin import Admin, AdminError
from cli.local_cluster import LocalCluster, LocalClusterSettings
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javahash import hashmap_order
from rocketmq_wire.topic_attributes import format_modification, modification, parse_modification


def test_a_modification_reads_as_javas_parser_reads_it() -> None:
    assert parse_modification("+message.type=FIFO,-reserve.time,+queue.type=SimpleCQ") == {
        "+message.type": "FIFO",
        "-reserve.time": "",
        "+queue.type": "SimpleCQ",
    }
    assert parse_modification("") == {}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("message.type=FIFO", r"\+name=value"),
        ("reserve.time", "-name"),
        ("+a=1,+a=2", "twice"),
        ("+a=", "one value"),
        ("+a=b=c", "one value"),
    ],
)
def test_a_modification_apache_would_refuse_is_refused(text: str, match: str) -> None:
    with pytest.raises(CodecError, match=match):
        parse_modification(text)


def test_the_header_text_follows_javas_hashmap_order() -> None:
    mods = modification({"message.type": "FIFO", "queue.type": "SimpleCQ", "cleanup.policy": "DELETE"})
    text = format_modification(mods)
    order = hashmap_order(mods)
    assert text == ",".join(f"{key}={mods[key]}" for key in order)
    assert set(text.split(",")) == {"+message.type=FIFO", "+queue.type=SimpleCQ", "+cleanup.policy=DELETE"}
    assert format_modification(modification({}, ["reserve.time"])) == "-reserve.time"
    assert parse_modification(text) == mods


@pytest.mark.parametrize(
    ("attributes", "remove"),
    [({"message.type": ""}, []), ({"a,b": "1"}, []), ({"+x": "1"}, []), ({"x": "1"}, ["x"])],
)
def test_names_and_values_that_would_split_the_text_are_refused(
    attributes: dict[str, str], remove: list[str]
) -> None:
    with pytest.raises(CodecError):
        modification(attributes, remove)


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as cluster:
        yield cluster


async def test_the_projects_broker_keeps_attributes_and_refuses_as_apache(local: LocalCluster) -> None:
    """Topic attributes on the project's broker: stored, read back, changed and refused with Apache's
    remarks (``AttributeUtil``), and kept across a reread of the topic's config."""
    async with Admin(local.namesrv_address) as admin:
        broker = local.broker_address
        await admin.create_topic("FifoTopic", broker_addr=broker, attributes={"message.type": "FIFO"})
        assert (await admin.topic_config("FifoTopic", broker)).attributes == {"message.type": "FIFO"}
        await admin.create_topic("FifoTopic", broker_addr=broker, attributes={"message.type": "NORMAL"})
        assert (await admin.topic_config("FifoTopic", broker)).attributes == {"message.type": "NORMAL"}
        refusals = [
            ({"queue.type": "BatchCQ"}, "attempt to update an unchangeable attribute. key: queue.type"),
            ({"message.type": "MIXED"}, "MIXED message type is not supported."),
            ({"colour": "red"}, "unsupported key: colour"),
            ({"reserve.time": "-2"}, f"value is not in range(-1, {2**63 - 1})"),
        ]
        for attributes, remark in refusals:
            with pytest.raises(AdminError, match=re.escape(remark)):
                await admin.create_topic("FifoTopic", broker_addr=broker, attributes=attributes)
        with pytest.raises(AdminError, match=re.escape("value is not in set: [")):
            await admin.create_topic("Odd", broker_addr=broker, attributes={"message.type": "ODD"})
        with pytest.raises(AdminError, match=re.escape("attempt to delete a nonexistent key: reserve.time")):
            await admin.create_topic("FifoTopic", broker_addr=broker, remove_attributes=["reserve.time"])
        await admin.create_topic("FifoTopic", broker_addr=broker, remove_attributes=["message.type"])
        config = await admin.topic_config("FifoTopic", broker)
        await admin.create_topic("PlainTopic", broker_addr=broker, read_queue_nums=3)
        plain = await admin.topic_config("PlainTopic", broker)
    assert config.attributes == {}
    assert (plain.topic_name, plain.read_queue_nums, plain.attributes) == ("PlainTopic", 3, {})


def test_rmq_reads_attribute_options_as_mqadmin_does() -> None:
    import typer

    from cli.topic_cmd import parse_attributes

    assert parse_attributes(["+message.type=FIFO", "+queue.type=SimpleCQ,-reserve.time"]) == {
        "+message.type": "FIFO",
        "+queue.type": "SimpleCQ",
        "-reserve.time": "",
    }
    assert parse_attributes(None) == {}
    with pytest.raises(typer.BadParameter, match="given twice"):
        parse_attributes(["+message.type=FIFO", "-message.type"])
    with pytest.raises(typer.BadParameter, match=r"\+name=value"):
        parse_attributes(["message.type=FIFO"])
