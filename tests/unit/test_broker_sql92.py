"""The broker's SQL92 filter: Apache's grammar and evaluation, the compile cache, the one filter object pull
and pop share, and the processors that use it (CHECK_CLIENT_CONFIG, PULL_MESSAGE), built from parts.

Ground truth comes from two places. ``data/sql92_apache_5.5.0.json`` holds what Apache 5.5.0's own filter
jar answers (``data/Sql92Probe.java``): the exact remark of each expression that does not compile and the
result of each expression on sets of properties, Java's coercions and exceptions included. The 41-expression
table of ``tests/integration/test_sql92.py`` is evaluated over the same 40 messages the integration test
sends, each case's own predicate saying what the broker selects (Apache's brokers pass that test).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from broker.filtering import ACCEPT_ALL, SubscriptionFilter, accepts, subscription_filter, tag_codes
from broker.parts import BrokerParts
from broker.processors.client_manage import CheckClientConfigProcessor, HeartbeatProcessor
from broker.processors.common import BadRequest
from broker.sql92 import CompileError, EvaluationError, ExpressionCompiler, matches
from broker.sql92.parser import parse
from broker.testing import message_properties, open_parts
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import CheckClientRequestBody
from rocketmq_wire.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketmq_wire.bodies.subscription import build_subscription, tag_code
from rocketmq_wire.bodies.topic_config import TopicConfig
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.pull import PullMessageRequestHeader
from rocketmq_wire.headers.send import SendMessageRequestHeaderV2
from rocketmq_wire.message import decode_messages, sysflag
from tests.integration.test_sql92 import CASES, MESSAGES, _properties, _tag
from tests.unit.broker_processor_helpers import (
    FakeConnection,
    call,
    pull_processor,
    send_processor,
    wire_request,
)

APACHE = json.loads((Path(__file__).parent / "data" / "sql92_apache_5.5.0.json").read_text("utf-8"))
TOPIC = "SqlTopic"
GROUP = "SqlGroup"
REFUSED = "The broker does not support consumer to filter message by SQL92"


def _batch() -> list[dict[str, str]]:
    """The integration test's messages, with the TAGS property a tagged one carries in the store."""
    found = []
    for i in range(MESSAGES):
        tag = _tag(i)
        found.append(_properties(i) | ({"TAGS": tag} if tag else {}))
    return found


# -- grammar and evaluation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c.sql for c in CASES])
def test_every_expression_of_the_integration_table_selects_what_apache_selects(case: Any) -> None:
    expression = parse(case.sql)
    batch = _batch()
    got = [i for i, p in enumerate(batch) if matches(expression, p)]
    want = [i for i, p in enumerate(batch) if case.selects(p)]
    assert got == want


@pytest.mark.parametrize("sql,remark", APACHE["compile"], ids=[repr(c[0]) for c in APACHE["compile"]])
def test_compiling_gives_apaches_answer_and_remark(sql: str, remark: str | None) -> None:
    if remark is None:
        parse(sql)
        return
    with pytest.raises(CompileError) as refused:
        parse(sql)
    assert refused.value.remark == remark


@pytest.mark.parametrize("sql", sorted(APACHE["evaluate"]))
def test_evaluation_matches_apache_value_for_value(sql: str) -> None:
    """TRUE, FALSE, unknown, or an exception (Apache drops the message), on each property set."""
    expression = parse(sql)
    for properties, want in zip(APACHE["properties"], APACHE["evaluate"][sql], strict=True):
        try:
            got: object = expression.evaluate(properties)
        except EvaluationError:
            got = "throws"
        assert got == want, (sql, properties)
        assert matches(expression, properties) is (want is True)


