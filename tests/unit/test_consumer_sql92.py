"""SQL92 subscriptions: CHECK_CLIENT_CONFIG's body, the ``subscribe(..., sql=...)`` API, and the check both
consumers make at start -- against the in-test broker (which accepts or refuses as told) and the project's
own broker (which does not know the request)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from consumer import ConsumerConfig, ConsumeStatus, PullConsumer, PushConsumer, commands, filters
from consumer.errors import BrokerError, FilterRefusedError
from consumer.testing import local_cluster
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketmq_wire.bodies import decode_request_body
from rocketmq_wire.bodies.consumer import CheckClientRequestBody
from rocketmq_wire.bodies.heartbeat import SubscriptionData
from rocketmq_wire.bodies.route import BrokerData, TopicRouteData
from rocketmq_wire.message import MessageExt
from tests.unit.consumer_fakes import BROKER_NAME, FakeCluster

_instances = itertools.count()
SQL = "a > 5 AND region = 'eu'"
#: Apache's answer when ``enablePropertyFilter`` is off (``ClientManageProcessor.checkClientConfig``).
APACHE_REMARK = "The broker does not support consumer to filter message by SQL92"


def config(**settings: Any) -> ConsumerConfig:
    return ConsumerConfig(
        client_ip="127.0.0.1", instance_name=f"sql-{next(_instances)}", await_termination_ms=500, **settings
    )


@pytest.fixture
async def cluster() -> AsyncIterator[FakeCluster]:
    async with FakeCluster() as fake:
        yield fake


# -- the body ------------------------------------------------------------------------------------------------


def _sql_data(topic: str = "T", sql: str = SQL, version: int = 1_700_000_000_123) -> SubscriptionData:
    data = filters.sql_subscription(topic, sql)
    data.sub_version = version
    return data


@pytest.mark.parametrize("serialize", list(SerializeType))
def test_check_client_request_is_body_only_and_registered(serialize: SerializeType) -> None:
    request = commands.check_client_request("G", "c", _sql_data())
    assert request.code == RequestCode.CHECK_CLIENT_CONFIG == 46
    assert not request.ext_fields
    request.serialize_type = serialize
    again = RemotingCommand.decode(request.encode())
    decoded = decode_request_body(again.code, again.body, again.fields())
    assert decoded == CheckClientRequestBody(client_id="c", group="G", subscription_data=_sql_data())


# -- the API -------------------------------------------------------------------------------------------------


def test_subscription_args_take_a_tag_expression_or_sql_never_both() -> None:
    assert filters.subscription_args("T", None, None) == ("*", "TAG")
    assert filters.subscription_args("T", "A || B", None) == ("A || B", "TAG")
    assert filters.subscription_args("T", None, SQL) == (SQL, "SQL92")
    with pytest.raises(ValueError, match="not both"):
        filters.subscription_args("T", "A", SQL)
    with pytest.raises(ValueError, match="not both"):
        filters.subscription_args("T", "*", SQL)
    for blank in ("", "   "):
        with pytest.raises(ValueError, match="empty"):
            filters.subscription_args("T", None, blank)


def test_a_sql_subscription_keeps_the_expression_and_names_no_tags() -> None:
    data = filters.sql_subscription("T", SQL)
    assert (data.topic, data.sub_string, data.expression_type) == ("T", SQL, "SQL92")
    assert (data.tags_set, data.code_set, data.class_filter_mode) == ([], [], False)
    assert filters.needs_check(data)
    assert not filters.needs_check(SubscriptionData(topic="T", sub_string="*"))


@pytest.mark.parametrize("kind", [PushConsumer, PullConsumer])
def test_both_consumers_take_sql_and_still_take_tags_as_before(kind: type[Any]) -> None:
    consumer = kind("G", "127.0.0.1:9876", namespace="ns")
    consumer.subscribe("Tags", "A || B")
    consumer.subscribe("All")
    consumer.subscribe("Sql", sql=SQL)
    table = consumer._core.subscriptions
    assert table.get("ns%Tags").tags_set == ["A", "B"]
    assert table.get("ns%All").sub_string == "*"
    sql = table.get("ns%Sql")
    assert (sql.sub_string, sql.expression_type, sql.tags_set) == (SQL, "SQL92", [])
    with pytest.raises(ValueError, match="not both"):
        consumer.subscribe("Sql", "A", sql=SQL)
    with pytest.raises(ValueError, match="empty"):
        consumer.subscribe("Sql", sql=" ")
    assert table.get("ns%Sql") is sql  # a refused call changes nothing


def test_the_brokers_asked_are_each_masters_else_a_slave() -> None:
    route = TopicRouteData(
        broker_datas=[
            BrokerData(broker_name="a", broker_addrs={0: "h:1", 1: "h:2"}),
            BrokerData(broker_name="b", broker_addrs={2: "h:4", 1: "h:3"}),
            BrokerData(broker_name="c", broker_addrs={}),
        ]
    )
    assert filters.brokers_to_ask(route) == [("a", "h:1"), ("b", "h:3")]


@pytest.mark.parametrize(
    ("code", "remark", "advice"),
    [
        (ResponseCode.SYSTEM_ERROR, APACHE_REMARK, "enablePropertyFilter=true"),
        (ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 46 not supported", "CHECK_CLIENT_CONFIG"),
        (ResponseCode.SUBSCRIPTION_PARSE_FAILED, 'Encounter "AND" at line 1', "could not compile"),
    ],
)
def test_a_refusal_names_the_broker_its_answer_and_what_would_help(
    code: int, remark: str, advice: str
) -> None:
    error = filters.refusal(BrokerError(code, remark, "h:1"), "broker-a", group="G", subscription=_sql_data())
    text = str(error)
    for part in ("broker-a (h:1)", "SQL92", SQL, "group G", "topic T", remark, f"code {code}", advice):
        assert part in text, (part, text)
    assert isinstance(error, BrokerError)
    assert (error.code, error.remark, error.addr, error.broker_name, error.topic) == (
        code,
        remark,
        "h:1",
        "broker-a",
        "T",
    )


# -- the check at start, against the in-test broker ----------------------------------------------------------


class Collected:
    def __init__(self) -> None:
        self.messages: list[MessageExt] = []

    async def __call__(self, messages: list[MessageExt], context: Any) -> ConsumeStatus:
        self.messages.extend(messages)
        return ConsumeStatus.CONSUME_SUCCESS


async def test_push_consumer_asks_first_then_heartbeats_and_pulls_sql92_without_filtering_itself(
    cluster: FakeCluster,
) -> None:
    cluster.topic("T", queues=1)
    cluster.broker.add_messages("T", 0, [b"one", b"two"])  # tagged TagA: a tag filter would not matter
    collected = Collected()
    push = PushConsumer("G", cluster.namesrv.address, consume_from="FIRST_OFFSET", config=config())
    push.subscribe("T", sql=SQL)
    push.register_listener(collected)
    await push.start()
    try:
        await cluster.broker.wait_until(lambda: len(cluster.broker.pull_headers) >= 1)
        [check] = cluster.broker.filter_checks  # the retry topic (tags) is not asked about
        assert (check.group, check.client_id, check.namespace) == ("G", push.client_id, None)
        assert check.subscription_data is not None
        assert (check.subscription_data.topic, check.subscription_data.sub_string) == ("T", SQL)
        assert check.subscription_data.expression_type == "SQL92"
        announced = [
            s for h in cluster.broker.heartbeats for c in h.consumer_data_set for s in c.subscription_data_set
        ]
        assert any(s.topic == "T" and s.expression_type == "SQL92" and s.sub_string == SQL for s in announced)
        pull = next(h for h in cluster.broker.pull_headers if h.topic == "T")
        assert pull.expression_type == "SQL92"
        assert pull.subscription is None  # the broker has it from the heartbeat, as Java's push consumer
        await cluster.broker.wait_until(lambda: len(collected.messages) == 2)
    finally:
        await push.shutdown()


async def test_pull_consumer_sends_the_expression_and_its_version_with_every_pull(
    cluster: FakeCluster,
) -> None:
    cluster.topic("T", queues=1)
    cluster.broker.add_messages("T", 0, [b"one"])
    pull = PullConsumer("G", cluster.namesrv.address, consume_from="FIRST_OFFSET", config=config())
    pull.subscribe("T", sql=SQL)
    await pull.start()
    try:
        assert [m.body for m in await pull.poll(5.0)] == [b"one"]
        [check] = cluster.broker.filter_checks
        header = cluster.broker.pull_headers[0]
        assert (header.subscription, header.expression_type) == (SQL, "SQL92")
        assert check.subscription_data is not None
        assert header.sub_version == check.subscription_data.sub_version > 0  # Java's, for non-tag types
    finally:
        await pull.close()


@pytest.mark.parametrize("kind", [PushConsumer, PullConsumer])
async def test_tag_subscriptions_are_not_asked_about(cluster: FakeCluster, kind: type[Any]) -> None:
    cluster.topic("T")
    consumer = kind("G", cluster.namesrv.address, config=config())
    consumer.subscribe("T", "TagA")
    if kind is PushConsumer:
        consumer.register_listener(Collected())
    await consumer.start()
    await consumer.shutdown()
    assert cluster.broker.filter_checks == []


@pytest.mark.parametrize("kind", [PushConsumer, PullConsumer])
@pytest.mark.parametrize(
    ("answer", "advice"),
    [
        ((ResponseCode.SYSTEM_ERROR, APACHE_REMARK), "enablePropertyFilter=true"),
        ((ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 46 not supported"), "CHECK_CLIENT_CONFIG"),
    ],
)
async def test_a_refusal_fails_start_with_one_clear_error_before_any_pull(
    cluster: FakeCluster, kind: type[Any], answer: tuple[int, str], advice: str
) -> None:
    cluster.topic("T")
    cluster.broker.filter_answer = answer
    consumer = kind("G", cluster.namesrv.address, config=config())
    consumer.subscribe("T", sql=SQL)
    if kind is PushConsumer:
        consumer.register_listener(Collected())
    with pytest.raises(FilterRefusedError) as caught:
        await consumer.start()
    error = caught.value
    assert (error.code, error.remark, error.addr) == (*answer, cluster.broker.address)
    assert f"broker {BROKER_NAME} ({cluster.broker.address})" in str(error)
    assert answer[1] in str(error) and advice in str(error)
    assert cluster.broker.pull_headers == []
    await consumer.shutdown()  # a failed start leaves nothing to stop


async def test_a_refused_subscription_added_while_running_is_withdrawn_and_logged(
    cluster: FakeCluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.topic("T")
    cluster.topic("S")
    cluster.broker.filter_answer = (ResponseCode.SYSTEM_ERROR, APACHE_REMARK)
    pull = PullConsumer("G", cluster.namesrv.address, config=config())
    pull.subscribe("T")
    await pull.start()
    try:
        with caplog.at_level(logging.ERROR, logger="consumer"):
            pull.subscribe("S", sql=SQL)
            await cluster.broker.wait_until(lambda: len(cluster.broker.filter_checks) == 1)
            for _ in range(100):
                if "S" not in pull._core.subscriptions:
                    break
                await pull.poll(0.02)
        assert "S" not in pull._core.subscriptions
        assert "T" in pull._core.subscriptions
        [record] = [r for r in caplog.records if "withdrawn" in r.getMessage()]
        assert APACHE_REMARK in record.getMessage()
    finally:
        await pull.close()


# -- the project's own broker --------------------------------------------------------------------------------


async def test_the_projects_broker_refuses_sql92_until_its_property_filter_is_on(tmp_path: Path) -> None:
    """As Apache's broker: off by default, so a SQL92 consumer is stopped at start with Apache's answer,
    not left pulling in vain; turned on live, the same consumer starts."""
    async with local_cluster(tmp_path / "store") as local:
        await local.create_topic("T", queues=1)
        pull = PullConsumer("G", local.address, config=config())
        pull.subscribe("T", sql=SQL)
        with pytest.raises(FilterRefusedError, match="enablePropertyFilter=true") as caught:
            await pull.start()
        assert (caught.value.code, caught.value.remark) == (ResponseCode.SYSTEM_ERROR, APACHE_REMARK)
        assert caught.value.addr == local.broker.address
        assert local.broker.config.update({"enablePropertyFilter": "true"}) == ["enablePropertyFilter"]
        pull = PullConsumer("G", local.address, config=config())
        pull.subscribe("T", sql=SQL)
        await pull.start()
        await pull.close()
