"""A RocketMQ producer, wire-compatible with Apache's Java client (4.9.x behaviour by default).

``Producer`` and ``TransactionProducer`` are asyncio-first; ``BlockingProducer`` and
``BlockingTransactionProducer`` offer the same methods to code that is not async; ``producer.compat`` is a
drop-in for the official Python client's producer API::

    async with Producer("OrderService", "ns1:9876;ns2:9876") as producer:
        result = await producer.send(Message("Orders", b"...", tags="created", keys=["order-42"]))
        await producer.send(Message("Orders", b"..."), sharding_key="customer-7")  # ordered per customer

Modules: ``config`` (settings, Java's defaults), ``sender`` (requests and responses, no I/O), ``routes``
(publish routes per topic), ``fault`` (latency-based broker avoidance), ``flow_control`` (busy brokers:
backoff and resending), ``selectors`` (ordered sends), ``transaction``, ``blocking``, ``compat``, ``trace``
(message trace: ``enable_msg_trace=True`` writes a ``Pub`` record per sent message, and the transaction
producer ``EndTransaction`` records, to ``RMQ_SYS_TRACE_TOPIC`` or ``trace_topic``, as Java's
``enableMsgTrace``/``customizedTraceTopic``, through an internal producer; format in ``rocketmq_wire.trace``).
What every client shares -- the client instance (connections, routes, heartbeats) that the producers and
consumers of one client id share as Java's ``MQClientInstance``, the NameServer client, request signing, the
trace dispatcher -- is the :mod:`client` package; ``ClientInstance``, ``join_instance`` and
``TraceDispatcher`` are re-exported here as they always were.

The names above are loaded on first use, so that importing one module of the package (``producer.config``,
``producer.errors``) does not import every producer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from client.instance import ClientInstance, join_instance
    from client.trace import TraceDispatcher
    from producer.blocking import BlockingProducer, BlockingTransactionProducer
    from producer.config import ProducerConfig
    from producer.errors import (
        BrokerBusyError,
        BrokerError,
        BrokerVersionError,
        DuplicateGroupError,
        MessageTooLargeError,
        MessageValidationError,
        NoRouteError,
        ProducerError,
        ProducerStateError,
        RequestTimeoutError,
        SendFailedError,
        SendTimeoutError,
    )
    from producer.flow_control import BusyAnswer, BusyListener
    from producer.producer import Producer, start_trace_dispatcher
    from producer.result import (
        LocalTransactionState,
        MessageQueue,
        SendResult,
        SendStatus,
        TransactionSendResult,
    )
    from producer.selectors import QueueSelector, select_by_hash, select_random
    from producer.transaction import LocalTransactionExecutor, TransactionChecker, TransactionProducer
    from rocketmq_wire.message import Message, MessageExt

#: Each exported name -> the module defining it.
_EXPORTS = {
    "BlockingProducer": "producer.blocking",
    "BlockingTransactionProducer": "producer.blocking",
    "ProducerConfig": "producer.config",
    "BrokerBusyError": "producer.errors",
    "BrokerError": "producer.errors",
    "BrokerVersionError": "producer.errors",
    "MessageTooLargeError": "producer.errors",
    "MessageValidationError": "producer.errors",
    "NoRouteError": "producer.errors",
    "ProducerError": "producer.errors",
    "ProducerStateError": "producer.errors",
    "RequestTimeoutError": "producer.errors",
    "SendFailedError": "producer.errors",
    "SendTimeoutError": "producer.errors",
    "DuplicateGroupError": "producer.errors",
    "BusyAnswer": "producer.flow_control",
    "BusyListener": "producer.flow_control",
    "ClientInstance": "client.instance",
    "join_instance": "client.instance",
    "Producer": "producer.producer",
    "start_trace_dispatcher": "producer.producer",
    "LocalTransactionState": "producer.result",
    "MessageQueue": "producer.result",
    "SendResult": "producer.result",
    "SendStatus": "producer.result",
    "TransactionSendResult": "producer.result",
    "QueueSelector": "producer.selectors",
    "select_by_hash": "producer.selectors",
    "select_random": "producer.selectors",
    "TraceDispatcher": "client.trace",
    "LocalTransactionExecutor": "producer.transaction",
    "TransactionChecker": "producer.transaction",
    "TransactionProducer": "producer.transaction",
    "Message": "rocketmq_wire.message",
    "MessageExt": "rocketmq_wire.message",
}

__all__ = [
    "BlockingProducer",
    "BlockingTransactionProducer",
    "BrokerBusyError",
    "BrokerError",
    "BrokerVersionError",
    "BusyAnswer",
    "BusyListener",
    "ClientInstance",
    "DuplicateGroupError",
    "LocalTransactionExecutor",
    "LocalTransactionState",
    "Message",
    "MessageExt",
    "MessageQueue",
    "MessageTooLargeError",
    "MessageValidationError",
    "NoRouteError",
    "Producer",
    "ProducerConfig",
    "ProducerError",
    "ProducerStateError",
    "QueueSelector",
    "RequestTimeoutError",
    "SendFailedError",
    "SendResult",
    "SendStatus",
    "SendTimeoutError",
    "TraceDispatcher",
    "TransactionChecker",
    "TransactionProducer",
    "TransactionSendResult",
    "join_instance",
    "select_by_hash",
    "select_random",
    "start_trace_dispatcher",
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
