"""Headers of RocketMQ 5's POP consumption: pop, ack, and changing a popped message's invisible time.

A POP consumer does not own queues: it asks the broker for up to ``maxMsgNums`` messages of a queue (or of
any queue, ``queueId`` -1), and the broker hides what it hands out for ``invisibleTime`` milliseconds,
remembering a *checkpoint*. The consumer then acknowledges each message (ACK_MESSAGE, or many at once with
BATCH_ACK_MESSAGE, see :mod:`rocketmq_wire.bodies.pop`) or pushes its reappearance further out
(CHANGE_MESSAGE_INVISIBLETIME); what is neither acknowledged nor extended reappears, through the group's
POP retry topic, once its time is up.

Ack and change-invisible-time name the message by its *extra info* (the ``POP_CK`` property the client put
on the popped message, :mod:`rocketmq_wire.pop_extra`), with its queue id and queue offset beside it.

None of these headers has a fast path in the ROCKETMQ binary serialization: they travel in the ext map.
The request headers are 5.x ``TopicQueueRequestHeader``\\ s, so they carry the routing fields
(:mod:`rocketmq_wire.headers.rpc`; Java's client sets ``bname``), but declare them among their own fields:
5.x walks a header's fields through a ``HashSet<Field>``, whose order (by the hash of the declaring class's
name and the field's) interleaves them. Each class here declares its fields in that order, which the
captures of ``tests/integration/test_pop_wire.py`` confirm where keys share a bucket. Java always sends
the fields it declares as primitives (``int``/``long``) or with an initialiser (the pop's ``order``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jbool, jint, jlong, jstr

#: ``initMode`` of a pop: where a group with no committed offset starts.
INIT_MODE_LAST = 0
INIT_MODE_FIRST = 1
#: ``queueId`` of a pop that lets the broker pick among every readable queue of the topic.
ANY_QUEUE = -1


@dataclasses.dataclass(slots=True, kw_only=True)
class PopMessageRequestHeader(CommandHeader):
    """POP_MESSAGE: hide and hand out up to ``maxMsgNums`` messages for ``invisibleTime`` ms.

    ``pollTime`` is how long the broker may hold the request when nothing is there (0: answer at once) and
    ``bornTime`` when the client sent it (the broker drops a request that waited too long in its queue).
    ``initMode`` is :data:`INIT_MODE_LAST` or :data:`INIT_MODE_FIRST`; ``expType``/``exp`` the filter
    (``TAG`` and ``*`` by default); ``order`` asks for orderly pops (Java always sends it, ``false`` by
    default); ``attemptId`` (5.1 on) lets a proxy retry a pop idempotently.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.POP_MESSAGE,)

    poll_time: int | None = jlong("pollTime", required=True)
    born_time: int | None = jlong("bornTime", required=True)
    namespace: str | None = jstr("ns")
    topic: str | None = jstr("topic", required=True)
    exp_type: str | None = jstr("expType")
    exp: str | None = jstr("exp")
    consumer_group: str | None = jstr("consumerGroup", required=True)
    logical: bool | None = jbool("lo")
    order: bool | None = jbool("order")
    attempt_id: str | None = jstr("attemptId")
    invisible_time: int | None = jlong("invisibleTime", required=True)
    queue_id: int | None = jint("queueId", required=True)
    max_msg_nums: int | None = jint("maxMsgNums", required=True)
    bname: str | None = jstr("bname")
    oneway: bool | None = jbool("oway")
    init_mode: int | None = jint("initMode", required=True)
    namespaced: bool | None = jbool("nsd")


@dataclasses.dataclass(slots=True, kw_only=True)
class PopMessageResponseHeader(CommandHeader):
    """Answer to a pop (on SUCCESS and on the not-found codes alike); the messages are the body.

    ``popTime`` is the broker's clock when it hid the messages, ``invisibleTime`` how long, ``reviveQid``
    the revive queue its checkpoint went to (999 for orderly pops) and ``restNum`` how many messages the
    queue still holds. ``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo`` list per queue the
    checkpoint's start offset, the offsets handed out and (orderly pops) the delivery counts, in the
    ``retry queueId value`` form :mod:`rocketmq_wire.pop_extra` reads.
    """

    rest_num: int | None = jlong("restNum", required=True)
    pop_time: int | None = jlong("popTime", required=True)
    order_count_info: str | None = jstr("orderCountInfo")
    revive_qid: int | None = jint("reviveQid", required=True)
    msg_offset_info: str | None = jstr("msgOffsetInfo")
    invisible_time: int | None = jlong("invisibleTime", required=True)
    start_offset_info: str | None = jstr("startOffsetInfo")


