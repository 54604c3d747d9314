"""A RocketMQ producer, wire-compatible with Apache's Java client (4.9.x behaviour by default).

``Producer`` and ``TransactionProducer`` are asyncio-first; ``BlockingProducer`` and
``BlockingTransactionProducer`` offer the same methods to code that is not async; ``producer.compat`` is a
drop-in for the official Python client's producer API. Modules: ``config`` (settings, Java defaults),
``sender`` (requests and responses, no I/O), ``routes`` / ``namesrv`` (cluster metadata), ``fault``
(latency-based broker avoidance), ``heartbeat``, ``selectors`` (ordered sends), ``transaction``.
"""

from producer.blocking import BlockingProducer, BlockingTransactionProducer
from producer.config import ProducerConfig
from producer.errors import (
    BrokerError,
    MessageTooLargeError,
    MessageValidationError,
    NoRouteError,
    ProducerError,
    ProducerStateError,
    SendFailedError,
    SendTimeoutError,
)
from producer.producer import Producer
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

__all__ = [
    "BlockingProducer",
    "BlockingTransactionProducer",
    "BrokerError",
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
    "SendFailedError",
    "SendResult",
    "SendStatus",
    "SendTimeoutError",
    "TransactionChecker",
    "TransactionProducer",
    "TransactionSendResult",
    "select_by_hash",
    "select_random",
]
