"""GET_MIN_OFFSET, GET_MAX_OFFSET, SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME: the bounds of
a queue and where a point in time falls in it. Pull consumers and admin tools start from these."""

from __future__ import annotations

from broker.processors.common import read_header
from broker.store import BoundaryType, MessageStore
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


class GetMinOffsetProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetMinOffsetRequestHeader)
        offset = self._store.get_min_offset(str(header.topic), int(header.queue_id or 0))
        return request.make_response(ResponseCode.SUCCESS, header=GetMinOffsetResponseHeader(offset=offset))


class GetMaxOffsetProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetMaxOffsetRequestHeader)
        offset = self._store.get_max_offset(str(header.topic), int(header.queue_id or 0))
        return request.make_response(ResponseCode.SUCCESS, header=GetMaxOffsetResponseHeader(offset=offset))


class SearchOffsetProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, SearchOffsetRequestHeader)
        boundary = (
            BoundaryType.UPPER if (header.boundary_type or "").upper() == "UPPER" else BoundaryType.LOWER
        )
        offset = self._store.get_offset_by_timestamp(
            str(header.topic), int(header.queue_id or 0), int(header.timestamp or 0), boundary
        )
        return request.make_response(ResponseCode.SUCCESS, header=SearchOffsetResponseHeader(offset=offset))


class GetEarliestMsgStoretimeProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetEarliestMsgStoretimeRequestHeader)
        timestamp = self._store.get_earliest_message_time(str(header.topic), int(header.queue_id or 0))
        return request.make_response(
            ResponseCode.SUCCESS, header=GetEarliestMsgStoretimeResponseHeader(timestamp=timestamp)
        )
