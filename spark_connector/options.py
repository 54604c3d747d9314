"""The ``.option(...)`` settings of the sink and the source, checked once on the driver.

Spark hands a data source its options as a case-insensitive map of strings. Everything is parsed here,
before any task starts, so a typo in a number or a missing NameServer address fails the query at once with
the option's name in the message, rather than inside every task. The parsed settings are plain frozen
dataclasses: Spark pickles them to the executors together with the writer or reader.
"""

from __future__ import annotations

import dataclasses
import re
import ssl
from collections.abc import Mapping

from client.namesrv import parse_namesrv_list
from rocketmq_wire.topics import validate_group, validate_topic
from rocketmq_wire.transport.address import parse_address
from spark_connector.errors import OptionError
from spark_connector.offsets import OffsetSpec, parse_offset_spec
from spark_connector.timestamps import TimestampSpec, parse_timestamp_spec

#: Producer group of the sink's producers when the ``group`` option is not given.
DEFAULT_SINK_GROUP = "SparkRocketMQSink"
#: Consumer group named in the source's pull requests when ``group`` is not given.
DEFAULT_SOURCE_GROUP = "SparkRocketMQSource"
#: The producer's own default send budget (Java's ``sendMsgTimeout``).
DEFAULT_SEND_TIMEOUT_MS = 3000
#: Requests (single sends or batches) a task keeps unanswered at once.
DEFAULT_MAX_IN_FLIGHT = 64
#: How long one request may keep being refused as busy before its task fails.
DEFAULT_FLOW_CONTROL_TIMEOUT_MS = 120_000
#: Messages per PULL_MESSAGE (Java's ``pullBatchSize`` default).
DEFAULT_PULL_BATCH_SIZE = 32
DEFAULT_PULL_TIMEOUT_MS = 10_000
#: How long ``minMessagesPerTrigger`` may hold a micro-batch back (Kafka's ``maxTriggerDelay`` default).
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|min|h)?\s*$", re.IGNORECASE)
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConnectionOptions:
    """What both directions need to reach a cluster."""

    namesrv: tuple[str, ...]
    namespace: str | None = None
    access_key: str | None = None
    secret_key: str | None = None
    #: Connect with TLS (option ``tls``), with the client settings of Apache's ``tls.properties`` file
    #: ``tls.config.file`` (read where the connection is made: on the executors).
    tls: bool = False
    tls_config_file: str | None = None

    @property
    def namesrv_addr(self) -> str:
        """Java's ``namesrvAddr`` form: addresses separated by semicolons."""
        return ";".join(self.namesrv)

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context connections use, or None for plain ones (an SSLContext cannot be pickled to
        executors, so each side builds its own from these options)."""
        if not self.tls:
            return None
        from rocketmq_wire.transport.tls import TlsError, client_context

        try:
            return client_context(self.tls_config_file)
        except TlsError as exc:
            raise OptionError(f"option 'tls.config.file': {exc}") from None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SinkOptions:
    """Settings of ``df.write.format("rocketmq")`` and ``df.writeStream.format("rocketmq")``."""

    connection: ConnectionOptions
    topic: str | None = None
    group: str = DEFAULT_SINK_GROUP
    send_timeout_ms: int = DEFAULT_SEND_TIMEOUT_MS
    batch_size: int = 1
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    flow_control_timeout_ms: int = DEFAULT_FLOW_CONTROL_TIMEOUT_MS
    summary_path: str | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class SourceOptions:
    """Settings of ``spark.read.format("rocketmq")`` and ``spark.readStream.format("rocketmq")``."""

    connection: ConnectionOptions
    #: Exactly one of the three selects the topics: ``topic`` (one; offsets JSON without the topic level, as
    #: before), ``topics`` (a comma list) or ``topic_pattern`` (a regex matched whole against the NameServers'
    #: topic list at every micro-batch).
    topic: str | None = None
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    group: str = DEFAULT_SOURCE_GROUP
    starting_offsets: OffsetSpec = "earliest"
    ending_offsets: OffsetSpec = "latest"
    #: Positions by store time; where one names a queue it wins over the offsets option (as in Kafka).
    starting_timestamps: TimestampSpec | None = None
    ending_timestamps: TimestampSpec | None = None
    pull_batch_size: int = DEFAULT_PULL_BATCH_SIZE
    pull_timeout_ms: int = DEFAULT_PULL_TIMEOUT_MS
    max_messages_per_trigger: int | None = None
    #: Streaming: hold a micro-batch back until this many messages wait, unless
    #: ``max_trigger_delay_ms`` passed since the last one (Kafka's ``minOffsetsPerTrigger``).
    min_messages_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    #: A SQL92 expression over message properties (option ``filter.sql``): only matching messages become rows,
    #: chosen by the brokers, which are asked first whether they filter so (``enablePropertyFilter``).
    filter_sql: str | None = None
    #: A tag expression (option ``filter.tags``: ``TagA || TagB``), filtered by the brokers as a consumer's
    #: subscription is.
    filter_tags: str | None = None
    #: Fail a streaming query whose next offsets were deleted (retention) instead of skipping them.
    fail_on_data_loss: bool = True
    #: File the driver appends one JSON line of figures to per planned micro-batch.
    metrics_path: str | None = None

    @property
    def named_topics(self) -> tuple[str, ...]:
        """The topics named by ``topic`` or ``topics`` (none with ``topicPattern``)."""
        return (self.topic,) if self.topic is not None else self.topics

    @property
    def described(self) -> str:
        """How messages name the query's topics."""
        if self.topic_pattern is not None:
            return f"topics matching {self.topic_pattern!r}"
        return ", ".join(self.named_topics)


