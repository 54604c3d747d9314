"""Message trace records as Apache's client (4.9.x ``TraceDataEncoder``) writes them; no I/O.

A trace message's body is one or more records, each ended by ``FIELD_SPLITOR`` (char 2), whose fields are
separated by ``CONTENT_SPLITOR`` (char 1). The first field names the record type; the field order per type:

* ``Pub``: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, bodyLength, costTime,
  msgType (ordinal), offsetMsgId, success
* ``SubBefore``: type, timestamp, regionId, group, requestId, msgId, retryTimes, keys
* ``SubAfter``: type, requestId, msgId, costTime, success, keys, contextCode, timestamp, group
* ``EndTransaction``: type, timestamp, regionId, group, topic, msgId, tags, keys, storeHost, msgType
  (ordinal), transactionId, transactionState, fromTransactionCheck

Java writes a missing value (no tags, no keys) as the text ``null``; that is kept on both sides. Trace
messages go to ``RMQ_SYS_TRACE_TOPIC`` (or a customized topic) with KEYS = each traced message's msgId and
keys, so a key query by msgId finds them.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable

from rocketmq_wire.topics import DEFAULT_REGION, TRACE_TOPIC

CONTENT_SPLITOR = "\x01"
FIELD_SPLITOR = "\x02"
#: ``TraceConstants.GROUP_NAME_PREFIX``: the trace producer's group is this plus the traced client's group.
TRACE_GROUP_PREFIX = "_INNER_TRACE_PRODUCER-"
#: ``TraceConstants.TRACE_INSTANCE_NAME``.
TRACE_INSTANCE_NAME = "PID_CLIENT_INNER_TRACE_PRODUCER"
#: Java's ``StringBuilder.append(null)``.
JAVA_NULL = "null"

__all__ = [
    "CONTENT_SPLITOR",
    "DEFAULT_REGION",
    "FIELD_SPLITOR",
    "JAVA_NULL",
    "TRACE_GROUP_PREFIX",
    "TRACE_INSTANCE_NAME",
    "TRACE_TOPIC",
    "ConsumeReturnType",
    "TraceBean",
    "TraceContext",
    "TraceMessageType",
    "TraceType",
    "decode_trace_data",
    "encode_trace_context",
    "encode_trace_data",
    "trace_keys",
]


class TraceType(enum.Enum):
    PUB = "Pub"
    SUB_BEFORE = "SubBefore"
    SUB_AFTER = "SubAfter"
    END_TRANSACTION = "EndTransaction"


class TraceMessageType(enum.IntEnum):
    """Java's ``MessageType``; records carry its ordinal."""

    NORMAL = 0
    TRANS_HALF = 1
    TRANS_COMMIT = 2
    DELAY = 3


class ConsumeReturnType(enum.IntEnum):
    """Java's ``ConsumeReturnType``; SubAfter's contextCode is its ordinal."""

    SUCCESS = 0
    TIME_OUT = 1
    EXCEPTION = 2
    RETURNNULL = 3
    FAILED = 4


@dataclasses.dataclass
class TraceBean:
    """One traced message (Java's ``TraceBean``)."""

    topic: str = ""
    msg_id: str = ""
    offset_msg_id: str = ""
    tags: str = ""
    keys: str = ""
    store_host: str = ""
    client_host: str = ""
    store_time: int = 0
    retry_times: int = 0
    body_length: int = 0
    msg_type: TraceMessageType | None = None
    transaction_id: str = ""
    transaction_state: str = ""
    from_transaction_check: bool = False


@dataclasses.dataclass
class TraceContext:
    """One trace event over one or more messages (Java's ``TraceContext``)."""

    trace_type: TraceType
    timestamp: int = 0
    region_id: str = DEFAULT_REGION
    group_name: str = ""
    cost_time: int = 0
    success: bool = True
    request_id: str = ""
    context_code: int = 0
    beans: list[TraceBean] = dataclasses.field(default_factory=list)


def _b(value: bool) -> str:
    return "true" if value else "false"


def _s(value: str | None) -> str:
    return JAVA_NULL if value is None else value


def _record(fields: Iterable[object]) -> str:
    return CONTENT_SPLITOR.join(str(f) for f in fields)


