"""GET_CONSUMER_LIST_BY_GROUP, QUERY_CONSUMER_OFFSET, UPDATE_CONSUMER_OFFSET: what a consumer needs to
rebalance and to resume where its group left off (Apache's ``ConsumerManageProcessor``)."""

from __future__ import annotations

import logging

from broker.clients import ConsumerManager
from broker.processors.common import read_header
from broker.store import ConsumerOffsetStore, MessageStore
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.consumer import GetConsumerListByGroupResponseBody
from rocketmq_wire.headers.consumer import GetConsumerListByGroupRequestHeader
from rocketmq_wire.headers.offset import (
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.consumer_manage")


class GetConsumerListByGroupProcessor:
    def __init__(self, *, consumers: ConsumerManager) -> None:
        self._consumers = consumers

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetConsumerListByGroupRequestHeader)
        group = str(header.consumer_group)
        group_info = self._consumers.group(group)
        if group_info is not None:
            ids = group_info.client_ids()
            if ids:
                body = GetConsumerListByGroupResponseBody(consumer_id_list=ids).to_json()
                return request.make_response(ResponseCode.SUCCESS, body=body)
            log.warning("consumer group %s has no client ids (asked by %s)", group, conn.remote_address)
        else:
            log.warning("no consumer group %s (asked by %s)", group, conn.remote_address)
        return request.make_response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}")


class QueryConsumerOffsetProcessor:
    def __init__(self, *, offsets: ConsumerOffsetStore, store: MessageStore) -> None:
        self._offsets = offsets
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, QueryConsumerOffsetRequestHeader)
        group, topic, queue_id = str(header.consumer_group), str(header.topic), int(header.queue_id or 0)
        offset = self._offsets.query_offset(group, topic, queue_id)
        if offset < 0 and header.set_zero_if_not_found is False:
            return request.make_response(
                ResponseCode.QUERY_NOT_FOUND, "Not found, do not set to zero, maybe this group boot first"
            )
        if offset < 0 and self._store.get_min_offset(topic, queue_id) <= 0:
            # A group that never committed reads a queue whose start is still on disk from the beginning.
            offset = 0
        if offset >= 0:
            return request.make_response(
                ResponseCode.SUCCESS, header=QueryConsumerOffsetResponseHeader(offset=offset)
            )
        return request.make_response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )


class UpdateConsumerOffsetProcessor:
    def __init__(self, *, offsets: ConsumerOffsetStore) -> None:
        self._offsets = offsets

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, UpdateConsumerOffsetRequestHeader)
        self._offsets.commit_offset(
            str(header.consumer_group),
            str(header.topic),
            int(header.queue_id or 0),
            int(header.commit_offset or 0),
        )
        return request.make_response(ResponseCode.SUCCESS)
