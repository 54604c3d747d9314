"""GET_MIN_OFFSET, GET_MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME: the bounds of
a queue and where a point in time falls in it. Pull consumers and admin tools start from these."""

from __future__ import annotations

from typing import TYPE_CHECKING

from broker.processors.common import read_header
from broker.store import BoundaryType
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.headers.offset import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
)
from rocketmq_wire.transport import Connection

if TYPE_CHECKING:
    from broker.broker import Broker


class GetMinOffsetProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetMinOffsetRequestHeader)
        offset = self._broker.store.get_min_offset(str(header.topic), int(header.queue_id or 0))
        return request.make_response(ResponseCode.SUCCESS, header=GetMinOffsetResponseHeader(offset=offset))


class GetMaxOffsetProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetMaxOffsetRequestHeader)
        offset = self._broker.store.get_max_offset(str(header.topic), int(header.queue_id or 0))
        return request.make_response(ResponseCode.SUCCESS, header=GetMaxOffsetResponseHeader(offset=offset))


class SearchOffsetProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, SearchOffsetRequestHeader)
        boundary = (
            BoundaryType.UPPER if (header.boundary_type or "").upper() == "UPPER" else BoundaryType.LOWER
        )
        offset = self._broker.store.get_offset_by_timestamp(
            str(header.topic), int(header.queue_id or 0), int(header.timestamp or 0), boundary
        )
        return request.make_response(ResponseCode.SUCCESS, header=SearchOffsetResponseHeader(offset=offset))


class GetEarliestMsgStoretimeProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetEarliestMsgStoretimeRequestHeader)
        timestamp = self._broker.store.get_earliest_message_time(str(header.topic), int(header.queue_id or 0))
        return request.make_response(
            ResponseCode.SUCCESS, header=GetEarliestMsgStoretimeResponseHeader(timestamp=timestamp)
        )
