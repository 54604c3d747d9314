"""Turning a pull answer into messages and a next offset (Java's ``PullAPIWrapper.processPullResult``).

Four outcomes matter and both consumers handle them the same way Java does:

* ``FOUND`` -- messages, decoded (bodies decompressed), those whose tag the subscription does not name
  dropped (the broker only compared tag hash codes), each marked with the queue's ``MIN_OFFSET`` /
  ``MAX_OFFSET`` as Java marks them;
* ``NO_NEW_MSG`` (PULL_NOT_FOUND) and ``NO_MATCHED_MSG`` (PULL_RETRY_IMMEDIATELY) -- nothing now, pull
  again from ``next_begin_offset``;
* ``OFFSET_ILLEGAL`` (PULL_OFFSET_MOVED) -- the offset is outside the queue; ``next_begin_offset`` is where
  the broker says to continue.

Anything else is a :class:`~consumer.errors.BrokerError`.
"""

from __future__ import annotations

import dataclasses
import enum

from consumer.errors import BrokerError, ConsumerError
from consumer.subscription import accepted
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.pull import PullMessageResponseHeader
from rocketmq_wire.message import MessageExt, decode_messages, encode_properties
from rocketmq_wire.message import const as props


class PullStatus(enum.Enum):
    FOUND = "FOUND"
    NO_NEW_MSG = "NO_NEW_MSG"
    NO_MATCHED_MSG = "NO_MATCHED_MSG"
    OFFSET_ILLEGAL = "OFFSET_ILLEGAL"


_STATUS_BY_CODE: dict[int, PullStatus] = {
    ResponseCode.SUCCESS: PullStatus.FOUND,
    ResponseCode.PULL_NOT_FOUND: PullStatus.NO_NEW_MSG,
    ResponseCode.PULL_RETRY_IMMEDIATELY: PullStatus.NO_MATCHED_MSG,
    ResponseCode.PULL_OFFSET_MOVED: PullStatus.OFFSET_ILLEGAL,
}


@dataclasses.dataclass(slots=True)
class PullResult:
    status: PullStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    #: Which broker of the group to pull this queue from next (0: the master).
    suggest_which_broker_id: int
    messages: list[MessageExt] = dataclasses.field(default_factory=list)
    #: The raw message body, decoded only once the caller knows it still wants the messages.
    body: bytes = b""


def parse_pull_response(response: RemotingCommand, addr: str) -> PullResult:
    """The outcome of a pull; raises :class:`BrokerError` for any failure code."""
    status = _STATUS_BY_CODE.get(response.code)
    if status is None:
        raise BrokerError(response.code, response.remark, addr)
    try:
        header = response.read_header(PullMessageResponseHeader)
    except CodecError as exc:
        raise ConsumerError(f"broker {addr} sent an unreadable pull answer: {exc}") from exc
    return PullResult(
        status=status,
        next_begin_offset=header.next_begin_offset or 0,
        min_offset=header.min_offset or 0,
        max_offset=header.max_offset or 0,
        suggest_which_broker_id=header.suggest_which_broker_id or 0,
        body=response.body if status is PullStatus.FOUND else b"",
    )


def decode_found(result: PullResult, tags: frozenset[str] | None) -> list[MessageExt]:
    """The messages of a FOUND answer that the subscription accepts, marked with the queue's bounds.

    Raises :class:`ConsumerError` when the body does not decode (a broker bug or a corrupted store).
    """
    if result.status is not PullStatus.FOUND or not result.body:
        return []
    try:
        messages = decode_messages(result.body)
    except CodecError as exc:
        raise ConsumerError(f"the pulled messages do not decode: {exc}") from exc
    messages = accepted(messages, tags)
    if messages:
        extra = encode_properties(
            {props.MIN_OFFSET: str(result.min_offset), props.MAX_OFFSET: str(result.max_offset)}
        )
        for message in messages:
            message.append_properties(extra)
    result.messages = messages
    return messages