@dataclasses.dataclass(slots=True, kw_only=True)
class AckMessageRequestHeader(CommandHeader):
    """ACK_MESSAGE: one popped message is done with.

    ``topic`` is the topic the message was popped from (the group's POP retry topic for a redelivery: see
    :meth:`rocketmq_wire.pop_extra.ExtraInfo.real_topic`), ``extraInfo`` the message's ``POP_CK`` property
    whole and ``offset`` its queue offset; ``liteTopic`` is 5.5's. The answer has no header: SUCCESS, or
    NO_MESSAGE when the checkpoint is gone (the message already reappeared or was acknowledged).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.ACK_MESSAGE,)

    consumer_group: str | None = jstr("consumerGroup", required=True)
    extra_info: str | None = jstr("extraInfo", required=True)
    namespace: str | None = jstr("ns")
    bname: str | None = jstr("bname")
    lite_topic: str | None = jstr("liteTopic")
    oneway: bool | None = jbool("oway")
    topic: str | None = jstr("topic", required=True)
    offset: int | None = jlong("offset", required=True)
    logical: bool | None = jbool("lo")
    queue_id: int | None = jint("queueId", required=True)
    namespaced: bool | None = jbool("nsd")


@dataclasses.dataclass(slots=True, kw_only=True)
class ChangeInvisibleTimeRequestHeader(CommandHeader):
    """CHANGE_MESSAGE_INVISIBLETIME: keep a popped message hidden ``invisibleTime`` ms from now on.

    The fields name the message as an ack does; a Java push consumer sends this for a message its listener
    asked to consume later. ``liteTopic`` and ``suspend`` are 5.5's (LiteTopic; 5.5's client always sends
    ``suspend``, ``false`` unless it suspends the message). The declared order is 5.5's, which also
    reproduces every 5.3 frame.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.CHANGE_MESSAGE_INVISIBLETIME,)

    namespace: str | None = jstr("ns")
    extra_info: str | None = jstr("extraInfo", required=True)
    consumer_group: str | None = jstr("consumerGroup", required=True)
    topic: str | None = jstr("topic", required=True)
    lite_topic: str | None = jstr("liteTopic")
    logical: bool | None = jbool("lo")
    offset: int | None = jlong("offset", required=True)
    queue_id: int | None = jint("queueId", required=True)
    bname: str | None = jstr("bname")
    invisible_time: int | None = jlong("invisibleTime", required=True)
    suspend: bool | None = jbool("suspend")
    oneway: bool | None = jbool("oway")
    namespaced: bool | None = jbool("nsd")


@dataclasses.dataclass(slots=True, kw_only=True)
class ChangeInvisibleTimeResponseHeader(CommandHeader):
    """The new checkpoint: ``popTime`` (the broker's clock now), ``invisibleTime`` and its ``reviveQid``.

    The message's extra info changes with it: the client builds the new one from these and the request
    (:func:`rocketmq_wire.pop_extra.after_change`), and acks or changes it again with that.
    """

    invisible_time: int | None = jlong("invisibleTime", required=True)
    pop_time: int | None = jlong("popTime", required=True)
    revive_qid: int | None = jint("reviveQid", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class NotificationRequestHeader(CommandHeader):
    """NOTIFICATION: does the group have anything to pop from ``topic`` (queue -1: any queue)?

    The broker holds the request up to ``pollTime`` ms when nothing is there; ``bornTime`` as for a pop.
    ``expType``/``exp`` are 5.5's (the answer then counts only what the filter accepts).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.NOTIFICATION,)

    consumer_group: str | None = jstr("consumerGroup", required=True)
    topic: str | None = jstr("topic", required=True)
    queue_id: int | None = jint("queueId", required=True)
    poll_time: int | None = jlong("pollTime", required=True)
    born_time: int | None = jlong("bornTime", required=True)
    order: bool | None = jbool("order")
    attempt_id: str | None = jstr("attemptId")
    exp_type: str | None = jstr("expType")
    exp: str | None = jstr("exp")
    namespace: str | None = jstr("ns")
    namespaced: bool | None = jbool("nsd")
    bname: str | None = jstr("bname")
    oneway: bool | None = jbool("oway")
    logical: bool | None = jbool("lo")


@dataclasses.dataclass(slots=True, kw_only=True)
class NotificationResponseHeader(CommandHeader):
    """Answer to NOTIFICATION: ``hasMsg``, and ``pollingFull`` when the broker could not hold the request."""

    has_msg: bool | None = jbool("hasMsg", required=True)
    polling_full: bool | None = jbool("pollingFull")
