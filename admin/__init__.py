"""Administering a RocketMQ cluster from Python: what ``mqadmin`` does, over the same wire protocol.

:class:`Admin` is asyncio-first; :class:`BlockingAdmin` has the same methods for code that is not async::

    async with Admin("ns1:9876;ns2:9876") as admin:
        await admin.create_topic("Orders", cluster="DefaultCluster", read_queue_nums=8, write_queue_nums=8)
        status = await admin.topic_status("Orders")            # min/max offset per queue
        progress = await admin.consumer_progress("OrderService")  # lag per queue, totals
        message = await admin.get_message(msg_id, topic="Orders")

Results are frozen records (:mod:`admin.models`) or the wire bodies themselves (cluster info, routes);
failures raise :class:`AdminError` subclasses (:mod:`admin.errors`). Requests are signed when ACL
credentials are given. Modules: ``cluster`` (NameServer data, KV), ``topics``, ``brokers``, ``consumers``
(progress, connections, offsets), ``groups`` (group settings, broker-wide progress, offset cloning),
``namesrv`` (write permission, NameServer settings, order confs), ``lite`` (5.5's lite topics), ``messages``
(view, key queries, pull), ``acl`` (4.9.x plain ACL), ``auth`` (5.x users and ACLs: :class:`UserInfo`,
:class:`AclInfo`), ``rpc`` (signing, fail-over).
"""

from admin.admin import DEFAULT_TIMEOUT_MS, Admin
from admin.blocking import BlockingAdmin
from admin.consumers import RESET_TO_LATEST
from admin.errors import (
    AdminError,
    BrokerVersionError,
    ConsumerNotOnlineError,
    MessageNotFoundError,
    OffsetResetPendingError,
    RequestRefusedError,
    TopicNotFoundError,
    UnreachableError,
)
from admin.groups import GroupConfigOnBroker, GroupDeleted, OffsetCloned
from admin.lite import BrokerAnswer, LiteGroupLag
from admin.messages import ConsumeQueueAnswer
from admin.models import (
    BrokerAddress,
    ClientConnection,
    ConsumerConnections,
    ConsumerProgress,
    OffsetReset,
    PullResult,
    PullStatus,
    QueueOffsets,
    QueueProgress,
    ResetMethod,
    TopicDeleted,
    TopicStatus,
)
from admin.namesrv import WritePermChange
from admin.rt import BrokerRt, SendRtReport, SendTiming
from admin.stats import TopicGroupStats
from admin.topics import DEFAULT_PERM, DEFAULT_QUEUE_NUMS
from rocketmq_wire.bodies.auth import AclInfo, PolicyEntryInfo, PolicyInfo, UserInfo

__all__ = [
    "DEFAULT_PERM",
    "DEFAULT_QUEUE_NUMS",
    "DEFAULT_TIMEOUT_MS",
    "RESET_TO_LATEST",
    "AclInfo",
    "Admin",
    "AdminError",
    "BlockingAdmin",
    "BrokerAddress",
    "BrokerAnswer",
    "BrokerRt",
    "BrokerVersionError",
    "ClientConnection",
    "ConsumeQueueAnswer",
    "ConsumerConnections",
    "ConsumerNotOnlineError",
    "ConsumerProgress",
    "GroupConfigOnBroker",
    "GroupDeleted",
    "LiteGroupLag",
    "MessageNotFoundError",
    "OffsetCloned",
    "OffsetReset",
    "OffsetResetPendingError",
    "PolicyEntryInfo",
    "PolicyInfo",
    "PullResult",
    "PullStatus",
    "QueueOffsets",
    "QueueProgress",
    "RequestRefusedError",
    "ResetMethod",
    "SendRtReport",
    "SendTiming",
    "TopicDeleted",
    "TopicGroupStats",
    "TopicNotFoundError",
    "TopicStatus",
    "UnreachableError",
    "UserInfo",
    "WritePermChange",
]
