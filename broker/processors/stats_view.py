"""VIEW_BROKER_STATS_DATA (mqadmin ``statsAll``): one item of the broker's statistics.

Apache answers SYSTEM_ERROR "The stats <name> <key> not exist" for an item it has not collected. This
broker collects broker-wide totals only (``broker.stats``), not Apache's per-topic and per-group items, so
it gives that answer for every item: mqadmin then prints zero rates, as it does for a fresh Apache broker.
"""

from __future__ import annotations

from broker.processors.common import read_header
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.headers.admin import ViewBrokerStatsDataRequestHeader
from rocketmq_wire.transport import Connection


class ViewBrokerStatsDataProcessor:
    """Needs no part of the broker: no per-item statistics are kept to look up."""

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, ViewBrokerStatsDataRequestHeader)
        return request.make_response(
            ResponseCode.SYSTEM_ERROR, f"The stats <{header.stats_name}> <{header.stats_key}> not exist"
        )
