"""Headers of pulling messages; both are binary fast-path headers.

The pull request is the most frequent request a consumer sends, so Java writes it field by field in the
ROCKETMQ serialization (``FAST_FIELDS``), the routing fields last. In JSON the routing fields also come
after the pull fields: ``commitOffset`` precedes ``bname`` in the captured frames, so this header declares
them itself rather than inheriting them first.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jbool, jint, jlong, jstr


@dataclasses.dataclass(slots=True, kw_only=True)
class PullMessageRequestHeader(CommandHeader):
    """PULL_MESSAGE (push and pull consumers) and LITE_PULL_MESSAGE.

    ``sysFlag`` holds PullSysFlag bits (commit offset, suspend, subscription, class filter);
    ``suspendTimeoutMillis`` is how long the broker may hold the request when nothing is there yet.
    ``maxMsgBytes``, ``requestSource`` and ``proxyFrowardClientId`` (sic) are 5.x, ``liteTopic`` later still.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE)
    FAST_FIELDS: ClassVar[tuple[str, ...]] = (
        "consumerGroup",
        "topic",
        "liteTopic",
        "queueId",
        "queueOffset",
        "maxMsgNums",
        "sysFlag",
        "commitOffset",
        "suspendTimeoutMillis",
        "subscription",
        "subVersion",
        "expressionType",
        "maxMsgBytes",
        "requestSource",
        "proxyFrowardClientId",
        "lo",
        "ns",
        "nsd",
        "bname",
        "oway",
    )

    consumer_group: str | None = jstr("consumerGroup", required=True)
    topic: str | None = jstr("topic", required=True)
    lite_topic: str | None = jstr("liteTopic")
    queue_id: int | None = jint("queueId", required=True)
    queue_offset: int | None = jlong("queueOffset", required=True)
    max_msg_nums: int | None = jint("maxMsgNums", required=True)
    sys_flag: int | None = jint("sysFlag", required=True)
    commit_offset: int | None = jlong("commitOffset", required=True)
    suspend_timeout_millis: int | None = jlong("suspendTimeoutMillis", required=True)
    subscription: str | None = jstr("subscription")
    sub_version: int | None = jlong("subVersion", required=True)
    expression_type: str | None = jstr("expressionType")
    max_msg_bytes: int | None = jint("maxMsgBytes")
    request_source: int | None = jint("requestSource")
    proxy_forward_client_id: str | None = jstr("proxyFrowardClientId")
    logical: bool | None = jbool("lo")
    namespace: str | None = jstr("ns")
    namespaced: bool | None = jbool("nsd")
    bname: str | None = jstr("bname")
    oneway: bool | None = jbool("oway")


@dataclasses.dataclass(slots=True, kw_only=True)
class PullMessageResponseHeader(CommandHeader):
    """Where to pull next and which broker to prefer; the messages themselves are the body.

    ``topicSysFlag``/``groupSysFlag`` (5.x) let the client decode without a topic lookup.
    """

    FAST_FIELDS: ClassVar[tuple[str, ...]] = (
        "suggestWhichBrokerId",
        "nextBeginOffset",
        "minOffset",
        "maxOffset",
        "offsetDelta",
        "topicSysFlag",
        "groupSysFlag",
        "forbiddenType",
    )

    suggest_which_broker_id: int | None = jlong("suggestWhichBrokerId", required=True)
    next_begin_offset: int | None = jlong("nextBeginOffset", required=True)
    min_offset: int | None = jlong("minOffset", required=True)
    max_offset: int | None = jlong("maxOffset", required=True)
    offset_delta: int | None = jlong("offsetDelta")
    topic_sys_flag: int | None = jint("topicSysFlag")
    group_sys_flag: int | None = jint("groupSysFlag")
    forbidden_type: int | None = jint("forbiddenType")
