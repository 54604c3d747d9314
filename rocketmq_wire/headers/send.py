"""Headers of sending a message: the long-named V1, the single-letter V2 and the send response.

Java clients send SEND_MESSAGE_V2 (and SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2) with the V2 header, whose
one-letter keys make the JSON header smaller; brokers convert it to V1 before doing anything else. The C++
client still sends SEND_MESSAGE with V1. Both describe the same fields, so the conversions here are exact
in both directions, including Java's habit of filling ``reconsumeTimes``/``unitMode``/``batch`` with their
defaults when going from V1 to V2.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jbool, jint, jlong, jstr
from rocketmq_wire.headers.rpc import TopicRequestHeader


@dataclasses.dataclass(slots=True, kw_only=True)
class SendMessageRequestHeader(TopicRequestHeader):
    """SEND_MESSAGE (V1). The broker name travels in the inherited ``bname``."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.SEND_MESSAGE, RequestCode.SEND_REPLY_MESSAGE)

    producer_group: str | None = jstr("producerGroup", required=True)
    topic: str | None = jstr("topic", required=True)
    default_topic: str | None = jstr("defaultTopic", required=True)
    default_topic_queue_nums: int | None = jint("defaultTopicQueueNums", required=True)
    queue_id: int | None = jint("queueId", required=True)
    sys_flag: int | None = jint("sysFlag", required=True)
    born_timestamp: int | None = jlong("bornTimestamp", required=True)
    flag: int | None = jint("flag", required=True)
    properties: str | None = jstr("properties")
    reconsume_times: int | None = jint("reconsumeTimes")
    unit_mode: bool | None = jbool("unitMode")
    batch: bool | None = jbool("batch")
    max_reconsume_times: int | None = jint("maxReconsumeTimes")

    def to_v2(self) -> SendMessageRequestHeaderV2:
        """Java's ``createSendMessageRequestHeaderV2``: unset reconsumeTimes/unitMode/batch become 0/false."""
        return SendMessageRequestHeaderV2(
            producer_group=self.producer_group,
            topic=self.topic,
            default_topic=self.default_topic,
            default_topic_queue_nums=self.default_topic_queue_nums,
            queue_id=self.queue_id,
            sys_flag=self.sys_flag,
            born_timestamp=self.born_timestamp,
            flag=self.flag,
            properties=self.properties,
            reconsume_times=0 if self.reconsume_times is None else self.reconsume_times,
            unit_mode=bool(self.unit_mode),
            max_reconsume_times=self.max_reconsume_times,
            batch=bool(self.batch),
            broker_name=self.bname,
        )

    @classmethod
    def from_v2(cls, v2: SendMessageRequestHeaderV2) -> SendMessageRequestHeader:
        return v2.to_v1()