def encode_trace_context(ctx: TraceContext) -> str:
    """The records of one context (one per bean), each ended by ``FIELD_SPLITOR``."""
    out: list[str] = []
    t = ctx.trace_type
    for bean in ctx.beans:
        msg_type = int(bean.msg_type) if bean.msg_type is not None else 0
        if t is TraceType.PUB:
            fields: list[object] = [
                t.value, ctx.timestamp, ctx.region_id, ctx.group_name, bean.topic, bean.msg_id,
                _s(bean.tags), _s(bean.keys), bean.store_host, bean.body_length, ctx.cost_time,
                msg_type, bean.offset_msg_id, _b(ctx.success),
            ]  # fmt: skip
            out.append(_record(fields) + FIELD_SPLITOR)
        elif t is TraceType.SUB_BEFORE:
            fields = [
                t.value, ctx.timestamp, ctx.region_id, ctx.group_name, ctx.request_id, bean.msg_id,
                bean.retry_times, _s(bean.keys),
            ]  # fmt: skip
            out.append(_record(fields) + CONTENT_SPLITOR + FIELD_SPLITOR)
        elif t is TraceType.SUB_AFTER:
            fields = [
                t.value, ctx.request_id, bean.msg_id, ctx.cost_time, _b(ctx.success), _s(bean.keys),
                ctx.context_code, ctx.timestamp, ctx.group_name,
            ]  # fmt: skip
            out.append(_record(fields) + FIELD_SPLITOR)
        else:
            fields = [
                t.value, ctx.timestamp, ctx.region_id, ctx.group_name, bean.topic, bean.msg_id,
                _s(bean.tags), _s(bean.keys), bean.store_host, msg_type, _s(bean.transaction_id),
                bean.transaction_state, _b(bean.from_transaction_check),
            ]  # fmt: skip
            out.append(_record(fields) + CONTENT_SPLITOR + FIELD_SPLITOR)
    return "".join(out)


def encode_trace_data(contexts: Iterable[TraceContext]) -> str:
    """One trace message's body: the records of several contexts, concatenated."""
    return "".join(encode_trace_context(ctx) for ctx in contexts)


def trace_keys(ctx: TraceContext) -> list[str]:
    """The KEYS of the trace message carrying ``ctx``: each bean's msgId and its keys (Java's transKey)."""
    keys: list[str] = []
    for bean in ctx.beans:
        candidates = [bean.msg_id]
        if bean.keys and bean.keys != JAVA_NULL:
            candidates += bean.keys.split(" ")
        for key in candidates:
            if key and key not in keys:
                keys.append(key)
    return keys


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        return 0


def _msg_type(text: str) -> TraceMessageType | None:
    try:
        return TraceMessageType(int(text))
    except ValueError:
        return None


def _true(text: str) -> bool:
    return text.strip().lower() == "true"  # Java's Boolean.parseBoolean


def _decode_record(line: list[str]) -> TraceContext | None:
    kind = line[0]
    if kind == TraceType.PUB.value:
        size = len(line)
        line += [""] * (15 - size)
        bean = TraceBean(
            topic=line[4], msg_id=line[5], tags=line[6], keys=line[7], store_host=line[8],
            body_length=_int(line[9]), msg_type=_msg_type(line[11]),
        )  # fmt: skip
        if size <= 13:  # older clients: no offsetMsgId
            success = line[12]
        else:
            bean.offset_msg_id, success = line[12], line[13]
            bean.client_host = line[14]
        return TraceContext(
            TraceType.PUB, timestamp=_int(line[1]), region_id=line[2], group_name=line[3],
            cost_time=_int(line[10]), success=_true(success), beans=[bean],
        )  # fmt: skip
    if kind == TraceType.SUB_BEFORE.value:
        line += [""] * (8 - len(line))
        bean = TraceBean(msg_id=line[5], retry_times=_int(line[6]), keys=line[7])
        return TraceContext(
            TraceType.SUB_BEFORE, timestamp=_int(line[1]), region_id=line[2], group_name=line[3],
            request_id=line[4], beans=[bean],
        )  # fmt: skip
    if kind == TraceType.SUB_AFTER.value:
        line += [""] * (9 - len(line))
        bean = TraceBean(msg_id=line[2], keys=line[5])
        return TraceContext(
            TraceType.SUB_AFTER, request_id=line[1], cost_time=_int(line[3]), success=_true(line[4]),
            context_code=_int(line[6]), timestamp=_int(line[7]), group_name=line[8], beans=[bean],
        )  # fmt: skip
    if kind == TraceType.END_TRANSACTION.value:
        line += [""] * (13 - len(line))
        bean = TraceBean(
            topic=line[4], msg_id=line[5], tags=line[6], keys=line[7], store_host=line[8],
            msg_type=_msg_type(line[9]), transaction_id=line[10], transaction_state=line[11],
            from_transaction_check=_true(line[12]),
        )  # fmt: skip
        return TraceContext(
            TraceType.END_TRANSACTION, timestamp=_int(line[1]), region_id=line[2], group_name=line[3],
            beans=[bean],
        )  # fmt: skip
    return None


def decode_trace_data(text: str) -> list[TraceContext]:
    """Every record of a trace message's body, one context (with one bean) each; unknown types skipped."""
    found: list[TraceContext] = []
    for record in text.split(FIELD_SPLITOR):
        if not record.strip():
            continue
        ctx = _decode_record(record.split(CONTENT_SPLITOR))
        if ctx is not None:
            found.append(ctx)
    return found
