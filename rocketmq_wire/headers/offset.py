"""Headers about queue offsets: consumer progress, queue bounds, time lookups and offset resets."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jbool, jint, jlong, jstr
from rocketmq_wire.headers.rpc import TopicRequestHeader


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(TopicRequestHeader):
    """QUERY_CONSUMER_OFFSET. ``setZeroIfNotFound`` (5.x) asks for 0 instead of QUERY_NOT_FOUND."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.QUERY_CONSUMER_OFFSET,)

    consumer_group: str | None = jstr("consumerGroup", required=True)
    topic: str | None = jstr("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    set_zero_if_not_found: bool | None = jbool("setZeroIfNotFound")


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader(CommandHeader):
    offset: int | None = jlong("offset", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(TopicRequestHeader):
    """UPDATE_CONSUMER_OFFSET, usually oneway; its response (when asked for) has no header fields."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.UPDATE_CONSUMER_OFFSET,)

    consumer_group: str | None = jstr("consumerGroup", required=True)
    topic: str | None = jstr("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    commit_offset: int | None = jlong("commitOffset", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetMinOffsetRequestHeader(TopicRequestHeader):
    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_MIN_OFFSET,)

    topic: str | None = jstr("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetMinOffsetResponseHeader(CommandHeader):
    offset: int | None = jlong("offset", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetMaxOffsetRequestHeader(TopicRequestHeader):
    """GET_MAX_OFFSET. 5.x sends ``committed`` (default true): whether to count only dispatched messages."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_MAX_OFFSET,)

    topic: str | None = jstr("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    committed: bool | None = jbool("committed")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetMaxOffsetResponseHeader(CommandHeader):
    offset: int | None = jlong("offset", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class SearchOffsetRequestHeader(TopicRequestHeader):
    """SEARCH_OFFSET_BY_TIMESTAMP. ``boundaryType`` (5.x, ``LOWER``/``UPPER``) picks which end of a tie."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,)

    topic: str | None = jstr("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    timestamp: int | None = jlong("timestamp", required=True)
    boundary_type: str | None = jstr("boundaryType")


@dataclasses.dataclass(slots=True, kw_only=True)
class SearchOffsetResponseHeader(CommandHeader):
    offset: int | None = jlong("offset", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetEarliestMsgStoretimeRequestHeader(TopicRequestHeader):
    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_EARLIEST_MSG_STORETIME,)

    topic: str | None = jstr("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetEarliestMsgStoretimeResponseHeader(CommandHeader):
    timestamp: int | None = jlong("timestamp", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class ResetOffsetRequestHeader(TopicRequestHeader):
    """INVOKE_BROKER_TO_RESET_OFFSET (admin to broker) and RESET_CONSUMER_CLIENT_OFFSET (broker to client).

    ``isForce`` keeps Java's field name as its key. 5.x added ``queueId`` (Java sends -1 for "all queues")
    and ``offset`` (reset to an offset instead of a time).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
    )

    topic: str | None = jstr("topic", required=True)
    group: str | None = jstr("group", required=True)
    queue_id: int | None = jint("queueId")
    offset: int | None = jlong("offset")
    timestamp: int | None = jlong("timestamp", required=True)
    is_force: bool | None = jbool("isForce", required=True)