@dataclasses.dataclass(slots=True, kw_only=True)
class SendMessageRequestHeaderV2(TopicRequestHeader):
    """SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE / SEND_REPLY_MESSAGE_V2: V1's fields under the keys ``a``..``n``.

    Attributes carry the V1 names; the wire keys are the letters. In the ROCKETMQ serialization the letters
    are written first, in this order, by the binary fast path (the inherited routing fields are not part of
    it, exactly as in Java).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE_V2,
    )
    FAST_FIELDS: ClassVar[tuple[str, ...]] = tuple("abcdefghijklmn")

    producer_group: str | None = jstr("a", required=True)
    topic: str | None = jstr("b", required=True)
    default_topic: str | None = jstr("c", required=True)
    default_topic_queue_nums: int | None = jint("d", required=True)
    queue_id: int | None = jint("e", required=True)
    sys_flag: int | None = jint("f", required=True)
    born_timestamp: int | None = jlong("g", required=True)
    flag: int | None = jint("h", required=True)
    properties: str | None = jstr("i")
    reconsume_times: int | None = jint("j")
    unit_mode: bool | None = jbool("k")
    max_reconsume_times: int | None = jint("l")
    batch: bool | None = jbool("m")
    broker_name: str | None = jstr("n")

    def to_v1(self) -> SendMessageRequestHeader:
        """Java's ``createSendMessageRequestHeaderV1``: each letter to its named field, ``n`` to ``bname``."""
        return SendMessageRequestHeader(
            producer_group=self.producer_group,
            topic=self.topic,
            default_topic=self.default_topic,
            default_topic_queue_nums=self.default_topic_queue_nums,
            queue_id=self.queue_id,
            sys_flag=self.sys_flag,
            born_timestamp=self.born_timestamp,
            flag=self.flag,
            properties=self.properties,
            reconsume_times=self.reconsume_times,
            unit_mode=self.unit_mode,
            batch=self.batch,
            max_reconsume_times=self.max_reconsume_times,
            bname=self.broker_name,
        )

    @classmethod
    def from_v1(cls, v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
        return v1.to_v2()


@dataclasses.dataclass(slots=True, kw_only=True)
class SendMessageResponseHeader(CommandHeader):
    """The stored message's offset id and queue position; ``transactionId`` and later fields are 5.x.

    Also a binary fast-path header, written in declared order.
    """

    FAST_FIELDS: ClassVar[tuple[str, ...]] = (
        "msgId",
        "queueId",
        "queueOffset",
        "transactionId",
        "batchUniqId",
        "recallHandle",
        "delayTime",
    )

    msg_id: str | None = jstr("msgId", required=True)
    queue_id: int | None = jint("queueId", required=True)
    queue_offset: int | None = jlong("queueOffset", required=True)
    transaction_id: str | None = jstr("transactionId")
    batch_uniq_id: str | None = jstr("batchUniqId")
    recall_handle: str | None = jstr("recallHandle")
    delay_time: int | None = jlong("delayTime")


@dataclasses.dataclass(slots=True, kw_only=True)
class RecallMessageRequestHeader(CommandHeader):
    """RECALL_MESSAGE (5.3.2 on): take back a timer message before its delivery time.

    ``recallHandle`` is the handle the send's answer carried (:mod:`rocketmq_wire.message.recall`); Java's
    client sets ``bname`` to the broker named in it. A 5.x ``TopicRequestHeader``: the routing fields sit
    among its own in the order Java's ``HashSet<Field>`` walks them (see :mod:`rocketmq_wire.headers.pop`).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.RECALL_MESSAGE,)

    producer_group: str | None = jstr("producerGroup")
    namespace: str | None = jstr("ns")
    bname: str | None = jstr("bname")
    oneway: bool | None = jbool("oway")
    recall_handle: str | None = jstr("recallHandle", required=True)
    topic: str | None = jstr("topic", required=True)
    logical: bool | None = jbool("lo")
    namespaced: bool | None = jbool("nsd")


@dataclasses.dataclass(slots=True, kw_only=True)
class RecallMessageResponseHeader(CommandHeader):
    """Answer to a recall: the unique id (``UNIQ_KEY``) of the message taken back."""

    msg_id: str | None = jstr("msgId", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class ReplyMessageRequestHeader(CommandHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT: a broker hands a reply (sent to it with SEND_REPLY_MESSAGE(_V2)) to
    the requesting client's connection; the reply's body is the command's body.

    The fields are the reply's send header plus where and when it was stored (``bornHost``/``storeHost``
    as ``ip:port``). A 5.x ``TopicQueueRequestHeader``: declared in the order Java's ``HashSet<Field>``
    walks them (see :mod:`rocketmq_wire.headers.pop`).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,)

    topic: str | None = jstr("topic", required=True)
    namespace: str | None = jstr("ns")
    born_timestamp: int | None = jlong("bornTimestamp", required=True)
    store_host: str | None = jstr("storeHost", required=True)
    properties: str | None = jstr("properties")
    producer_group: str | None = jstr("producerGroup", required=True)
    logical: bool | None = jbool("lo")
    unit_mode: bool | None = jbool("unitMode")
    bname: str | None = jstr("bname")
    oneway: bool | None = jbool("oway")
    default_topic: str | None = jstr("defaultTopic", required=True)
    born_host: str | None = jstr("bornHost", required=True)
    default_topic_queue_nums: int | None = jint("defaultTopicQueueNums", required=True)
    queue_id: int | None = jint("queueId", required=True)
    flag: int | None = jint("flag", required=True)
    sys_flag: int | None = jint("sysFlag", required=True)
    reconsume_times: int | None = jint("reconsumeTimes")
    store_timestamp: int | None = jlong("storeTimestamp", required=True)
    namespaced: bool | None = jbool("nsd")
