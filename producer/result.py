"""What a send returns, named as in Java's client so results read the same in logs and dashboards.

``MessageQueue`` is re-exported from :mod:`rocketmq_wire.bodies.message_queue`, its one definition, so a
queue from a send result is the very type the consumers and the admin bodies use.
"""

from __future__ import annotations

import dataclasses
import enum

from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import ResponseCode

__all__ = [
    "LocalTransactionState",
    "MessageQueue",
    "SendResult",
    "SendStatus",
    "TransactionSendResult",
]


class SendStatus(enum.Enum):
    """How durably the broker stored the message; every one of them means it *was* stored."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"

    @classmethod
    def from_response_code(cls, code: int) -> SendStatus | None:
        """The status a send response code stands for, or ``None`` when the code is a failure."""
        return _STATUS_BY_CODE.get(code)


_STATUS_BY_CODE: dict[int, SendStatus] = {
    ResponseCode.SUCCESS: SendStatus.SEND_OK,
    ResponseCode.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    ResponseCode.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    ResponseCode.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}


@dataclasses.dataclass(frozen=True, slots=True)
class SendResult:
    """The broker's answer to one send (or one batch).

    ``msg_id`` is the id the producer made (``UNIQ_KEY``; for a batch, the ids of its messages joined by
    commas), ``offset_msg_id`` the broker's store address id. ``message_queue.topic`` is the topic as the
    caller named it, without the namespace. ``recall_handle`` is what a 5.3.2+ broker hands back for a timer
    message, to take it back before its time with :meth:`producer.Producer.recall`.
    """

    status: SendStatus
    msg_id: str
    offset_msg_id: str | None
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None = None
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    recall_handle: str | None = None

    def __str__(self) -> str:
        return (
            f"SendResult [sendStatus={self.status.value}, msgId={self.msg_id}, "
            f"offsetMsgId={self.offset_msg_id}, messageQueue={self.message_queue}, "
            f"queueOffset={self.queue_offset}]"
        )


class LocalTransactionState(enum.Enum):
    """The verdict on a half message: Java's ``LocalTransactionState`` (``UNKNOW`` spelt correctly)."""

    COMMIT_MESSAGE = "COMMIT_MESSAGE"
    ROLLBACK_MESSAGE = "ROLLBACK_MESSAGE"
    UNKNOWN = "UNKNOW"


@dataclasses.dataclass(frozen=True, slots=True)
class TransactionSendResult:
    """A half message's send result plus the local transaction's verdict that was sent to the broker.

    As in Java, ``offset_msg_id`` is not reported for half messages.
    """

    status: SendStatus
    msg_id: str
    message_queue: MessageQueue
    queue_offset: int
    transaction_id: str | None
    local_state: LocalTransactionState
