"""Protocol facts the NameServer needs that ``rocketmq_wire`` does not hold yet.

TO MOVE: everything here belongs in ``rocketmq_wire`` (permission bits and topic flags next to the other
constants, the header in ``rocketmq_wire.headers.namesrv``). It lives here only so the NameServer can be
built before those modules grow them; import it from nowhere else.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jint, jstr
from rocketmq_wire.headers.rpc import TopicRequestHeader

# Java's ``PermName``: a queue's permission bits.
PERM_INHERIT = 1
PERM_WRITE = 2
PERM_READ = 4

# Java's ``TopicSysFlag``: unit (cell) markers a topic can carry.
FLAG_UNIT = 1
FLAG_UNIT_SUB = 2


def has_unit_flag(sys_flag: int) -> bool:
    return bool(sys_flag & FLAG_UNIT)


def has_unit_sub_flag(sys_flag: int) -> bool:
    return bool(sys_flag & FLAG_UNIT_SUB)


@dataclasses.dataclass(slots=True, kw_only=True)
class BrokerHeartbeatRequestHeader(CommandHeader):
    """BROKER_HEARTBEAT (5.x): a broker in acting-master or controller mode refreshing its liveness."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.BROKER_HEARTBEAT,)

    cluster_name: str | None = jstr("clusterName", required=True)
    broker_addr: str | None = jstr("brokerAddr", required=True)
    broker_name: str | None = jstr("brokerName", required=True)
    broker_id: int | None = jint("brokerId")
    epoch: int | None = jint("epoch")
    max_offset: int | None = jint("maxOffset")
    confirm_offset: int | None = jint("confirmOffset")
    heartbeat_timeout_mills: int | None = jint("heartbeatTimeoutMills")
    election_priority: int | None = jint("electionPriority")


@dataclasses.dataclass(slots=True, kw_only=True)
class RegisterTopicRequestHeader(TopicRequestHeader):
    """REGISTER_TOPIC_IN_NAMESRV (5.x): add queues to a topic's route; the queues come as route data body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.REGISTER_TOPIC_IN_NAMESRV,)

    topic: str | None = jstr("topic", required=True)
