"""Headers of RocketMQ 5.5's lite-topic admin reads: mqadmin's ``getParentTopicInfo``, ``getLiteTopicInfo``,
``getLiteGroupInfo``, ``getLiteClientInfo`` and ``triggerLiteDispatch`` (GET_BROKER_LITE_INFO has no header).

A lite topic is a light queue (``%LMQ%$parent$lite``, :func:`rocketmq_wire.topics.lite_queue_name`) under a
parent topic whose ``message.type`` is ``LITE``; a message goes to one when it carries the ``__LITE_TOPIC``
property. A group consumes lite topics when its ``lite.bind.topic`` attribute names the parent.

These are plain ``CommandCustomHeader``\\ s, without the routing fields of the RPC headers. 5.x still walks
their fields through a ``HashSet<Field>``, so each class declares its fields in that order (the hash of the
declaring class's name XOR the field's), which ``tests/unit/test_lite_wire.py`` recomputes. The codes do
not fit in 16 bits, so these requests travel only in the JSON serialization (see ``docs/pop.md``).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import CommandHeader, jint, jstr

#: ``GetLiteClientInfoRequestHeader.maxCount``'s initial value: what mqadmin asks for.
DEFAULT_MAX_COUNT = 1000


@dataclasses.dataclass(slots=True, kw_only=True)
class GetParentTopicInfoRequestHeader(CommandHeader):
    """GET_PARENT_TOPIC_INFO: one broker's view of a LITE parent topic (its lite topics' TTL, how many there
    are, the groups bound to it). A topic that is not LITE is answered INVALID_PARAMETER."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_PARENT_TOPIC_INFO,)

    topic: str | None = jstr("topic", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetLiteTopicInfoRequestHeader(CommandHeader):
    """GET_LITE_TOPIC_INFO: one lite topic's offsets on a broker and the clients subscribed to it."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_LITE_TOPIC_INFO,)

    lite_topic: str | None = jstr("liteTopic")
    parent_topic: str | None = jstr("parentTopic")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetLiteGroupInfoRequestHeader(CommandHeader):
    """GET_LITE_GROUP_INFO: a lite group's lag, on one lite topic when ``liteTopic`` is given, else its
    ``topK`` most lagging lite topics (by count and by age). ``topK`` is a Java ``int``: Java always sends
    it (0 when not set), so set it."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_LITE_GROUP_INFO,)

    top_k: int | None = jint("topK")
    group: str | None = jstr("group", required=True)
    lite_topic: str | None = jstr("liteTopic")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetLiteClientInfoRequestHeader(CommandHeader):
    """GET_LITE_CLIENT_INFO: the lite topics one client of a group subscribes to (at most ``maxCount``).

    ``maxCount`` is a Java ``int`` initialised to 1000, so always sent (and 1000 when the request has none);
    it must be positive: the broker's decoding refuses the request otherwise, and :meth:`check` does too.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_LITE_CLIENT_INFO,)

    parent_topic: str | None = jstr("parentTopic")
    client_id: str | None = jstr("clientId")
    max_count: int | None = jint("maxCount", default=DEFAULT_MAX_COUNT)
    group: str | None = jstr("group")

    def check(self) -> None:
        if self.max_count is None or self.max_count <= 0:
            raise CodecError(f"{type(self).__name__}: maxCount must be positive, not {self.max_count}")


@dataclasses.dataclass(slots=True, kw_only=True)
class TriggerLiteDispatchRequestHeader(CommandHeader):
    """TRIGGER_LITE_DISPATCH: have the broker offer a lite group's ready lite topics to its clients again,
    to one client when ``clientId`` is given. Answered by its code alone."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.TRIGGER_LITE_DISPATCH,)

    group: str | None = jstr("group", required=True)
    client_id: str | None = jstr("clientId")
