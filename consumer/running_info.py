"""Answering GET_CONSUMER_RUNNING_INFO: what this consumer is, holds and achieves, as Java's client says it.

An operator's ``mqadmin consumerStatus`` (or a dashboard) asks a broker, which relays the question to the
client by its client id; Java answers from ``MQClientInstance.consumerRunningInfo``. The answer must read
like a Java client's, because the tools compare the members of a group by it:

* ``properties`` -- the consumer object's fields by their Java names (``MixAll.object2Properties``), each
  value as Java's ``toString`` prints it, then ``PROP_CONSUMEORDERLY`` / ``PROP_THREADPOOL_CORE_SIZE``
  (push only), ``PROP_CONSUMER_START_TIMESTAMP``, ``PROP_NAMESERVER_ADDR`` (each address followed by ``;``),
  ``PROP_CONSUME_TYPE`` and ``PROP_CLIENT_VERSION`` (the version name this client announces);
* ``subscriptionSet``, and ``mqTable``: every held queue with its committed offset and window
  (push; the lite pull consumer from 5.x on, as Java's);
* ``statusTable`` (push): per subscribed topic, the figures of :mod:`consumer.stats`;
* ``jstack`` only when the request asks for it.

A request naming another group gets SYSTEM_ERROR with Java's remark.
"""

from __future__ import annotations

import datetime as dt
import enum
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from consumer import commands
from consumer.allocate import AllocateStrategy, strategy_named
from consumer.config import AllocateStrategyName
from consumer.core import ConsumerCore
from consumer.diagnostics import jstack
from consumer.errors import ConsumerError
from consumer.offset_store import ReadOffsetType
from consumer.process_queue import ProcessQueue
from rocketmq_wire.bodies import running_info as body
from rocketmq_wire.bodies.heartbeat import ConsumeType
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import MQVersion, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.consumer import GetConsumerRunningInfoRequestHeader
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.running_info")

#: ``UtilAll.timeMillisToHumanString3``, the layout of ``consumeTimestamp``.
_JAVA_TIMESTAMP = "%Y%m%d%H%M%S"
#: The names Java's ``AllocateMessageQueueStrategy.getName()`` gives the built-in strategies.
_STRATEGY_NAMES = {"averagely": "AVG", "circle": "AVG_BY_CIRCLE", "by_config": "CONFIG"}

#: ``(Java field name, value)``; a ``None`` value is left out, as Java skips null fields.
Field = tuple[str, Any]


def not_this_group(group: str | None) -> str:
    """Java's remark when a relayed request names a group this client does not run."""
    return f"The Consumer Group <{group}> not exist in this consumer"


def java_text(value: Any) -> str:
    """A field value as Java's ``toString`` prints it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, enum.Enum):
        return str(value.value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def java_timestamp(epoch_ms: int) -> str:
    """Epoch milliseconds as ``yyyyMMddHHmmss`` in local time."""
    return dt.datetime.fromtimestamp(epoch_ms / 1000).strftime(_JAVA_TIMESTAMP)


def strategy_label(name: str | None, strategy: object) -> str:
    """What ``allocateMessageQueueStrategy`` shows: Java's name of a built-in strategy, else the callable."""
    if name is not None and name in _STRATEGY_NAMES:
        return _STRATEGY_NAMES[name]
    return getattr(strategy, "__qualname__", None) or type(strategy).__qualname__


def chosen_strategy(
    core: ConsumerCore,
    strategy: AllocateStrategyName | str | AllocateStrategy,
    configured: Sequence[MessageQueue],
) -> tuple[AllocateStrategy, str]:
    """A push or lite pull consumer's ``allocate_strategy`` argument as the callable it rebalances with, and
    the label its running info shows for it; ``configured`` serves ``by_config``, in the user's namespace."""
    if isinstance(strategy, str):
        chosen = strategy_named(strategy, [core.wire_queue(q) for q in configured])
        return chosen, strategy_label(str(strategy), chosen)
    return strategy, strategy_label(None, strategy)


def client_fields(core: ConsumerCore) -> list[Field]:
    """The ``ClientConfig`` fields (a 5.x client lists them after the consumer's own)."""
    config = core.config
    ip, _, instance = core.client.client_id.partition("@")
    return [
        ("namesrvAddr", ";".join(core.namesrv_addresses)),
        ("clientIP", ip),
        ("instanceName", config.instance_name or instance),
        ("namespace", config.namespace),
        ("pollNameServerInterval", config.poll_namesrv_interval_ms),
        ("heartbeatBrokerInterval", config.heartbeat_interval_ms),
        ("persistConsumerOffsetInterval", config.persist_offset_interval_ms),
        ("vipChannelEnabled", False),
        ("useTLS", config.ssl is not None),
        ("mqClientApiTimeout", config.request_timeout_ms),
        ("language", "PYTHON"),
    ]


