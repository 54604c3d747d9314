"""Headers of broker administration that are not about one topic or group.

GET_BROKER_RUNTIME_INFO and GET_BROKER_CONFIG requests have no header in Java (their answers are bodies);
only the config response carries a header, with the config's data version. Subscription-group
administration (delete, offset cloning, a broker's consume stats) is here too: its requests name groups,
not one topic; so is GET_ALL_PRODUCER_INFO, which asks a broker for every producer group it knows.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jbool, jstr
from rocketmq_wire.headers.rpc import RpcRequestHeader


@dataclasses.dataclass(slots=True, kw_only=True)
class GetBrokerConfigResponseHeader(CommandHeader):
    """``version`` is the config's DataVersion as JSON, so a caller can tell whether it changed."""

    version: str | None = jstr("version", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetSubscriptionGroupConfigRequestHeader(RpcRequestHeader):
    """GET_SUBSCRIPTIONGROUP_CONFIG (5.x): one group's settings, as JSON in the answer's body. Apache's Proxy
    asks it for every consumer group it serves (its consumers' retry policy and FIFO flag come from it)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG,)

    group: str | None = jstr("group", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class DeleteSubscriptionGroupRequestHeader(RpcRequestHeader):
    """DELETE_SUBSCRIPTIONGROUP: forget a group's settings; ``removeOffset`` also drops its offsets.

    ``removeOffset`` is a Java ``boolean`` (Java senders always write it; an older sender's request
    without it means false).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.DELETE_SUBSCRIPTIONGROUP,)

    group_name: str | None = jstr("groupName", required=True)
    remove_offset: bool | None = jbool("removeOffset")


@dataclasses.dataclass(slots=True, kw_only=True)
class CloneGroupOffsetRequestHeader(RpcRequestHeader):
    """CLONE_GROUP_OFFSET: copy ``srcGroup``'s committed offsets on ``topic`` to ``destGroup``.

    ``offline`` (a Java ``boolean``, missing means false) skips the check that an online source group
    subscribes to the topic.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.CLONE_GROUP_OFFSET,)

    src_group: str | None = jstr("srcGroup", required=True)
    dest_group: str | None = jstr("destGroup", required=True)
    topic: str | None = jstr("topic")
    offline: bool | None = jbool("offline")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetConsumeStatsInBrokerHeader(RpcRequestHeader):
    """GET_BROKER_CONSUME_STATS: progress of every group on one broker; ``isOrder`` keeps ordered topics
    only (Java's field is literally named ``isOrder``)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_BROKER_CONSUME_STATS,)

    is_order: bool | None = jbool("isOrder", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class ViewBrokerStatsDataRequestHeader(CommandHeader):
    """VIEW_BROKER_STATS_DATA: one item of the broker's statistics, e.g. ``TOPIC_PUT_NUMS`` of a topic or
    ``GROUP_GET_NUMS`` of ``topic@group`` (mqadmin ``statsAll``)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.VIEW_BROKER_STATS_DATA,)

    stats_name: str | None = jstr("statsName", required=True)
    stats_key: str | None = jstr("statsKey", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetAllProducerInfoRequestHeader(CommandHeader):
    """GET_ALL_PRODUCER_INFO (mqadmin ``producer``): every producer connected to one broker, by group.

    Java's class has no fields, so the request carries no entries; it is declared all the same so that the
    code has a header class like every other request (``header_for_request``, ``rmq inspect``), and a Java
    broker decodes it from a frame without an ext map.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_ALL_PRODUCER_INFO,)
