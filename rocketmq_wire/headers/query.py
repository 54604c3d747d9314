"""Headers of looking messages up: by key through the index, or by commit-log offset."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Final

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jint, jlong, jstr
from rocketmq_wire.headers.rpc import TopicRequestHeader


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryMessageRequestHeader(TopicRequestHeader):
    """QUERY_MESSAGE by key or by unique key; the ``_UNIQUE_KEY_QUERY`` ext entry (not a field) says which."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.QUERY_MESSAGE,)

    topic: str | None = jstr("topic", required=True)
    key: str | None = jstr("key", required=True)
    max_num: int | None = jint("maxNum", required=True)
    begin_timestamp: int | None = jlong("beginTimestamp", required=True)
    end_timestamp: int | None = jlong("endTimestamp", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryMessageResponseHeader(CommandHeader):
    """How far the index is built, so a client querying several brokers can merge results."""

    index_last_update_timestamp: int | None = jlong("indexLastUpdateTimestamp", required=True)
    index_last_update_phyoffset: int | None = jlong("indexLastUpdatePhyoffset", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class ViewMessageRequestHeader(TopicRequestHeader):
    """VIEW_MESSAGE_BY_ID: the offset decoded from an offset message id; 5.x also names the topic."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.VIEW_MESSAGE_BY_ID,)

    topic: str | None = jstr("topic")
    offset: int | None = jlong("offset", required=True)


#: Ext entry (not a header field) of QUERY_MESSAGE: ``"true"`` looks the key up among unique keys (UNIQ_KEY),
#: ``"false"`` among the KEYS. mqadmin always sends it.
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryConsumeQueueRequestHeader(CommandHeader):
    """QUERY_CONSUME_QUEUE (mqadmin ``queryCq``): ``count`` consume-queue entries of one queue from
    ``index``; with ``consumerGroup`` the answer also says how that group's subscription filters them.

    ``queueId``, ``index`` and ``count`` are Java primitives, always on the wire from a Java sender.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.QUERY_CONSUME_QUEUE,)

    topic: str | None = jstr("topic")
    queue_id: int | None = jint("queueId")
    index: int | None = jlong("index")
    count: int | None = jint("count")
    consumer_group: str | None = jstr("consumerGroup")
