"""QUERY_MESSAGE and VIEW_MESSAGE_BY_ID: finding stored messages by key, unique key or commit-log offset
(Apache's ``QueryMessageProcessor``). Both answer with stored records as the body, as pulls do."""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.processors.common import read_header
from broker.store import MessageStore
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.headers.query import (
    UNIQUE_KEY_QUERY,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketmq_wire.transport import Connection

#: The ext entry (not a header field) by which a query asks for the unique key rather than KEYS.


class QueryMessageProcessor:
    def __init__(self, *, config: BrokerConfig, store: MessageStore) -> None:
        self._config = config
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, QueryMessageRequestHeader)
        unique = request.fields().get(UNIQUE_KEY_QUERY) == "true"
        max_num = self._config.default_query_max_num if unique else int(header.max_num or 0)
        result = self._store.query_messages(
            str(header.topic),
            str(header.key),
            max_num,
            int(header.begin_timestamp or 0),
            int(header.end_timestamp or 0),
            unique_key=unique,
        )
        response_header = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phy_offset,
        )
        if result.messages:
            return request.make_response(ResponseCode.SUCCESS, header=response_header, body=result.body)
        return request.make_response(
            ResponseCode.QUERY_NOT_FOUND,
            "can not find message, maybe time range not correct",
            response_header,
        )


class ViewMessageByIdProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, ViewMessageRequestHeader)
        offset = int(header.offset or 0)
        data = self._store.lookup_message_by_physical_offset(offset)
        if data is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}"
            )
        return request.make_response(ResponseCode.SUCCESS, body=data)
