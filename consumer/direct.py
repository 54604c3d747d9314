"""Answering CONSUME_MESSAGE_DIRECTLY: hand one message to the listener now and say how it went.

An operator (``mqadmin consumeMessage``, a dashboard's "resend to this consumer") asks a broker to have one
client consume a given stored message; the broker relays it with the message as the body. Java's client
calls its listener outside the normal flow -- no process queue, no offset, no retry, no statistics -- and
reports the verdict as a :class:`~rocketmq_wire.bodies.running_info.CMResult`: CR_SUCCESS / CR_LATER for
the listener's two verdicts, CR_RETURN_NULL when it returned nothing, CR_THROW_EXCEPTION (with the
exception as the remark) when it raised; ``order`` says whether the listener is an orderly one. The
listener sees the message as it would in normal consumption: the original topic of a retried message,
topics without the namespace.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from consumer import commands
from consumer.diagnostics import exception_simple_desc
from consumer.listener import ConsumeConcurrentlyContext, ConsumeOrderlyContext, ConsumeStatus
from consumer.running_info import not_this_group
from consumer.subscription import restore_retry_topic
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.running_info import CMResult, ConsumeMessageDirectlyResult
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.consumer import ConsumeMessageDirectlyResultRequestHeader
from rocketmq_wire.message import MessageExt, decode_message

logger = logging.getLogger("consumer.direct")

#: ``async def handler(messages, context) -> ConsumeStatus`` (concurrent or orderly).
Handler = Callable[[list[MessageExt], Any], Awaitable[ConsumeStatus | None]]


def verdict(status: object) -> tuple[CMResult, str | None]:
    """A listener's answer as a ``CMResult`` (and a remark when the answer is not a verdict at all)."""
    if status is None:
        return CMResult.CR_RETURN_NULL, None
    if isinstance(status, ConsumeStatus):
        return (CMResult.CR_SUCCESS if status.succeeded else CMResult.CR_LATER), None
    return CMResult.CR_THROW_EXCEPTION, f"the listener returned {status!r}, not a ConsumeStatus"


async def consume_directly(
    handler: Handler, message: MessageExt, *, group: str, broker_name: str | None, orderly: bool
) -> ConsumeMessageDirectlyResult:
    """Call ``handler`` on ``message`` alone and report the outcome (Java's ``consumeMessageDirectly``)."""
    queue = MessageQueue(topic=message.topic, broker_name=broker_name or "", queue_id=message.queue_id)
    restore_retry_topic(message, group)
    context: ConsumeConcurrentlyContext | ConsumeOrderlyContext
    if orderly:
        context = ConsumeOrderlyContext(message_queue=queue)
    else:
        context = ConsumeConcurrentlyContext(message_queue=queue)
    result = ConsumeMessageDirectlyResult(order=orderly, auto_commit=True)
    began = time.monotonic()
    try:
        result.consume_result, result.remark = verdict(await handler([message], context))
    except Exception as exc:
        logger.warning(
            "group %s: the listener raised on message %s consumed directly",
            group,
            message.client_msg_id,
            exc_info=True,
        )
        result.consume_result, result.remark = CMResult.CR_THROW_EXCEPTION, exception_simple_desc(exc)
    result.spent_time_mills = int((time.monotonic() - began) * 1000)
    logger.info(
        "group %s: message %s consumed directly: %s in %d ms",
        group,
        message.client_msg_id,
        result.consume_result,
        result.spent_time_mills,
    )
    return result


async def answer(
    request: RemotingCommand,
    *,
    group: str,
    version: int,
    consume: Callable[[MessageExt, str | None], Awaitable[ConsumeMessageDirectlyResult]] | None,
) -> RemotingCommand:
    """The response to a relayed CONSUME_MESSAGE_DIRECTLY; ``consume`` ``None``: this consumer has no
    listener (a lite pull consumer), which Java answers as for an unknown group."""
    try:
        header = request.read_header(ConsumeMessageDirectlyResultRequestHeader)
    except CodecError as exc:
        remark = f"unreadable CONSUME_MESSAGE_DIRECTLY header: {exc}"
        return commands.client_response(request, version, ResponseCode.SYSTEM_ERROR, remark)
    if header.consumer_group != group or consume is None:
        remark = not_this_group(header.consumer_group)
        return commands.client_response(request, version, ResponseCode.SYSTEM_ERROR, remark)
    try:
        message, _ = decode_message(request.body)
    except CodecError as exc:
        remark = f"the message to consume does not decode: {exc}"
        return commands.client_response(request, version, ResponseCode.SYSTEM_ERROR, remark)
    result = await consume(message, header.broker_name)
    return commands.client_response(request, version, ResponseCode.SUCCESS, body=result.to_json())