@pytest.mark.parametrize(
    "sql,properties,selected",
    [
        # a missing property makes a comparison unknown; NOT of unknown is unknown, not TRUE
        ("NOT (b > 3)", {}, False),
        ("b > 3 OR a = 1", {"a": "1"}, True),
        ("b > 3 AND a = 1", {"a": "1"}, False),
        ("b IS NULL OR b > 3", {}, True),
        # the string operators are FALSE, not unknown, on a missing property
        ("NOT (region CONTAINS 'x')", {}, True),
        ("region NOT CONTAINS 'x'", {}, False),
        ("region NOT STARTSWITH 'e'", {"region": "us"}, True),
        ("region NOT ENDSWITH 'u'", {"region": "eu"}, False),
        # Java's coercions: a property compared with a number is read as that number's type
        ("a = 7", {"a": "7"}, True),
        ("a = 7", {"a": "7.0"}, False),  # Integer.valueOf("7.0") throws: the message is dropped
        ("a = 7.0", {"a": "7"}, True),
        ("big > 2147483648", {"big": "99999999999"}, True),  # a Long literal: read as a Long
        ("big > 2147483647", {"big": "99999999999"}, False),  # an Integer: the conversion overflows
        ("x > 1", {"x": " 5 "}, False),
        ("x > 1.0", {"x": " 5 "}, True),  # Double.valueOf trims
        ("x = 7", {"x": "\u0667"}, True),  # Integer.valueOf takes any decimal digit (Arabic-Indic 7)...
        ("x > 1.0", {"x": "\u0667"}, False),  # ... Double.valueOf only ASCII ones
        ("flag = TRUE", {"flag": "TRUE"}, True),
        ("TRUE = flag", {"flag": "true"}, False),  # Apache's cast of TRUE to a String throws
        ("a > '5'", {"a": "7"}, None),  # compile error, see below
    ],
)
def test_three_valued_logic_and_javas_coercions(sql: str, properties: dict[str, str], selected: bool) -> None:
    if selected is None:
        with pytest.raises(CompileError, match="cannot be compared"):
            parse(sql)
        return
    assert matches(parse(sql), properties) is selected


def test_keywords_are_case_insensitive_and_properties_are_not() -> None:
    assert matches(parse("a > 5 and region in ('eu') or Region is null"), {"a": "7", "region": "eu"})
    assert not matches(parse("REGION = 'eu'"), {"region": "eu"})


def test_text_after_a_complete_expression_is_ignored_as_apache_ignores_it() -> None:
    assert matches(parse("a > 5 b c d"), {"a": "7"})
    with pytest.raises(CompileError, match="Lexical error"):
        parse("a > 5 !")


# -- the compile cache ---------------------------------------------------------------------------------------


def test_an_expression_is_compiled_once_and_a_failure_is_remembered_too() -> None:
    compiler = ExpressionCompiler(capacity=2)
    first = compiler.compile("a > 5")
    assert compiler.compile("a > 5") is first
    with pytest.raises(CompileError) as once:
        compiler.compile("a >")
    with pytest.raises(CompileError) as twice:
        compiler.compile("a >")
    assert once.value is twice.value
    compiler.compile("b < 1")  # a third expression pushes out the least recently used ("a > 5")
    assert len(compiler) == 2
    assert compiler.compile("a > 5") is not first


# -- the filter object ---------------------------------------------------------------------------------------


def test_a_tag_subscription_filters_by_tag_code_only() -> None:
    compiler = ExpressionCompiler()
    tagged = subscription_filter(build_subscription(TOPIC, "TagA || TagB"), compiler)
    assert tagged.codes == tag_codes(build_subscription(TOPIC, "TagA || TagB"))
    assert tagged.accepts_tag(tag_code("TagA")) and not tagged.accepts_tag(tag_code("TagC"))
    assert tagged.accepts_tag(tag_code("TagB") & 0xFFFFFFFF)  # unsigned codes from the queue too
    assert tagged.accepts_properties({}) and tagged.record_filter is None
    assert subscription_filter(build_subscription(TOPIC, "*"), compiler) is ACCEPT_ALL
    assert subscription_filter(None, compiler) is ACCEPT_ALL
    # the existing helpers still answer as before
    assert accepts(tagged.codes, tag_code("TagA")) and not accepts(tagged.codes, tag_code("TagC"))


def test_a_sql92_subscription_filters_by_properties_and_shares_compiled_expressions() -> None:
    compiler = ExpressionCompiler()
    subscription = build_subscription(TOPIC, "a > 5 AND region = 'eu'", "SQL92")
    first = subscription_filter(subscription, compiler)
    second = subscription_filter(subscription, compiler)
    assert first.expression is second.expression and len(compiler) == 1
    assert first.accepts_tag(tag_code("anything")) and first.codes is None
    assert first.accepts_properties({"a": "7", "region": "eu"})
    assert not first.accepts_properties({"a": "7"})
    assert first.record_filter is not None


def test_a_subscription_that_does_not_compile_or_has_an_unknown_type_raises() -> None:
    compiler = ExpressionCompiler()
    with pytest.raises(CompileError, match="ParseException"):
        subscription_filter(build_subscription(TOPIC, "a >", "SQL92"), compiler)
    with pytest.raises(CompileError, match=r"FilterFactory\.get"):
        subscription_filter(SubscriptionData(topic=TOPIC, sub_string="x", expression_type="FOO"), compiler)
    assert subscription_filter(SubscriptionData(topic=TOPIC, class_filter_mode=True), compiler) is ACCEPT_ALL


