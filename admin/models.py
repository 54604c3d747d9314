"""What admin calls return: plain frozen records, flattened from the wire bodies for people and scripts.

The wire bodies key their tables by message queue and keep Java's map order; an operator wants rows sorted
by broker and queue with the derived numbers (lag, totals) already worked out, and a script wants the same
rows as JSON. These records are both: ``dataclasses.asdict`` turns any of them into plain data.
"""

from __future__ import annotations

import dataclasses
import enum

from rocketmq_wire.message import MessageExt


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerAddress:
    """One broker process: its group (``broker_name``), its id in the group (0 is the master), its address."""

    cluster: str
    broker_name: str
    broker_id: int
    addr: str

    @property
    def is_master(self) -> bool:
        return self.broker_id == 0


@dataclasses.dataclass(frozen=True, slots=True)
class QueueOffsets:
    """A queue's stored range and when it last received a message (0: never)."""

    broker_name: str
    queue_id: int
    min_offset: int
    max_offset: int
    last_updated_ms: int

    @property
    def messages(self) -> int:
        return max(0, self.max_offset - self.min_offset)


@dataclasses.dataclass(frozen=True, slots=True)
class TopicStatus:
    """Every queue of a topic on every broker of its route, sorted by broker then queue."""

    topic: str
    queues: tuple[QueueOffsets, ...]
    #: Messages per second put into the topic, as 5.x brokers report it (``None`` from 4.x brokers).
    put_tps: float | None = None

    @property
    def total_messages(self) -> int:
        return sum(q.messages for q in self.queues)


@dataclasses.dataclass(frozen=True, slots=True)
class QueueProgress:
    """A consumer group on one queue: how far the broker is, how far the group has committed."""

    topic: str
    broker_name: str
    queue_id: int
    broker_offset: int
    consumer_offset: int
    #: Store time of the last message the group consumed (0 when it consumed none).
    last_timestamp_ms: int
    lag: int


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerProgress:
    """A consumer group's progress on every queue it has offsets for, and its totals."""

    group: str
    queues: tuple[QueueProgress, ...]
    consume_tps: float
    total_lag: int


@dataclasses.dataclass(frozen=True, slots=True)
class ClientConnection:
    """One client connection of a producer or consumer group, as a broker sees it."""

    client_id: str
    client_addr: str
    language: str
    version: int


@dataclasses.dataclass(frozen=True, slots=True)
class ConsumerConnections:
    """A consumer group's live members and what they subscribe to, from one broker."""

    group: str
    broker_addr: str
    connections: tuple[ClientConnection, ...]
    #: topic -> subscription expression
    subscriptions: dict[str, str]
    consume_type: str | None
    message_model: str | None
    consume_from_where: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class TopicDeleted:
    """Where a topic was deleted: the broker addresses first, then the NameServers."""

    topic: str
    brokers: tuple[str, ...]
    namesrvs: tuple[str, ...]


class ResetMethod(enum.Enum):
    """How an offset reset was carried out.

    ``BROKER``: the broker reset the group itself (INVOKE_BROKER_TO_RESET_OFFSET), telling online members;
    ``DIRECT``: the admin looked each offset up by time and wrote it (SEARCH_OFFSET_BY_TIMESTAMP then
    UPDATE_CONSUMER_OFFSET), as mqadmin does when the group is offline or the broker lacks the request.
    """

    BROKER = "broker"
    DIRECT = "direct"


@dataclasses.dataclass(frozen=True, slots=True)
class OffsetReset:
    """One queue of an offset reset; ``previous_offset`` is unknown (``None``) when the broker did it."""

    topic: str
    broker_name: str
    queue_id: int
    previous_offset: int | None
    new_offset: int
    method: ResetMethod


class PullStatus(enum.Enum):
    """Java's ``PullStatus``, from the pull response code."""

    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


@dataclasses.dataclass(frozen=True, slots=True)
class PullResult:
    """One pull from one queue: what came back and where to pull next."""

    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: tuple[MessageExt, ...]
