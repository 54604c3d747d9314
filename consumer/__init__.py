"""RocketMQ consumers, wire-compatible with Apache's Java client (4.9.x behaviour by default).

Two ways to consume, both asyncio:

* :class:`PushConsumer` -- join a consumer group; the group's queues are shared among its members (or, in
  BROADCASTING mode, every member reads everything) and messages are handed to your handler as they
  arrive, concurrently or in order per queue. Failed messages come back through the group's retry topic
  and end in its dead-letter queue after ``max_reconsume_times``::

      async def handle(messages: list[MessageExt], context: ConsumeConcurrentlyContext) -> ConsumeStatus:
          for message in messages:
              print(message.topic, message.queue_offset, message.body)
          return ConsumeStatus.CONSUME_SUCCESS

      consumer = PushConsumer("OrderHandlers", "ns1:9876;ns2:9876", consume_from="FIRST_OFFSET")
      consumer.subscribe("Orders", "created || paid")  # or sql="amount > 100 AND region = 'eu'"
      consumer.register_listener(handle)               # orderly=True for per-queue order
      async with consumer:
          ...

* :class:`PullConsumer` -- ask for messages yourself with ``await consumer.poll(timeout)``, after
  ``subscribe`` (group-shared queues) or ``assign`` (exactly these queues); ``seek``, ``seek_to_begin``,
  ``seek_to_end``, ``seek_by_timestamp``, ``commit`` and ``committed`` control the position.

Messages are :class:`rocketmq_wire.message.MessageExt` with everything a Java consumer sees (ids, tags, keys,
properties, decompressed body, hosts, timestamps, reconsume times); a redelivered message shows its original
topic. Offsets are committed to the brokers every 5 s and on shutdown (broadcasting: to a local file).

Both answer what brokers relay to them as Java's client does: NOTIFY_CONSUMER_IDS_CHANGED (rebalance now),
RESET_CONSUMER_CLIENT_OFFSET, GET_CONSUMER_RUNNING_INFO (``running_info()``: settings, queues, per-topic
pull and consume figures) and, for the push consumer, CONSUME_MESSAGE_DIRECTLY (``consume_directly()``).
A concurrent push handler still running after ``consume_timeout_minutes`` (15) has its message sent back.

Modules: ``config`` (Java's defaults), ``allocate`` (queue sharing), ``rebalance``, ``queue_reader`` /
``lite_fetcher`` and ``puller`` (pulling), ``fetch`` (pull answers), ``process_queue`` (in-flight window),
``consume_concurrently`` / ``consume_orderly`` and ``queue_locks``, ``offset_store``, ``filters`` (SQL92
subscriptions and the brokers' CHECK_CLIENT_CONFIG before one is used), ``positioning`` (where a
new queue starts), ``commands`` and ``broker_api`` (the requests), ``client`` and ``routes`` (routes,
heartbeats), ``core``, ``push`` and ``lite_pull`` (the consumers), ``stats`` (pull and consume figures),
``running_info`` / ``direct`` / ``diagnostics`` (answering operators' requests), ``trace`` (message trace:
with ``enable_msg_trace=True`` the push consumer writes ``SubBefore``/``SubAfter`` records, as Java's
``enableMsgTrace``); ``testing`` runs a NameServer and Broker in-process for tests.

The names above are loaded on first use, so that importing one module of the package (``consumer.allocate``,
``consumer.errors``: the admin client needs those) does not import both consumers.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from consumer.allocate import (
        AllocateStrategy,
        allocate_averagely,
        allocate_by_circle,
        allocate_by_config,
        strategy_named,
    )
    from consumer.config import AllocateStrategyName, ConsumerConfig
    from consumer.errors import (
        BrokerError,
        BrokerNotFoundError,
        BrokerVersionError,
        ConsumerError,
        ConsumerStateError,
        FilterRefusedError,
        InvalidOffsetError,
        OffsetNotFoundError,
    )
    from consumer.listener import ConsumeConcurrentlyContext, ConsumeOrderlyContext, ConsumeStatus
    from consumer.lite_fetcher import PolledBatch
    from consumer.lite_pull import PullConsumer
    from consumer.push import PushConsumer
    from consumer.rebalance import RebalanceListener
    from consumer.simple import SimpleConsumer
    from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere, MessageModel
    from rocketmq_wire.bodies.message_queue import MessageQueue
    from rocketmq_wire.message import MessageExt

#: Each exported name -> the module defining it.
_EXPORTS = {
    "AllocateStrategy": "consumer.allocate",
    "allocate_averagely": "consumer.allocate",
    "allocate_by_circle": "consumer.allocate",
    "allocate_by_config": "consumer.allocate",
    "strategy_named": "consumer.allocate",
    "AllocateStrategyName": "consumer.config",
    "ConsumerConfig": "consumer.config",
    "BrokerError": "consumer.errors",
    "BrokerNotFoundError": "consumer.errors",
    "BrokerVersionError": "consumer.errors",
    "ConsumerError": "consumer.errors",
    "ConsumerStateError": "consumer.errors",
    "FilterRefusedError": "consumer.errors",
    "InvalidOffsetError": "consumer.errors",
    "OffsetNotFoundError": "consumer.errors",
    "ConsumeConcurrentlyContext": "consumer.listener",
    "ConsumeOrderlyContext": "consumer.listener",
    "ConsumeStatus": "consumer.listener",
    "PolledBatch": "consumer.lite_fetcher",
    "PullConsumer": "consumer.lite_pull",
    "PushConsumer": "consumer.push",
    "RebalanceListener": "consumer.rebalance",
    "SimpleConsumer": "consumer.simple",
    "ConsumeFromWhere": "rocketmq_wire.bodies.heartbeat",
    "MessageModel": "rocketmq_wire.bodies.heartbeat",
    "MessageQueue": "rocketmq_wire.bodies.message_queue",
    "MessageExt": "rocketmq_wire.message",
}

__all__ = [
    "AllocateStrategy",
    "AllocateStrategyName",
    "BrokerError",
    "BrokerNotFoundError",
    "BrokerVersionError",
    "ConsumeConcurrentlyContext",
    "ConsumeFromWhere",
    "ConsumeOrderlyContext",
    "ConsumeStatus",
    "ConsumerConfig",
    "ConsumerError",
    "ConsumerStateError",
    "FilterRefusedError",
    "InvalidOffsetError",
    "MessageExt",
    "MessageModel",
    "MessageQueue",
    "OffsetNotFoundError",
    "PolledBatch",
    "PullConsumer",
    "PushConsumer",
    "RebalanceListener",
    "SimpleConsumer",
    "allocate_averagely",
    "allocate_by_circle",
    "allocate_by_config",
    "strategy_named",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
