"""Replies to requests (request-reply), which brokers push to the requesting client instance.

Java keeps the requests waiting for a reply in one process-wide table (``RequestFutureHolder``); here each
client instance keeps its own, so two producers in one process never see each other's replies. A broker
pushes a reply (PUSH_REPLY_MESSAGE_TO_CLIENT) on whichever connection the requester's client id has with
it, so the table belongs to the instance, not to one producer: the push names the responder's group, not
the requester's.
"""

from __future__ import annotations

import asyncio
import logging
import time

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.send import ReplyMessageRequestHeader
from rocketmq_wire.message import MessageExt, decode_properties, decompress_for_flag, encode_properties
from rocketmq_wire.message import const as props
from rocketmq_wire.transport import Connection

logger = logging.getLogger("client.replies")

#: The most a compressed reply may inflate to (a pushed body is not trusted to stay small).
MAX_REPLY_BODY = 64 * 1024 * 1024


class ReplyWaiters:
    """Requests waiting for their reply, by correlation id; ``handle_push`` serves the broker's push."""

    def __init__(self, version: int) -> None:
        self._version = version
        self._waiting: dict[str, asyncio.Future[MessageExt]] = {}

    def expect(self, correlation_id: str) -> asyncio.Future[MessageExt]:
        future: asyncio.Future[MessageExt] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        return future

    def forget(self, correlation_id: str) -> None:
        self._waiting.pop(correlation_id, None)

    def __len__(self) -> int:
        return len(self._waiting)

    async def handle_push(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        try:
            reply = self._decode(request)
        except CodecError as exc:
            logger.warning("unreadable reply pushed by %s: %s", conn.remote_address, exc)
            response = request.make_response(ResponseCode.SYSTEM_ERROR, "process reply message fail")
        else:
            correlation_id = reply.get_property(props.CORRELATION_ID)
            future = self._waiting.pop(correlation_id or "", None)
            if future is None:
                # Java answers success too: the request timed out here, or was never this instance's.
                logger.warning("reply for %s: no request here waits for it", correlation_id)
            elif not future.done():
                future.set_result(reply)
            response = request.make_response()
        response.version = self._version
        return response

    def _decode(self, request: RemotingCommand) -> MessageExt:
        header = request.read_header(ReplyMessageRequestHeader)
        properties = decode_properties(header.properties or "")
        properties[props.ARRIVE_TIME] = str(time.time_ns() // 1_000_000)
        sys_flag = header.sys_flag or 0
        return MessageExt(
            topic=header.topic or "",
            body=decompress_for_flag(request.body, sys_flag, MAX_REPLY_BODY),
            flag=header.flag or 0,
            properties_string=encode_properties(properties),
            queue_id=header.queue_id or 0,
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp or 0,
            born_host=header.born_host or "0.0.0.0:0",
            store_timestamp=header.store_timestamp or 0,
            store_host=header.store_host or "0.0.0.0:0",
            reconsume_times=header.reconsume_times or 0,
        )
