"""The lite-topic admin (``admin.lite``, ``rmq lite``): how the brokers' lag answers add up, and the refusals
that come before anything is sent (a broker older than 5.5.0, the ROCKETMQ serialization), against the
project's NameServer and Broker in-process, which are not 5.5 brokers.

It also renders the ``rmq lite`` tables. The requests and answers themselves are held to Apache's 5.5.0
mqadmin and broker by ``tests/integration/test_lite_admin.py``.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table
from typer.testing import CliRunner

from admin import Admin, AdminError, BrokerAnswer, BrokerVersionError
from admin.lite import sum_group_lag
from cli.lite_render import (
    broker_lite_detail,
    broker_lite_table,
    lite_client_table,
    lite_group_tables,
    lite_topic_table,
    parent_topic_table,
)
from cli.local_cluster import LocalCluster, LocalClusterSettings
from cli.main import app
from rocketmq_wire.bodies import (
    ClientGroup,
    GetBrokerLiteInfoResponseBody,
    GetLiteClientInfoResponseBody,
    GetLiteGroupInfoResponseBody,
    GetLiteTopicInfoResponseBody,
    GetParentTopicInfoResponseBody,
    LiteLagInfo,
    OffsetWrapper,
    TopicOffset,
)
from rocketmq_wire.codes import SerializeType


def _lag(topic: str, count: int, oldest: int) -> LiteLagInfo:
    return LiteLagInfo(lite_topic=topic, lag_count=count, earliest_unconsumed_timestamp=oldest)


def test_the_brokers_lag_adds_up_as_mqadmin_adds_it() -> None:
    a = GetLiteGroupInfoResponseBody(
        total_lag_count=5,
        earliest_unconsumed_timestamp=2_000,
        lag_count_top_k=[_lag("x", 4, 2_000), _lag("y", 1, 9_000)],
        lag_timestamp_top_k=[_lag("x", 4, 2_000)],
    )
    b = GetLiteGroupInfoResponseBody(
        total_lag_count=-1,  # a broker's "nothing there"
        earliest_unconsumed_timestamp=-1,
        lag_count_top_k=[_lag("z", 7, 1_000)],
        lag_timestamp_top_k=[_lag("z", 7, 1_000)],
    )
    answers = [
        BrokerAnswer("broker-a", "a:10911", answer=a),
        BrokerAnswer("broker-b", "b:10911", answer=b),
        BrokerAnswer("broker-c", "c:10911", error="refused"),
    ]
    lag = sum_group_lag("G", "P", None, answers)
    assert (lag.total_lag_count, lag.earliest_unconsumed_timestamp) == (5, 2_000)
    assert [x.lite_topic for x in lag.lag_count_top_k] == ["z", "x", "y"]
    assert [x.lite_topic for x in lag.lag_timestamp_top_k] == ["z", "x"]
    assert lag.brokers == tuple(answers) and lag.lite_topic is None
    nothing = sum_group_lag("G", "P", "", [BrokerAnswer("broker-a", "a:10911", answer=b)])
    assert (nothing.total_lag_count, nothing.earliest_unconsumed_timestamp) == (0, None)


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as cluster:
        yield cluster


async def test_a_broker_older_than_5_5_is_refused_before_anything_is_sent(local: LocalCluster) -> None:
    async with Admin(local.namesrv_address) as admin:
        [broker] = await admin.brokers()
        with pytest.raises(BrokerVersionError, match="needs a V5_5_0 or later broker"):
            await admin.broker_lite_info(broker.addr)
        with pytest.raises(BrokerVersionError, match="V5_5_0"):
            await admin.cluster_lite_info(broker.cluster)
        await admin.create_topic("LiteParent", cluster=broker.cluster)

        async def routed() -> bool:
            try:
                await admin.topic_route("LiteParent")
            except AdminError:
                return False
            return True

        await local.wait_for_route(routed)
        with pytest.raises(BrokerVersionError, match="V5_5_0"):
            await admin.lite_topic_info("LiteParent", "l")
        with pytest.raises(BrokerVersionError, match="V5_5_0"):
            await admin.trigger_lite_dispatch("LiteParent", "G")
        with pytest.raises(AdminError, match="max_count must be positive"):
            await admin.lite_client_info("LiteParent", "G", "c", max_count=0)
    async with Admin(local.namesrv_address, serialize_type=SerializeType.ROCKETMQ) as binary:
        with pytest.raises(AdminError, match="need the JSON serialization"):
            await binary.broker_lite_info(broker.addr)

    runner = CliRunner()
    env = {"NAMESRV_ADDR": local.namesrv_address}
    for command in (["lite", "broker-info", "-b", broker.addr], ["getBrokerLiteInfo", "-b", broker.addr]):
        result = await asyncio.to_thread(runner.invoke, app, command, env=env)
        assert result.exit_code == 1, result.output
        [line] = result.output.strip().splitlines()
        assert "V5_5_0" in line, line
    both = await asyncio.to_thread(runner.invoke, app, ["lite", "broker-info"], env=env)
    assert both.exit_code != 0 and "--cluster or --broker" in both.output


def _text(*tables: Table) -> str:
    console = Console(width=240, record=True, file=io.StringIO())
    for table in tables:
        console.print(table)
    return console.export_text()


def test_lite_tables_show_each_broker_or_its_error() -> None:
    """What ``rmq lite`` prints: a row per broker; one that refused shows its error in place of figures."""
    refused = "lite info refused by b:10911 (code 3 REQUEST_CODE_NOT_SUPPORTED)"
    info = GetBrokerLiteInfoResponseBody(store_type="default", max_lmq_num=20000, topic_meta={"P": -1})
    text = _text(
        broker_lite_table(
            [BrokerAnswer("a", "a:10911", answer=info), BrokerAnswer("b", "b:10911", error=refused)]
        )
    )
    assert "a:10911" in text and "20000" in text and f"error: {refused}" in text
    assert broker_lite_detail(BrokerAnswer("a", "a:10911", answer=info))[0] == 'a:10911 topic meta: {"P": -1}'
    parent = GetParentTopicInfoResponseBody(topic="P", ttl=-1, groups=["G"], lmq_num=2, lite_topic_count=1)
    assert "G" in _text(parent_topic_table("P", [BrokerAnswer("broker-a", "a:1", answer=parent)]))
    topic = GetLiteTopicInfoResponseBody(
        subscriber=[ClientGroup("c", "G")], topic_offset=TopicOffset(max_offset=3), sharding_to_broker=True
    )
    assert "yes" in _text(lite_topic_table("t", [BrokerAnswer("broker-a", "a:1", answer=topic)]))
    client = GetLiteClientInfoResponseBody(lite_topic_count=-1, last_access_time=-1)
    assert "-" in _text(lite_client_table("c", [BrokerAnswer("broker-a", "a:1", answer=client)]))
    one = GetLiteGroupInfoResponseBody(
        lite_topic_offset_wrapper=OffsetWrapper(broker_offset=5, consumer_offset=2), total_lag_count=3
    )
    lag = sum_group_lag("G", "P", "l", [BrokerAnswer("broker-a", "a:1", answer=one)])
    assert "broker-a" in _text(*lite_group_tables(lag))
    top = sum_group_lag("G", "P", None, [BrokerAnswer("broker-a", "a:1", error=refused)])
    assert refused in _text(*lite_group_tables(top))
