"""Admin request handlers added beside the broker's core table, in one place for the broker to take in.

``Broker._register_handlers`` merges :func:`extra_handlers` into its table, so these modules need no edit
of ``broker/broker.py`` beyond that one line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.processors.consume_queue_view import QueryConsumeQueueProcessor
from broker.processors.group_admin import (
    CloneGroupOffsetProcessor,
    DeleteSubscriptionGroupProcessor,
    GetBrokerConsumeStatsProcessor,
    UpdateAndCreateSubscriptionGroupProcessor,
)
from broker.processors.stats_view import ViewBrokerStatsDataProcessor
from broker.processors.store_admin import (
    CleanExpiredConsumeQueueProcessor,
    CleanUnusedTopicProcessor,
    DeleteExpiredCommitLogProcessor,
)
from rocketmq_wire import RequestCode
from rocketmq_wire.transport import Handler

if TYPE_CHECKING:
    from broker.broker import Broker


def extra_handlers(broker: Broker) -> dict[int, Handler]:
    """Request code -> handler for the admin requests of the modules above."""
    return {
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: UpdateAndCreateSubscriptionGroupProcessor(broker),
        RequestCode.DELETE_SUBSCRIPTIONGROUP: DeleteSubscriptionGroupProcessor(broker),
        RequestCode.CLONE_GROUP_OFFSET: CloneGroupOffsetProcessor(broker),
        RequestCode.GET_BROKER_CONSUME_STATS: GetBrokerConsumeStatsProcessor(broker),
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: CleanExpiredConsumeQueueProcessor(broker),
        RequestCode.DELETE_EXPIRED_COMMITLOG: DeleteExpiredCommitLogProcessor(broker),
        RequestCode.CLEAN_UNUSED_TOPIC: CleanUnusedTopicProcessor(broker),
        RequestCode.VIEW_BROKER_STATS_DATA: ViewBrokerStatsDataProcessor(broker),
        RequestCode.QUERY_CONSUME_QUEUE: QueryConsumeQueueProcessor(broker),
    }
