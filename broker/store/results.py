"""What store operations answer, with Apache's status names so the Broker can map them to response codes
and pull-result remarks exactly as an Apache broker does."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPPED_FILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGE_CACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"

    @property
    def stored(self) -> bool:
        """Whether the message is in the commit log (a flush or slave timeout, or a missing slave, still
        stored it: Apache's send processor answers those with the message id, as sent)."""
        return self in _STORED


_STORED = frozenset(
    {
        PutMessageStatus.PUT_OK,
        PutMessageStatus.FLUSH_DISK_TIMEOUT,
        PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
        PutMessageStatus.SLAVE_NOT_AVAILABLE,
    }
)


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class BoundaryType(enum.Enum):
    """Which side of a timestamp an offset search lands on (Apache's ``BoundaryType``)."""

    #: The first message stored at or after the timestamp.
    LOWER = "lower"
    #: The last message stored at or before the timestamp.
    UPPER = "upper"


@dataclass(slots=True)
class PutMessageResult:
    """The outcome of one append (a batch counts as one append of ``message_count`` messages).

    ``msg_id`` is the offset message id, comma-joined for a batch as Apache joins it; ``queue_offset`` is
    the first message's queue offset.
    """

    status: PutMessageStatus
    wrote_offset: int = -1
    wrote_bytes: int = 0
    msg_id: str = ""
    store_timestamp: int = 0
    queue_offset: int = -1
    message_count: int = 0
    queue_offsets: tuple[int, ...] = ()
    #: Why a SERVICE_NOT_AVAILABLE store refused the append (its faults in force), for the answer's remark.
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status is PutMessageStatus.PUT_OK


@dataclass(slots=True)
class GetMessageResult:
    """A pull's answer: the stored bytes of each message found and where the consumer goes next."""

    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    messages: list[bytes] = field(default_factory=list)
    queue_offsets: list[int] = field(default_factory=list)
    #: Commit-log offset of the last consume-queue entry the pull looked at (-1 if it looked at none).
    max_physical_offset_pulled: int = -1
    #: The consumer is so far behind that its messages are no longer in memory: Apache then suggests the
    #: consumer's group read from a slave (``whichBrokerWhenConsumeSlowly``).
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.messages)

    @property
    def buffer_total_size(self) -> int:
        return sum(len(m) for m in self.messages)

    @property
    def body(self) -> bytes:
        """The pull response body: the stored messages back to back."""
        return b"".join(self.messages)


@dataclass(frozen=True, slots=True)
class QueryMessageResult:
    """Messages found by key, newest first, plus the index position Apache reports alongside them."""

    messages: list[bytes]
    index_last_update_timestamp: int
    index_last_update_phy_offset: int

    @property
    def body(self) -> bytes:
        return b"".join(self.messages)


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What one retention pass removed."""

    commit_log_segments: int = 0
    consume_queue_files: int = 0
    index_files: int = 0
    min_physical_offset: int = 0