SINK_OPTION_NAMES = frozenset(
    {
        "namesrv",
        "topic",
        "group",
        "send.timeout.ms",
        "batch.size",
        "max.in.flight",
        "flow.control.timeout.ms",
        "access.key",
        "secret.key",
        "namespace",
        "summary.path",
        "tls",
        "tls.config.file",
    }
)
SOURCE_OPTION_NAMES = frozenset(
    {
        "namesrv",
        "topic",
        "group",
        "startingoffsets",
        "endingoffsets",
        "access.key",
        "secret.key",
        "namespace",
        "pull.batch.size",
        "pull.timeout.ms",
        "maxmessagespertrigger",
        "minmessagespertrigger",
        "maxtriggerdelay",
        "filter.sql",
        "filter.tags",
        "failondataloss",
        "startingoffsetsbytimestamp",
        "endingoffsetsbytimestamp",
        "topics",
        "topicpattern",
        "metrics.path",
        "tls",
        "tls.config.file",
    }
)


def _lowered(options: Mapping[str, str]) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in options.items() if value is not None}


def _text(options: Mapping[str, str], name: str) -> str | None:
    value = options.get(name)
    if value is None:
        return None
    value = value.strip()
    return value or None


def _positive_int(
    options: Mapping[str, str],
    key: str,
    default: int,
    *,
    at_most: int | None = None,
    name: str | None = None,
) -> int:
    """``options[key]`` as a positive int; ``name`` is how messages spell the option (default ``key``)."""
    name = name or key
    raw = _text(options, key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise OptionError(f"option {name!r} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise OptionError(f"option {name!r} must be a positive integer, got {value}")
    if at_most is not None and value > at_most:
        raise OptionError(f"option {name!r} must be at most {at_most}, got {value}")
    return value


def _connection(options: Mapping[str, str]) -> ConnectionOptions:
    raw = _text(options, "namesrv")
    if raw is None:
        raise OptionError(
            "option 'namesrv' is required: the NameServer address(es), e.g. 'host:9876;host2:9876'"
        )
    try:
        addresses = parse_namesrv_list(raw)
        for address in addresses:
            parse_address(address)
    except ValueError as exc:
        raise OptionError(f"option 'namesrv' is not a list of host:port addresses: {exc}") from None
    access_key = _text(options, "access.key")
    secret_key = _text(options, "secret.key")
    if (access_key is None) != (secret_key is None):
        raise OptionError("options 'access.key' and 'secret.key' go together: give both or neither")
    namespace = _text(options, "namespace")
    if namespace is not None and validate_topic(namespace) is not None:
        raise OptionError(
            f"option 'namespace' {namespace!r} may only hold letters, digits, '_', '-', '|', '%'"
        )
    tls = _text(options, "tls")
    if tls is not None and tls.lower() not in ("true", "false"):
        raise OptionError(f"option 'tls' must be true or false, got {tls!r}")
    connection = ConnectionOptions(
        namesrv=tuple(addresses),
        namespace=namespace,
        access_key=access_key,
        secret_key=secret_key,
        tls=tls is not None and tls.lower() == "true",
        tls_config_file=_text(options, "tls.config.file"),
    )
    connection.ssl_context()  # a bad tls.config.file fails here, on the driver, not in every task
    return connection


def _topic(options: Mapping[str, str], *, required: bool) -> str | None:
    topic = _text(options, "topic")
    if topic is None:
        if required:
            raise OptionError("option 'topic' is required")
        return None
    problem = validate_topic(topic)
    if problem is not None:
        raise OptionError(f"option 'topic' {topic!r}: {problem[1]}")
    return topic


def _topics(options: Mapping[str, str]) -> tuple[str | None, tuple[str, ...], str | None]:
    """``(topic, topics, topic_pattern)``: exactly one of the three options, each checked."""
    given = [name for name in ("topic", "topics", "topicpattern") if _text(options, name) is not None]
    if len(given) != 1:
        spelled = {"topic": "topic", "topics": "topics", "topicpattern": "topicPattern"}
        which = ", ".join(repr(spelled[name]) for name in given) or "none"
        raise OptionError(
            "give exactly one of the options 'topic' (one topic), 'topics' (a comma list) or 'topicPattern' "
            f"(a regex), got {which}"
        )
    if given[0] == "topic":
        return _topic(options, required=True), (), None
    if given[0] == "topics":
        raw = _text(options, "topics") or ""
        names = [name.strip() for name in raw.split(",") if name.strip()]
        for name in names:
            problem = validate_topic(name)
            if problem is not None:
                raise OptionError(f"option 'topics': topic {name!r}: {problem[1]}")
        if not names or len(set(names)) != len(names):
            raise OptionError(
                f"option 'topics' must list distinct topic names separated by commas, got {raw!r}"
            )
        return None, tuple(names), None
    pattern = _text(options, "topicpattern") or ""
    try:
        re.compile(pattern)
    except re.error as exc:
        raise OptionError(f"option 'topicPattern' is not a regular expression: {exc}") from None
    return None, (), pattern


def _boolean(options: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    raw = _text(options, key)
    if raw is None:
        return default
    if raw.lower() not in ("true", "false"):
        raise OptionError(f"option {name!r} must be true or false, got {raw!r}")
    return raw.lower() == "true"


def parse_duration_ms(raw: str, name: str) -> int:
    """``500ms``, ``30s``, ``5m``, ``1h`` or a bare number of milliseconds (Spark writes ``15m``)."""
    match = _DURATION.match(raw)
    if match is None:
        raise OptionError(f"option {name!r} must be a duration like '30s', '5m' or '500ms', got {raw!r}")
    return int(match.group(1)) * _DURATION_MS[(match.group(2) or "ms").lower()]


def _filters(options: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(filter_sql, filter_tags)``: at most one, as a consumer subscribes with one expression."""
    sql = _filter_sql(options)
    raw_tags = options.get("filter.tags")
    if raw_tags is not None and not raw_tags.strip():
        raise OptionError("option 'filter.tags' is empty: give tags like 'TagA || TagB', or leave it out")
    tags = raw_tags.strip() if raw_tags is not None else None
    if sql is not None and tags is not None:
        raise OptionError(
            "options 'filter.sql' and 'filter.tags' go one at a time: a subscription has one filter"
        )
    if tags is not None:
        from rocketmq_wire.bodies.subscription import build_subscription
        from rocketmq_wire.errors import CodecError

        try:
            build_subscription("T", tags)
        except CodecError as exc:
            raise OptionError(f"option 'filter.tags': {exc}") from None
    return sql, tags


def _group(options: Mapping[str, str], default: str) -> str:
    group = _text(options, "group") or default
    problem = validate_group(group)
    if problem is not None:
        raise OptionError(f"option 'group': {problem}")
    return group


def _filter_sql(options: Mapping[str, str]) -> str | None:
    """The ``filter.sql`` expression as written (spaces inside kept); a given but blank one is refused, as
    it would select nothing the author meant."""
    raw = options.get("filter.sql")
    if raw is None:
        return None
    if not raw.strip():
        raise OptionError(
            "option 'filter.sql' is empty: give a SQL92 expression, e.g. \"a > 5\", or leave it out"
        )
    return raw


def unknown_options(options: Mapping[str, str], known: frozenset[str]) -> list[str]:
    """Option names the connector does not read (Spark adds some of its own, e.g. ``path``)."""
    return sorted(name for name in _lowered(options) if name not in known)


def parse_sink_options(options: Mapping[str, str]) -> SinkOptions:
    """The sink's settings; raises :class:`OptionError` naming the first unusable option."""
    lowered = _lowered(options)
    return SinkOptions(
        connection=_connection(lowered),
        topic=_topic(lowered, required=False),
        group=_group(lowered, DEFAULT_SINK_GROUP),
        send_timeout_ms=_positive_int(lowered, "send.timeout.ms", DEFAULT_SEND_TIMEOUT_MS),
        batch_size=_positive_int(lowered, "batch.size", 1, at_most=10_000),
        max_in_flight=_positive_int(lowered, "max.in.flight", DEFAULT_MAX_IN_FLIGHT, at_most=65_536),
        flow_control_timeout_ms=_positive_int(
            lowered, "flow.control.timeout.ms", DEFAULT_FLOW_CONTROL_TIMEOUT_MS
        ),
        summary_path=_text(lowered, "summary.path"),
    )


def parse_source_options(options: Mapping[str, str]) -> SourceOptions:
    """The source's settings; raises :class:`OptionError` naming the first unusable option."""
    lowered = _lowered(options)
    topic, topics, pattern = _topics(lowered)
    starting = parse_offset_spec(_text(lowered, "startingoffsets") or "earliest", "startingOffsets", topic)
    ending = parse_offset_spec(_text(lowered, "endingoffsets") or "latest", "endingOffsets", topic)
    if starting == "latest" and ending == "earliest":
        raise OptionError("startingOffsets 'latest' with endingOffsets 'earliest' selects nothing")
    stamps = {}
    for key, name in (
        ("startingoffsetsbytimestamp", "startingOffsetsByTimestamp"),
        ("endingoffsetsbytimestamp", "endingOffsetsByTimestamp"),
    ):
        raw = _text(lowered, key)
        stamps[key] = None if raw is None else parse_timestamp_spec(raw, name, topic)
    max_per_trigger = _text(lowered, "maxmessagespertrigger")
    min_per_trigger = _text(lowered, "minmessagespertrigger")
    delay = _text(lowered, "maxtriggerdelay")
    if delay is not None and min_per_trigger is None:
        raise OptionError("option 'maxTriggerDelay' bounds the wait of 'minMessagesPerTrigger': set that too")
    filter_sql, filter_tags = _filters(lowered)
    return SourceOptions(
        connection=_connection(lowered),
        topic=topic,
        topics=topics,
        topic_pattern=pattern,
        group=_group(lowered, DEFAULT_SOURCE_GROUP),
        starting_offsets=starting,
        ending_offsets=ending,
        starting_timestamps=stamps["startingoffsetsbytimestamp"],
        ending_timestamps=stamps["endingoffsetsbytimestamp"],
        pull_batch_size=_positive_int(lowered, "pull.batch.size", DEFAULT_PULL_BATCH_SIZE, at_most=1024),
        pull_timeout_ms=_positive_int(lowered, "pull.timeout.ms", DEFAULT_PULL_TIMEOUT_MS),
        max_messages_per_trigger=(
            None
            if max_per_trigger is None
            else _positive_int(lowered, "maxmessagespertrigger", 1, name="maxMessagesPerTrigger")
        ),
        min_messages_per_trigger=(
            None
            if min_per_trigger is None
            else _positive_int(lowered, "minmessagespertrigger", 1, name="minMessagesPerTrigger")
        ),
        max_trigger_delay_ms=(
            DEFAULT_MAX_TRIGGER_DELAY_MS if delay is None else parse_duration_ms(delay, "maxTriggerDelay")
        ),
        filter_sql=filter_sql,
        filter_tags=filter_tags,
        fail_on_data_loss=_boolean(lowered, "failondataloss", "failOnDataLoss", True),
        metrics_path=_text(lowered, "metrics.path"),
    )
