"""What a push consumer's handler is given and what it answers.

One status enum serves both kinds of handler, with Java's names: a concurrent handler answers
``CONSUME_SUCCESS`` or ``RECONSUME_LATER`` (the message comes back later through the retry topic), an orderly
one ``SUCCESS`` or ``SUSPEND_CURRENT_QUEUE_A_MOMENT`` (the queue pauses and the same messages are handed in
again, so nothing behind them overtakes). A handler that raises, or returns ``None``, counts as a failure.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.message import MessageExt


class ConsumeStatus(enum.Enum):
    """A handler's verdict on the messages it was given."""

    #: Concurrent: every message is done.
    CONSUME_SUCCESS = "CONSUME_SUCCESS"
    #: Concurrent: redeliver the messages after ``ack_index`` later (through the retry topic).
    RECONSUME_LATER = "RECONSUME_LATER"
    #: Orderly: done, commit and go on.
    SUCCESS = "SUCCESS"
    #: Orderly: pause this queue for a moment, then hand in the same messages again.
    SUSPEND_CURRENT_QUEUE_A_MOMENT = "SUSPEND_CURRENT_QUEUE_A_MOMENT"

    @property
    def succeeded(self) -> bool:
        return self in (ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.SUCCESS)


@dataclasses.dataclass
class ConsumeConcurrentlyContext:
    """Given to a concurrent handler; it may set the fields to steer what happens after a failure."""

    message_queue: MessageQueue
    #: 0: the broker picks the delay from the times already retried; > 0: that delay level; < 0: straight
    #: to the dead-letter queue.
    delay_level_when_next_consume: int = 0
    #: On CONSUME_SUCCESS, messages after this index are redelivered anyway (-1: all of them); by default
    #: every message counts as done.
    ack_index: int = 0x7FFFFFFF


@dataclasses.dataclass
class ConsumeOrderlyContext:
    """Given to an orderly handler."""

    message_queue: MessageQueue
    #: How long SUSPEND_CURRENT_QUEUE_A_MOMENT pauses the queue (-1: the consumer's setting).
    suspend_current_queue_ms: float = -1


ConsumeContext: TypeAlias = ConsumeConcurrentlyContext | ConsumeOrderlyContext

#: ``async def handler(messages, context) -> ConsumeStatus``.
ConcurrentHandler: TypeAlias = Callable[
    [list[MessageExt], ConsumeConcurrentlyContext], Awaitable[ConsumeStatus | None]
]
OrderlyHandler: TypeAlias = Callable[
    [list[MessageExt], ConsumeOrderlyContext], Awaitable[ConsumeStatus | None]
]
