"""Topic attribute modifications (5.x): read as Apache's AttributeParser reads them, written in the order its
HashMap gives them; and the admin and ``rmq`` refusing them on a broker that would drop them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from admin import Admin, BrokerVersionError, TopicNotFoundError
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


async def test_attributes_on_a_broker_without_them_are_refused_and_nothing_is_created(
    local: LocalCluster,
) -> None:
    """The project's broker (like 4.x) has no topic attributes: the topic must not appear without them."""
    async with Admin(local.namesrv_address) as admin:
        with pytest.raises(
            BrokerVersionError, match=r"setting topic attributes needs a V5_0_0 or later broker.*V4_9_8"
        ):
            await admin.create_topic(
                "FifoTopic", broker_addr=local.broker_address, attributes={"message.type": "FIFO"}
            )
        with pytest.raises(TopicNotFoundError):
            await admin.topic_config("FifoTopic", local.broker_address)
        await admin.create_topic("PlainTopic", broker_addr=local.broker_address, read_queue_nums=3)
        config = await admin.topic_config("PlainTopic", local.broker_address)
    assert (config.topic_name, config.read_queue_nums) == ("PlainTopic", 3)


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
