"""Choosing the queue of an ordered send.

Messages that must stay in order go to one queue, picked from the topic's queue list by a selector. The hash
selector reproduces Java's ``SelectMessageQueueByHash`` exactly, so Python and Java producers sharing a
sharding key put its messages on the same queue.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.javahash import java_string_hash
from rocketmq_wire.message import Message

#: ``selector(queues, message, arg) -> queue``: ``queues`` are the topic's writable queues, in route order.
QueueSelector = Callable[[Sequence[MessageQueue], Message, Any], MessageQueue]


def java_hash_code(value: object) -> int:
    """``arg.hashCode()`` as a signed 32-bit int for the argument types a selector usually gets."""
    if isinstance(value, bool):
        return 1231 if value else 1237
    if isinstance(value, int):
        if -(1 << 31) <= value < (1 << 31):
            return value  # Integer.hashCode
        unsigned = value & 0xFFFFFFFFFFFFFFFF  # Long.hashCode: high half xor low half
        folded = (unsigned ^ (unsigned >> 32)) & 0xFFFFFFFF
        return folded - (1 << 32) if folded >= 1 << 31 else folded
    if isinstance(value, str):
        unsigned = java_string_hash(value)
        return unsigned - (1 << 32) if unsigned >= 1 << 31 else unsigned
    raise TypeError(f"no Java hash code for {type(value).__name__}; pass a str or an int, or a selector")


def hash_index(key: object, count: int) -> int:
    """Java's pick: ``abs(hashCode % count)`` with Java's truncating remainder (never negative)."""
    if count <= 0:
        raise ValueError("no queue to choose from")
    return abs(java_hash_code(key)) % count


def select_by_hash(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
    """``SelectMessageQueueByHash``: a key always lands on the same queue while the queue count holds."""
    return queues[hash_index(arg, len(queues))]


def select_random(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
    """``SelectMessageQueueByRandom``."""
    return random.choice(list(queues))
