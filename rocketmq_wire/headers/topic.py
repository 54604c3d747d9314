"""Headers of topic administration on a broker: create/update, delete, stats, config lookups."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import ClassVar, Self

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import CommandHeader, jbool, jint, jstr
from rocketmq_wire.headers.rpc import TopicRequestHeader

#: The values Java's ``TopicFilterType`` enum accepts.
TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")


@dataclasses.dataclass(slots=True, kw_only=True)
class CreateTopicRequestHeader(TopicRequestHeader):
    """UPDATE_AND_CREATE_TOPIC.

    ``perm`` holds PermName bits (2 write, 4 read, ...). ``attributes`` (5.x) is a ``+key=value`` list,
    ``force`` (5.x) lets an update change attributes that are otherwise fixed. Java initialises ``order`` and
    ``force`` to false, so its frames always carry them.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.UPDATE_AND_CREATE_TOPIC,)

    topic: str | None = jstr("topic", required=True)
    default_topic: str | None = jstr("defaultTopic", required=True)
    read_queue_nums: int | None = jint("readQueueNums", required=True)
    write_queue_nums: int | None = jint("writeQueueNums", required=True)
    perm: int | None = jint("perm", required=True)
    topic_filter_type: str | None = jstr("topicFilterType", required=True)
    topic_sys_flag: int | None = jint("topicSysFlag")
    order: bool | None = jbool("order", required=True)
    attributes: str | None = jstr("attributes")
    force: bool | None = jbool("force")

    @classmethod
    def from_ext(cls, ext: Mapping[str, str]) -> Self:
        """As the base, then Java's own check: the filter type must name a ``TopicFilterType``."""
        header = super(CreateTopicRequestHeader, cls).from_ext(ext)
        if header.topic_filter_type not in TOPIC_FILTER_TYPES:
            wanted = " or ".join(TOPIC_FILTER_TYPES)
            raise CodecError(f"{cls.__name__}: topicFilterType {header.topic_filter_type!r} is not {wanted}")
        return header


@dataclasses.dataclass(slots=True, kw_only=True)
class DeleteTopicRequestHeader(TopicRequestHeader):
    """DELETE_TOPIC_IN_BROKER (the NameServer side is ``DeleteTopicFromNamesrvRequestHeader``)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.DELETE_TOPIC_IN_BROKER,)

    topic: str | None = jstr("topic", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader(TopicRequestHeader):
    """GET_TOPIC_STATS_INFO; the per-queue offsets come back as a TopicStatsTable body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_TOPIC_STATS_INFO,)

    topic: str | None = jstr("topic", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetTopicConfigRequestHeader(TopicRequestHeader):
    """GET_TOPIC_CONFIG (5.x): one topic's config from a broker."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_TOPIC_CONFIG,)

    topic: str | None = jstr("topic", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetAllTopicConfigRequestHeader(CommandHeader):
    """GET_ALL_TOPIC_CONFIG paging (5.x). 4.x peers send this request with no header at all.

    Java marks ``topicSeq`` not-null, but only checks it when the request has an ext map; since ACL-signed
    4.x requests have one without ``topicSeq``, it is optional here rather than rejecting them.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_ALL_TOPIC_CONFIG,)

    topic_seq: int | None = jint("topicSeq")
    data_version: str | None = jstr("dataVersion")
    max_topic_num: int | None = jint("maxTopicNum")


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryTopicConsumeByWhoRequestHeader(TopicRequestHeader):
    """QUERY_TOPIC_CONSUME_BY_WHO; the consuming groups come back as a GroupList body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,)

    topic: str | None = jstr("topic", required=True)