# -- CHECK_CLIENT_CONFIG -------------------------------------------------------------------------------------


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[BrokerParts]:
    async with open_parts(tmp_path / "store") as opened:
        opened.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=1, write_queue_nums=1))
        yield opened


def check(parts: BrokerParts) -> CheckClientConfigProcessor:
    return CheckClientConfigProcessor(config=parts.config, filters=parts.services.filters)


def check_request(subscription: SubscriptionData | None) -> RemotingCommand:
    body = CheckClientRequestBody(client_id="c1", group=GROUP, subscription_data=subscription)
    return wire_request(RequestCode.CHECK_CLIENT_CONFIG, body=body.to_json())


async def test_the_check_refuses_sql92_until_the_property_filter_is_turned_on_live(
    parts: BrokerParts,
) -> None:
    sql = build_subscription(TOPIC, "a > 5", "SQL92")
    answer = await call(check(parts), check_request(sql))
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, REFUSED)
    assert parts.config.update({"enablePropertyFilter": "true"}) == ["enablePropertyFilter"]
    answer = await call(check(parts), check_request(sql))
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, None)


async def test_the_check_passes_tag_subscriptions_and_an_empty_body_whatever_the_setting(
    parts: BrokerParts,
) -> None:
    for request in (check_request(build_subscription(TOPIC, "TagA")), check_request(None)):
        answer = await call(check(parts), request)
        assert answer.code == ResponseCode.SUCCESS


async def test_the_check_answers_a_bad_expression_with_the_compilers_remark(parts: BrokerParts) -> None:
    parts.config.update({"enablePropertyFilter": "true"})
    answer = await call(check(parts), check_request(build_subscription(TOPIC, "a BETWEEN 6 AND 3", "SQL92")))
    assert answer.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert answer.remark == (
        "java.lang.RuntimeException: Illegal values of between, left value(6) must less than or equal to "
        "right value(3)"
    )
    unknown = SubscriptionData(topic=TOPIC, sub_string="x", expression_type="FOO")
    answer = await call(check(parts), check_request(unknown))
    assert answer.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert answer.remark is not None and "FilterFactory.get(String)" in answer.remark


async def test_the_check_refuses_another_expression_type_by_name_when_the_filter_is_off(
    parts: BrokerParts,
) -> None:
    unknown = SubscriptionData(topic=TOPIC, sub_string="x", expression_type="FOO")
    answer = await call(check(parts), check_request(unknown))
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The broker does not support consumer to filter message by FOO",
    )


async def test_a_malformed_check_body_is_a_bad_request(parts: BrokerParts) -> None:
    with pytest.raises(BadRequest):
        await check(parts)(wire_request(RequestCode.CHECK_CLIENT_CONFIG, body=b"{not json"), FakeConnection())


# -- PULL_MESSAGE --------------------------------------------------------------------------------------------


async def send_batch(parts: BrokerParts) -> list[dict[str, str]]:
    send = send_processor(parts)
    for i in range(MESSAGES):
        header = SendMessageRequestHeaderV2(
            producer_group="SqlProducer",
            topic=TOPIC,
            default_topic="TBW102",
            default_topic_queue_nums=4,
            queue_id=0,
            sys_flag=0,
            born_timestamp=1,
            flag=0,
            properties=message_properties(_tag(i), extra=_properties(i)),
        )
        answer = await call(send, wire_request(RequestCode.SEND_MESSAGE_V2, header, f"m{i}".encode()))
        assert answer.code == ResponseCode.SUCCESS, answer.remark
    return _batch()


def pull_request(expression: str | None, expression_type: str = "SQL92", offset: int = 0) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=TOPIC,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=64,
        sys_flag=sysflag.build_pull_sys_flag(
            commit_offset=False, suspend=False, subscription=expression is not None
        ),
        commit_offset=0,
        suspend_timeout_millis=0,
        subscription=expression,
        sub_version=0,
        expression_type=expression_type,
    )
    return wire_request(RequestCode.PULL_MESSAGE, header)


def pulled(answer: RemotingCommand) -> list[int]:
    return [int(m.properties["seq"]) for m in decode_messages(answer.body)]


