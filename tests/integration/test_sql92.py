"""SQL92 filters against Apache's brokers and the project's: the project's consumers and Apache's Java client,
given the same expression over the same messages, get the same messages; and a broker that does not filter
by SQL92 stops a consumer at start with one clear error.

On each Apache release, and on the project's broker (which filters as Apache 5.5.0's does; Java's client of
that release drives it), one topic gets a batch of messages whose properties cover integers (negative ones
too), decimals, strings (one with a quote), booleans, absent properties and tags. Then, for every expression
of :data:`CASES` (comparisons, BETWEEN, IN, IS NULL, AND/OR/NOT, strings, numbers, booleans; 5.x adds
CONTAINS/STARTSWITH/ENDSWITH):

* Apache's client pulls every queue with ``MessageSelector.bySql`` (one JVM for all expressions, the Java
  peer's ``sql-select``), and what it gets is what the case's own predicate says the broker selects;
* the project's pull consumer, push consumer (one group each) and the Spark source's reader get exactly the
  same messages.

Apache's subscribed consumers (lite pull over JSON, push over ROCKETMQ) consume one expression too, and their
CHECK_CLIENT_CONFIG requests are read off the loopback interface where the capture can run: each re-encodes
byte for byte, and the project builds the same frame from the same values.

Every broker filters by SQL92 only with ``enablePropertyFilter=true``; it is turned on live, as an operator
would (``updateBrokerConfig``), and off again afterwards (Apache's default, which the refusal test uses).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from admin import Admin
from consumer import ConsumeStatus, FilterRefusedError, PullConsumer, PushConsumer
from consumer import commands as consumer_commands
from producer import Message, Producer
from rocketmq_wire import RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import CheckClientRequestBody
from rocketmq_wire.message import MessageExt
from spark_connector import SourceReadError
from spark_connector.options import ConnectionOptions
from spark_connector.pull import TopicReader
from tests.integration.apache.releases import DEFAULT_RELEASES, ApacheRelease
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.clusters.wiretap import Frame, WireTap, unavailable_reason
from tests.integration.cpp_peer.runner import PeerResult
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration

#: Apache's own servers of every release selected.
APACHE_SETUPS = [s for s in PROVIDERS if s.family == "binaries"]
#: ... and the project's broker, which filters (and refuses) as Apache 5.5.0's does.
SQL92_SETUPS = [*APACHE_SETUPS, *(s for s in PROVIDERS if s.id == "python")]
#: The release the project's broker answers as: its expressions, and the Java client that drives it.
PROJECT_AS = DEFAULT_RELEASES[-1]

MESSAGES = 40
QUEUES = 2
#: How long a consumer keeps reading after it has what Java got (extra messages would show up by then).
LINGER_S = 1.5
#: Longest a consumer may take to start, be assigned its queues and read them.
DRAIN_S = 60.0
JAVA_TIMEOUT_S = 120.0
#: Apache's remark when ``enablePropertyFilter`` is off (the check and every pull say it).
REFUSED_REMARK = "The broker does not support consumer to filter message by SQL92"
#: The expression Apache's subscribed consumers and the refusal test use (the one in the issue).
SUBSCRIBED_SQL = "a > 5 AND region = 'eu'"

Props = Mapping[str, str]


def _properties(i: int) -> dict[str, str]:
    """The properties of message ``i``: every kind of value, and properties some messages lack."""
    found = {
        "seq": str(i),
        "a": str(i % 10),
        "level": str(i - 20),
        "price": f"{(i * 7) % 20}.5",
        "flag": "true" if i % 3 == 0 else "false",
        "name": "o'brien" if i == 7 else f"user-{i:02d}",
    }
    if i % 4:
        found["b"] = str(i)
    if i % 5:
        found["region"] = ("eu", "us", "asia", "eu-west")[i % 4]
    return found


def _tag(i: int) -> str | None:
    return ("TagA", "TagB", "TagC", None)[i % 4]


def _num(p: Props, name: str) -> float | None:
    value = p.get(name)
    return None if value is None else float(value)


@dataclasses.dataclass(frozen=True)
class Case:
    sql: str
    #: Whether the broker selects a message with these properties: SQL's three-valued logic, a comparison
    #: with an absent property being unknown, and only TRUE selecting.
    selects: Callable[[Props], bool]
    #: First Apache release whose filter knows the expression.
    since: tuple[int, ...] = (4,)


def _a(p: Props) -> float:
    value = _num(p, "a")
    assert value is not None
    return value


CASES = [
    Case("a > 5", lambda p: _a(p) > 5),
    Case("a >= 5", lambda p: _a(p) >= 5),
    Case("a < 3", lambda p: _a(p) < 3),
    Case("a <= 3", lambda p: _a(p) <= 3),
    Case("a = 7", lambda p: _a(p) == 7),
    Case("a <> 7", lambda p: _a(p) != 7),
    Case("a BETWEEN 3 AND 6", lambda p: 3 <= _a(p) <= 6),
    Case("a NOT BETWEEN 3 AND 6", lambda p: not 3 <= _a(p) <= 6),
    Case("a >= 0", lambda p: True),
    Case("a > 100", lambda p: False),
    Case("level < 0", lambda p: float(p["level"]) < 0),
    Case("level BETWEEN -5 AND 5", lambda p: -5 <= float(p["level"]) <= 5),
    Case("price > 10.0", lambda p: float(p["price"]) > 10.0),
    Case("price <= 4.5", lambda p: float(p["price"]) <= 4.5),
    Case("region = 'eu'", lambda p: p.get("region") == "eu"),
    Case("region <> 'eu'", lambda p: p.get("region") not in (None, "eu")),
    Case("region IN ('eu', 'us')", lambda p: p.get("region") in ("eu", "us")),
    Case("region NOT IN ('eu', 'us')", lambda p: p.get("region") not in (None, "eu", "us")),
    Case("region IS NULL", lambda p: "region" not in p),
    Case("region IS NOT NULL", lambda p: "region" in p),
    Case("b IS NULL", lambda p: "b" not in p),
    Case("b IS NOT NULL AND a > 4", lambda p: "b" in p and _a(p) > 4),
    Case("b > 30", lambda p: "b" in p and float(p["b"]) > 30),
    Case("a = 2 AND b IS NULL", lambda p: _a(p) == 2 and "b" not in p),
    Case("flag = TRUE", lambda p: p["flag"] == "true"),
    Case("flag = FALSE", lambda p: p["flag"] == "false"),
    Case("flag = TRUE AND a < 5", lambda p: p["flag"] == "true" and _a(p) < 5),
    Case("a > 7 OR a < 2", lambda p: _a(p) > 7 or _a(p) < 2),
    Case("NOT (a > 5)", lambda p: not _a(p) > 5),
    Case("NOT (region = 'us')", lambda p: p.get("region") not in (None, "us")),
    Case(
        "(region = 'eu' OR region = 'asia') AND flag = FALSE",
        lambda p: p.get("region") in ("eu", "asia") and p["flag"] == "false",
    ),
    Case(
        "level >= -3 AND level <= 3 AND NOT (flag = TRUE)",
        lambda p: -3 <= float(p["level"]) <= 3 and p["flag"] != "true",
    ),
    Case(SUBSCRIBED_SQL, lambda p: _a(p) > 5 and p.get("region") == "eu"),
    Case("name = 'o''brien'", lambda p: p["name"] == "o'brien"),
    Case(
        "name IN ('user-01', 'user-02', 'user-30')", lambda p: p["name"] in ("user-01", "user-02", "user-30")
    ),
    Case("TAGS = 'TagA'", lambda p: p.get("TAGS") == "TagA"),
    Case("TAGS IS NULL", lambda p: "TAGS" not in p),
    Case("nothere = 'x'", lambda p: False),
    Case("name CONTAINS 'user-1'", lambda p: "user-1" in p["name"], since=(5,)),
    Case("name STARTSWITH 'user-3'", lambda p: p["name"].startswith("user-3"), since=(5,)),
    Case("region ENDSWITH 'west'", lambda p: p.get("region", "").endswith("west"), since=(5,)),
]


def _version(release: ApacheRelease) -> tuple[int, ...]:
    return tuple(int(part) for part in release.version.split("."))


def _release(cluster: Cluster) -> ApacheRelease:
    """The Apache release of the cluster's servers, or the one the project's broker answers as."""
    spec = next(s for s in PROVIDERS if s.id == cluster.provider)
    return spec.release or PROJECT_AS


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


def _seq(message: MessageExt) -> int:
    return int(message.properties["seq"])


async def _property_filter(cluster: Cluster, enabled: bool) -> None:
    """``enablePropertyFilter`` on every broker, live (Apache's brokers read it at each check and pull)."""
    async with Admin(cluster.namesrv) as admin:
        for broker in cluster.brokers:
            await admin.update_broker_config(broker.addr, {"enablePropertyFilter": str(enabled).lower()})


async def _send(namesrv: str, topic: str) -> dict[int, dict[str, str]]:
    """The batch, spread over the queues; each message's properties as the broker's filter sees them."""
    sent: dict[int, dict[str, str]] = {}
    async with Producer(unique_name("SqlPg"), namesrv) as producer:
        queues = await producer.fetch_publish_queues(topic)
        for i in range(MESSAGES):
            tag = _tag(i)
            properties = _properties(i)
            await producer.send(
                Message(topic, f"sql {i}".encode(), tags=tag, properties=properties),
                queue=queues[i % len(queues)],
            )
            sent[i] = properties | ({"TAGS": tag} if tag else {})
    return sent


# -- the project's three readers -----------------------------------------------------------------------------


async def _until_read(count: Callable[[], int], assigned: Callable[[], bool], expected: int) -> None:
    """Until ``expected`` messages came (and queues were assigned), then ``LINGER_S`` more for extra ones."""
    async with asyncio.timeout(DRAIN_S):
        while count() < expected or not assigned():
            await asyncio.sleep(0.05)
    await asyncio.sleep(LINGER_S)


async def _pull_consumer(namesrv: str, topic: str, sql: str, expected: int) -> list[int]:
    consumer = PullConsumer(unique_name("SqlPullCg"), namesrv, consume_from="FIRST_OFFSET")
    consumer.subscribe(topic, sql=sql)
    got: list[int] = []

    async def poll() -> None:
        while True:
            got.extend(_seq(m) for m in await consumer.poll(0.2))

    await consumer.start()
    poller = asyncio.get_running_loop().create_task(poll())
    try:
        await _until_read(lambda: len(got), lambda: bool(consumer.assignment()), expected)
    finally:
        poller.cancel()
        await asyncio.gather(poller, return_exceptions=True)
        await consumer.close()
    return sorted(got)


async def _push_consumer(namesrv: str, topic: str, sql: str, expected: int) -> list[int]:
    consumer = PushConsumer(unique_name("SqlPushCg"), namesrv, consume_from="FIRST_OFFSET")
    consumer.subscribe(topic, sql=sql)
    got: list[int] = []

    async def handle(messages: list[MessageExt], context: Any) -> ConsumeStatus:
        got.extend(_seq(m) for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer.register_listener(handle)
    await consumer.start()
    try:
        await _until_read(lambda: len(got), lambda: bool(consumer.assignment()), expected)
    finally:
        await consumer.shutdown()
    return sorted(got)


async def _spark_reader(namesrv: str, topic: str, sql: str) -> list[int]:
    """The Spark source's reads: every queue from its first offset to its last, the filter on each pull."""
    group = unique_name("SqlSparkCg")
    async with TopicReader(ConnectionOptions(namesrv=(namesrv,)), topic, filter_sql=sql) as reader:
        await reader.check_filter(group)
        queues = await reader.queues()
        lows, highs = await reader.bounds(queues)
        got = [
            _seq(m)
            for q in queues
            async for batch in reader.pull_range(q, lows[q.key], highs[q.key], group=group)
            for m in batch
        ]
    return sorted(got)


# -- Apache's client -----------------------------------------------------------------------------------------


def _java_sets(events: Sequence[Mapping[str, Any]], count: int) -> list[list[int]]:
    found: list[list[int]] = [[] for _ in range(count)]
    for event in events:
        found[int(event["expression"])].append(int(event["properties"]["seq"]))
    return [sorted(seqs) for seqs in found]


def _held_to_javas_checks(frames: list[Frame], topic: str) -> set[str]:
    """Java's CHECK_CLIENT_CONFIG requests: re-encoded byte for byte, their body as the project reads and
    writes it, the whole frame as the project builds it from the same values, each answered SUCCESS.
    Returns the serializations they came in."""
    commands = [(frame, frame.command()) for frame in frames]
    answers = {
        (frame.connection, cmd.opaque): cmd
        for frame, cmd in commands
        if not frame.to_server and cmd.is_response
    }
    checks = [
        (frame, cmd)
        for frame, cmd in commands
        if frame.to_server and not cmd.is_response and cmd.code == RequestCode.CHECK_CLIENT_CONFIG
    ]
    for frame, cmd in checks:
        assert cmd.encode() == frame.data
        # Body only, no header: at most 5.x's lite pull consumer's stream marker (enableStreamRequestType)
        assert set(cmd.fields()) <= {"ReqT"}, cmd.fields()
        body = CheckClientRequestBody.from_json(cmd.body)
        assert body.to_json() == cmd.body
        data = body.subscription_data
        assert data is not None and body.namespace is None
        assert (data.topic, data.sub_string, data.expression_type) == (topic, SUBSCRIBED_SQL, "SQL92")
        assert (data.tags_set, data.code_set, data.class_filter_mode) == ([], [], False)
        ours = consumer_commands.check_client_request(body.group or "", body.client_id or "", data)
        ours.opaque, ours.version, ours.language = cmd.opaque, cmd.version, cmd.language
        ours.serialize_type, ours.flag, ours.ext_fields = cmd.serialize_type, cmd.flag, cmd.ext_fields
        assert ours.encode() == frame.data, "the project's CHECK_CLIENT_CONFIG differs from Java's"
        answer = answers.get((frame.connection, cmd.opaque))
        assert answer is not None and answer.code == ResponseCode.SUCCESS, answer
    return {cmd.serialize_type.name for _, cmd in checks}


async def _java_runs(
    cluster: Cluster, java_client: JavaClientFactory, topic: str, cases: Sequence[Case], subscribed: int
) -> tuple[list[list[int]], list[int], list[int]]:
    """Java's ``sql-select`` over every case, and its subscribed lite pull (JSON) and push (ROCKETMQ)
    consumers over the subscribed expression, captured where the capture runs."""
    release = _release(cluster)
    json_client, rocketmq_client = java_client(release, "JSON"), java_client(release, "ROCKETMQ")
    ports = {_port(cluster.namesrv): "namesrv"} | {_port(b.addr): b.name for b in cluster.brokers}
    tap = WireTap(ports).start() if unavailable_reason() is None else None
    sql = ["--sql", SUBSCRIBED_SQL]

    def lite_pull() -> PeerResult:
        return json_client.pull_consume(
            cluster.namesrv,
            unique_name("SqlJavaPull"),
            topic,
            count=subscribed,
            extra=sql,
            timeout=JAVA_TIMEOUT_S,
        )

    try:
        selected, pulled, pushed = await asyncio.gather(
            asyncio.to_thread(
                json_client.sql_select,
                cluster.namesrv,
                topic,
                [c.sql for c in cases],
                group=unique_name("SqlJavaSelect"),
                timeout=JAVA_TIMEOUT_S,
            ),
            asyncio.to_thread(lite_pull),
            asyncio.to_thread(
                rocketmq_client.push_consume,
                cluster.namesrv,
                unique_name("SqlJavaPush"),
                topic,
                subscribed,
                extra=[*sql, "--linger", str(LINGER_S)],
                timeout=JAVA_TIMEOUT_S,
            ),
        )
    finally:
        frames = await asyncio.to_thread(tap.stop, 0.5) if tap is not None else []
    for result in (selected, pulled, pushed):
        assert result.ok, result.describe()
    sets = _java_sets(selected.of("message"), len(cases))
    assert [e["count"] for e in selected.of("selected")] == [len(s) for s in sets]
    if tap is not None:
        seen = _held_to_javas_checks(frames, topic)
        if "JSON" not in seen:
            # Java sends its check only to a broker its route already names: a lite pull consumer whose
            # route request timed out on a loaded machine starts without one. A second one, captured too.
            tap = WireTap(ports).start()
            try:
                again = await asyncio.to_thread(lite_pull)
            finally:
                frames = await asyncio.to_thread(tap.stop, 0.5)
            assert again.ok, again.describe()
            seen |= _held_to_javas_checks(frames, topic)
        assert seen == {"JSON", "ROCKETMQ"}, seen
    return (
        sets,
        sorted(int(e["properties"]["seq"]) for e in pulled.of("message")),
        sorted(int(m.properties["seq"]) for m in pushed.messages()),
    )


# -- the scenarios -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cluster", SQL92_SETUPS, ids=[s.id for s in SQL92_SETUPS], indirect=True)
async def test_the_project_and_java_select_the_same_messages_with_every_expression(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    cases = [c for c in CASES if _version(_release(cluster)) >= c.since]
    assert len(cases) >= 30
    topic = await create_on_every_broker(cluster, "Sql92", queues=QUEUES)
    sent = await _send(cluster.namesrv, topic)
    expected = [sorted(i for i, p in sent.items() if case.selects(p)) for case in cases]
    # The cases tell messages apart: all but a few select some messages, not all of them.
    assert sum(0 < len(e) < MESSAGES for e in expected) >= len(cases) - 4
    subscribed = expected[[c.sql for c in cases].index(SUBSCRIBED_SQL)]
    await _property_filter(cluster, True)
    try:
        java, java_pulled, java_pushed = await _java_runs(cluster, java_client, topic, cases, len(subscribed))
        # The broker selected what each case says (so the comparisons below compare something).
        wrong = {
            c.sql: (got, want) for c, got, want in zip(cases, java, expected, strict=True) if got != want
        }
        assert not wrong, wrong
        assert java_pulled == java_pushed == subscribed

        ns = cluster.namesrv
        pulls, pushes, reads = await asyncio.gather(
            asyncio.gather(
                *(_pull_consumer(ns, topic, c.sql, len(s)) for c, s in zip(cases, java, strict=True))
            ),
            asyncio.gather(
                *(_push_consumer(ns, topic, c.sql, len(s)) for c, s in zip(cases, java, strict=True))
            ),
            asyncio.gather(*(_spark_reader(ns, topic, c.sql) for c in cases)),
        )
    finally:
        await _property_filter(cluster, False)
    for name, ours in (("pull consumer", pulls), ("push consumer", pushes), ("spark reader", reads)):
        differing = {
            c.sql: (got, want) for c, got, want in zip(cases, ours, java, strict=True) if got != want
        }
        assert not differing, f"the project's {name} and Java differ (project, Java): {differing}"
    print(f"\n{cluster.provider}: {len(cases)} expressions, {collections.Counter(map(len, java))}")


async def _never_called(messages: list[MessageExt], context: Any) -> ConsumeStatus:
    raise AssertionError("a refused consumer got messages")


@pytest.mark.parametrize("cluster", SQL92_SETUPS, ids=[s.id for s in SQL92_SETUPS], indirect=True)
async def test_a_broker_that_does_not_filter_by_sql92_stops_the_consumer_at_start(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    await _property_filter(cluster, False)  # Apache's default, said again: other tests turn it on
    topic = await create_on_every_broker(cluster, "Sql92Off", queues=QUEUES)
    [broker] = cluster.brokers
    expected_code = ResponseCode.SYSTEM_ERROR
    advice = "enablePropertyFilter=true"

    pull = PullConsumer(unique_name("SqlOffPullCg"), cluster.namesrv)
    pull.subscribe(topic, sql=SUBSCRIBED_SQL)
    push = PushConsumer(unique_name("SqlOffPushCg"), cluster.namesrv)
    push.subscribe(topic, sql=SUBSCRIBED_SQL)
    push.register_listener(_never_called)
    for consumer in (pull, push):
        with pytest.raises(FilterRefusedError) as caught:
            await consumer.start()
        error = caught.value
        assert (error.code, error.addr, error.broker_name, error.topic) == (
            expected_code,
            broker.addr,
            broker.name,
            topic,
        )
        text = str(error)
        assert f"broker {broker.name} ({broker.addr})" in text and advice in text, text
        assert error.remark == REFUSED_REMARK
    async with TopicReader(
        ConnectionOptions(namesrv=(cluster.namesrv,)), topic, filter_sql=SUBSCRIBED_SQL
    ) as r:
        with pytest.raises(SourceReadError, match=r"option 'filter\.sql': broker"):
            await r.check_filter(unique_name("SqlOffSparkCg"))

    # Apache's own consumer is stopped at start with the same answer
    java = java_client(_release(cluster))
    result = await asyncio.to_thread(
        java.pull_consume,
        cluster.namesrv,
        unique_name("SqlOffJavaCg"),
        topic,
        extra=["--sql", SUBSCRIBED_SQL],
        timeout=JAVA_TIMEOUT_S,
    )
    [failure] = result.errors
    assert (failure["stage"], failure["response_code"]) == ("start", ResponseCode.SYSTEM_ERROR), failure
    assert failure["error_message"] == REFUSED_REMARK, failure
