"""Consume traces, as Apache's ``ConsumeMessageTraceHookImpl``: a ``SubBefore`` record per message before
the listener runs and a ``SubAfter`` record (success, cost, ``ConsumeReturnType``) after it, sharing one
request id; queued on a :class:`client.trace.TraceDispatcher`, so the listener never waits for them."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any

from client.trace import TraceDispatcher, now_ms
from consumer.listener import ConsumeStatus
from rocketmq_wire.message import MessageExt
from rocketmq_wire.message import const as props
from rocketmq_wire.topics import DEFAULT_REGION
from rocketmq_wire.trace import (
    JAVA_NULL,
    ConsumeReturnType,
    TraceBean,
    TraceContext,
    TraceMessageType,
    TraceType,
)

logger = logging.getLogger("consumer.trace")

_SUCCESS = {ConsumeStatus.CONSUME_SUCCESS, ConsumeStatus.SUCCESS}


def _bean(message: MessageExt, client_host: str) -> TraceBean:
    return TraceBean(
        topic=message.topic,
        msg_id=message.unique_id or message.msg_id,
        offset_msg_id=message.msg_id,
        tags=message.tags if message.tags is not None else JAVA_NULL,
        keys=" ".join(message.keys) if message.keys else JAVA_NULL,
        store_host=message.store_host,
        client_host=client_host,
        store_time=message.store_timestamp,
        retry_times=message.reconsume_times,
        body_length=message.store_size,
        msg_type=TraceMessageType.NORMAL,
    )


def traced_handler(
    handler: Any, tracer: TraceDispatcher, group: str, client_id: Callable[[], str]
) -> Callable[[list[MessageExt], Any], Any]:
    """``handler`` with SubBefore/SubAfter records written around each call; tracing never raises."""

    async def call(messages: list[MessageExt], context: Any) -> ConsumeStatus | None:
        traced = [
            m
            for m in messages
            if not m.topic.startswith(tracer.trace_topic) and m.get_property(props.TRACE_ON) != "false"
        ]
        before: TraceContext | None = None
        if traced:
            try:
                host = client_id().split("@")[0]
                region = traced[0].get_property(props.MSG_REGION) or DEFAULT_REGION
                before = TraceContext(
                    TraceType.SUB_BEFORE,
                    timestamp=now_ms(),
                    region_id=region,
                    group_name=group,
                    request_id=uuid.uuid4().hex.upper(),
                    beans=[_bean(m, host) for m in traced],
                )
                tracer.append(before)
            except Exception:
                logger.exception("group %s: writing a SubBefore trace record failed", group)
                before = None
        status: ConsumeStatus | None = None
        code = ConsumeReturnType.EXCEPTION
        try:
            status = await handler(messages, context)
            if status is None:
                code = ConsumeReturnType.RETURNNULL
            elif status in _SUCCESS:
                code = ConsumeReturnType.SUCCESS
            else:
                code = ConsumeReturnType.FAILED
            return status
        finally:
            if before is not None:
                try:
                    end = now_ms()
                    tracer.append(
                        TraceContext(
                            TraceType.SUB_AFTER,
                            timestamp=end,
                            region_id=before.region_id,
                            group_name=group,
                            request_id=before.request_id,
                            cost_time=(end - before.timestamp) // max(1, len(messages)),
                            success=code is ConsumeReturnType.SUCCESS,
                            context_code=int(code),
                            beans=before.beans,
                        )
                    )
                except Exception:
                    logger.exception("group %s: writing a SubAfter trace record failed", group)

    return call