async def pull_all(parts: BrokerParts, expression: str) -> list[int]:
    """Every message the filter selects, pull after pull (one returns at most 32), as a consumer reads."""
    got: list[int] = []
    offset = 0
    while offset < MESSAGES:
        answer = await call(pull_processor(parts), pull_request(expression, offset=offset))
        assert answer.code in (ResponseCode.SUCCESS, ResponseCode.PULL_RETRY_IMMEDIATELY), answer.remark
        if answer.code == ResponseCode.PULL_RETRY_IMMEDIATELY:
            assert answer.remark == "NO_MATCHED_MESSAGE"
        got += pulled(answer)
        next_offset = int(answer.fields()["nextBeginOffset"])
        assert next_offset > offset
        offset = next_offset
    return got


async def test_a_sql92_pull_is_refused_while_the_property_filter_is_off(parts: BrokerParts) -> None:
    await send_batch(parts)
    answer = await call(pull_processor(parts), pull_request("a > 5"))
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, REFUSED)


@pytest.mark.parametrize("case", [c for c in CASES if c.sql.startswith(("a ", "region", "name", "TAGS"))])
async def test_a_sql92_pull_returns_exactly_the_selected_messages(parts: BrokerParts, case: Any) -> None:
    batch = await send_batch(parts)
    parts.config.update({"enablePropertyFilter": "true"})
    assert await pull_all(parts, case.sql) == [i for i, p in enumerate(batch) if case.selects(p)]


async def test_a_pull_whose_expression_does_not_compile_is_served_unfiltered_as_apache_does(
    parts: BrokerParts,
) -> None:
    await send_batch(parts)
    parts.config.update({"enablePropertyFilter": "true"})
    assert await pull_all(parts, "a >") == list(range(MESSAGES))


async def test_a_tag_pull_is_unchanged(parts: BrokerParts) -> None:
    await send_batch(parts)
    answer = await call(pull_processor(parts), pull_request("TagA", "TAG"))
    assert answer.code == ResponseCode.SUCCESS
    assert pulled(answer) == [i for i in range(MESSAGES) if _tag(i) == "TagA"]  # 10: one pull


async def join(parts: BrokerParts, expression: str) -> None:
    """A push consumer's heartbeat: the pulls that follow carry no subscription of their own."""
    body = HeartbeatData(
        client_id="c1",
        consumer_data_set=[
            ConsumerData(
                group_name=GROUP,
                consume_type="CONSUME_PASSIVELY",
                message_model="CLUSTERING",
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                subscription_data_set=[build_subscription(TOPIC, expression, "SQL92")],
            )
        ],
    ).to_json()
    processor = HeartbeatProcessor(
        config=parts.config,
        clock=parts.clock,
        topics=parts.metadata.topics,
        groups=parts.metadata.groups,
        consumers=parts.clients.consumers,
        producers=parts.clients.producers,
        announcer=parts.services.announcer,
    )
    request = wire_request(RequestCode.HEART_BEAT, body=body, version=MQVersion.value_of("V4_9_4"))
    assert (await call(processor, request)).code == ResponseCode.SUCCESS


async def test_a_pull_by_the_heartbeats_subscription_is_filtered_by_it(parts: BrokerParts) -> None:
    batch = await send_batch(parts)
    parts.config.update({"enablePropertyFilter": "true"})
    await join(parts, "region IN ('eu', 'us') AND flag = TRUE")
    answer = await call(pull_processor(parts), pull_request(None))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert pulled(answer) == [
        i for i, p in enumerate(batch) if p.get("region") in ("eu", "us") and p["flag"] == "true"
    ]


async def test_a_pull_by_a_heartbeats_expression_that_does_not_compile_has_no_filter_data(
    parts: BrokerParts,
) -> None:
    await send_batch(parts)
    await join(parts, "a >")
    answer = await call(pull_processor(parts), pull_request(None))
    assert (answer.code, answer.remark) == (
        ResponseCode.FILTER_DATA_NOT_EXIST,
        "The broker's consumer filter data is not exist!Your expression may be wrong!",
    )


def test_an_unreadable_record_is_not_selected_and_crashes_nothing() -> None:
    sql = SubscriptionFilter(expression=parse("a = 1"))
    assert not sql.accepts_record(b"\x00" * 10)


def test_a_long_chain_of_ors_evaluates_without_recursion_and_prints_as_apache_nests_it() -> None:
    chain = parse(" OR ".join(f"a = {i}" for i in range(5000)))
    assert matches(chain, {"a": "4999"}) and not matches(chain, {"a": "5000"})
    assert chain.evaluate({}) is None
    assert str(parse("a > 1 AND b < 2 AND c = 3")) == "(((a > 1) && (b < 2)) && (c == 3))"
    assert str(parse("a = 1 OR (b = 2 OR c = 3)")) == "((a == 1) || ((b == 2) || (c == 3)))"