def push_fields(core: ConsumerCore, strategy: str) -> list[Field]:
    """``DefaultMQPushConsumer``'s fields that have a counterpart here, in Java's declaration order."""
    config = core.config
    workers = config.consume_workers
    return [
        ("consumerGroup", core.group),
        ("messageModel", core.model),
        ("consumeFromWhere", core.consume_from),
        ("consumeTimestamp", java_timestamp(core.timestamp_ms)),
        ("allocateMessageQueueStrategy", strategy),
        ("consumeThreadMin", workers),
        ("consumeThreadMax", workers),
        ("consumeConcurrentlyMaxSpan", config.consume_max_span),
        ("pullThresholdForQueue", config.pull_threshold_for_queue),
        ("pullThresholdSizeForQueue", config.pull_threshold_size_for_queue_mib),
        ("pullInterval", config.pull_interval_ms),
        ("consumeMessageBatchMaxSize", config.consume_batch_max_size),
        ("pullBatchSize", config.pull_batch_size),
        ("pullBatchSizeInBytes", config.pull_batch_size_bytes),
        ("postSubscriptionWhenPull", config.post_subscription_when_pull),
        ("unitMode", False),
        ("maxReconsumeTimes", -1 if config.max_reconsume_times is None else config.max_reconsume_times),
        ("suspendCurrentQueueTimeMillis", config.suspend_current_queue_ms),
        ("consumeTimeout", config.consume_timeout_minutes),
        ("awaitTerminationMillisWhenShutdown", config.await_termination_ms),
    ]


def lite_fields(core: ConsumerCore, strategy: str, auto_commit: bool) -> list[Field]:
    """``DefaultLitePullConsumer``'s fields that have a counterpart here, in Java's declaration order."""
    config = core.config
    return [
        ("consumerGroup", core.group),
        ("brokerSuspendMaxTimeMillis", config.broker_suspend_max_ms or 20_000),
        ("consumerTimeoutMillisWhenSuspend", config.consumer_timeout_when_suspend_ms),
        ("messageModel", core.model),
        ("allocateMessageQueueStrategy", strategy),
        ("unitMode", False),
        ("autoCommit", auto_commit),
        ("autoCommitIntervalMillis", config.auto_commit_interval_ms),
        ("pullBatchSize", config.pull_batch_size),
        ("pullThresholdForAll", config.pull_threshold_for_all),
        ("consumeMaxSpan", config.consume_max_span),
        ("pullThresholdForQueue", config.pull_threshold_for_queue),
        ("pullThresholdSizeForQueue", config.pull_threshold_size_for_queue_mib),
        ("consumeFromWhere", core.consume_from),
        ("consumeTimestamp", java_timestamp(core.timestamp_ms)),
    ]


def instance_fields(core: ConsumerCore, consume_type: ConsumeType) -> list[Field]:
    """What ``MQClientInstance`` adds last: NameServers, consume type, client version."""
    return [
        (body.PROP_NAMESERVER_ADDR, "".join(f"{addr};" for addr in core.namesrv_addresses)),
        (body.PROP_CONSUME_TYPE, consume_type),
        (body.PROP_CLIENT_VERSION, MQVersion.name_of(core.config.version)),
    ]


def java_properties(fields: Iterable[Field]) -> dict[str, str]:
    """The ``Properties`` of ``fields``, in the order they were set (a name set twice keeps its place)."""
    return {name: java_text(value) for name, value in fields if value is not None}


async def _commit_offset(core: ConsumerCore, queue: MessageQueue) -> int:
    """Java's ``readOffset(MEMORY_FIRST_THEN_STORE)``; -1 when the store cannot say."""
    try:
        return await core.offsets.read(queue, ReadOffsetType.MEMORY_THEN_STORE)
    except (ConsumerError, RemotingError) as exc:
        logger.info("group %s: no committed offset of %s to report: %s", core.wire_group, queue, exc)
        return -1


async def build(
    core: ConsumerCore,
    properties: dict[str, str],
    held: Iterable[tuple[MessageQueue, ProcessQueue]],
    *,
    with_status: bool,
) -> body.ConsumerRunningInfo:
    """The body, without ``jstack``; ``held``: the queues read now and their windows."""
    mq_table = {queue: pq.info(await _commit_offset(core, queue)) for queue, pq in list(held)}
    subscriptions = core.subscriptions.data()
    status_table = (
        {data.topic: core.stats.status(data.topic) for data in subscriptions if data.topic is not None}
        if with_status
        else {}
    )
    v5 = commands.is_v5(core.config.version)
    return body.ConsumerRunningInfo(
        properties=properties,
        subscription_set=subscriptions,
        mq_table=mq_table,
        status_table=status_table,
        mq_pop_table={} if v5 else None,
        user_consumer_info={} if v5 else None,
    )


async def answer(
    request: RemotingCommand,
    core: ConsumerCore,
    running_info: Callable[[], Awaitable[body.ConsumerRunningInfo]],
) -> RemotingCommand:
    """The response to a relayed GET_CONSUMER_RUNNING_INFO (Java's ``ClientRemotingProcessor``)."""
    version = core.config.version
    try:
        header = request.read_header(GetConsumerRunningInfoRequestHeader)
    except CodecError as exc:
        remark = f"unreadable GET_CONSUMER_RUNNING_INFO header: {exc}"
        return commands.client_response(request, version, ResponseCode.SYSTEM_ERROR, remark)
    if header.consumer_group != core.wire_group:
        logger.info("running info asked of group %s, which this client does not run", header.consumer_group)
        remark = not_this_group(header.consumer_group)
        return commands.client_response(request, version, ResponseCode.SYSTEM_ERROR, remark)
    info = await running_info()
    if header.jstack_enable:
        info.jstack = jstack()
    logger.info("group %s: answering a running-info request", core.wire_group)
    return commands.client_response(request, version, ResponseCode.SUCCESS, body=info.to_json())
