"""Turning the rows a task receives into messages, column by column.

Spark gives an Arrow writer its partition as record batches; converting whole columns to Python lists at
once (``to_pylist``) and walking them row by row is much cheaper than building a ``Row`` per record. The
older row-based writer path goes through the same function after transposing its rows. Which columns may
appear and with which types was checked on the driver (:mod:`spark_connector.columns`); what is checked
here is what only the values can tell: nulls, reserved property names, keys with spaces, negative delays.

``deliver_time`` makes a row a RocketMQ 5 timer message: a timestamp (a naive one is local time, as Spark's
rows give it) or epoch milliseconds, written as Java's ``setDeliverTimeMs`` writes it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import Message
from spark_connector.errors import RowError

#: Columns the sink understands, in the order the documentation lists them.
SINK_COLUMNS = ("body", "topic", "tags", "keys", "properties", "delay_level", "sharding_key", "deliver_time")


@dataclasses.dataclass(slots=True)
class Outgoing:
    """One row as a message, and the key that orders it (``None``: any queue will do)."""

    message: Message
    sharding_key: str | None = None

    @property
    def batchable(self) -> bool:
        """SEND_BATCH_MESSAGE carries neither a chosen queue per message nor a delay level or time."""
        return self.sharding_key is None and self.message.delay_level == 0 and not self.message.is_timer


def _column(columns: Mapping[str, Sequence[Any]], name: str, count: int) -> Sequence[Any]:
    values = columns.get(name)
    return values if values is not None else [None] * count


def _body(value: Any, row: int) -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if value is None:
        raise RowError(f"row {row}: column 'body' is null; every message needs a body")
    raise RowError(f"row {row}: column 'body' holds {type(value).__name__}, not binary or string")


def _keys(value: Any, row: int) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    keys = []
    for key in value:
        if key is None:
            raise RowError(f"row {row}: column 'keys' holds a null key")
        keys.append(key)
    return keys


def _properties(value: Any, row: int) -> list[tuple[str, str]]:
    if value is None:
        return []
    pairs: Iterable[tuple[Any, Any]] = value.items() if isinstance(value, Mapping) else value
    result = []
    for name, text in pairs:
        if text is None:
            raise RowError(f"row {row}: column 'properties' has a null value for {name!r}")
        result.append((name, text))
    return result


def _delay(value: Any, row: int) -> int:
    if value is None:
        return 0
    level = int(value)
    if level < 0:
        raise RowError(f"row {row}: column 'delay_level' is negative ({level})")
    return level


def _deliver_time(value: Any, row: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise RowError(f"row {row}: column 'deliver_time' is negative ({value} ms)")
        return value
    raise RowError(f"row {row}: column 'deliver_time' holds {type(value).__name__}, not a timestamp or long")


def messages_from_columns(
    columns: Mapping[str, Sequence[Any]], count: int, *, topic: str | None, first_row: int = 0
) -> list[Outgoing]:
    """``count`` rows given as one list per column; ``topic`` (the option) overrides the topic column.

    ``first_row`` is the position of the first of these rows in the task's partition, for error messages.
    """
    bodies = _column(columns, "body", count)
    topics = _column(columns, "topic", count)
    tags_column = _column(columns, "tags", count)
    keys_column = _column(columns, "keys", count)
    properties_column = _column(columns, "properties", count)
    delays = _column(columns, "delay_level", count)
    sharding_keys = _column(columns, "sharding_key", count)
    deliver_times = _column(columns, "deliver_time", count)
    result: list[Outgoing] = []
    for index in range(count):
        row = first_row + index
        row_topic = topic or topics[index]
        if not row_topic:
            raise RowError(f"row {row}: column 'topic' is null or empty and no 'topic' option is set")
        body = _body(bodies[index], row)
        delay = _delay(delays[index], row)
        deliver = _deliver_time(deliver_times[index], row)
        if deliver is not None and delay:
            raise RowError(f"row {row}: 'delay_level' and 'deliver_time' are both set; a message takes one")
        try:
            message = Message(
                row_topic,
                body,
                tags_column[index] or None,
                _keys(keys_column[index], row),
                delay_level=delay,
                deliver_time_ms=deliver,
            )
        except CodecError as exc:
            raise RowError(f"row {row}: column 'keys': {exc}") from None
        for name, text in _properties(properties_column[index], row):
            try:
                message.put_user_property(name, text)
            except CodecError as exc:
                raise RowError(f"row {row}: column 'properties': {exc}") from None
        result.append(Outgoing(message, sharding_keys[index] or None))
    return result


def columns_of_record_batch(batch: Any) -> tuple[dict[str, list[Any]], int]:
    """A ``pyarrow.RecordBatch`` as Python lists per column (map columns become lists of pairs)."""
    names: list[str] = batch.schema.names
    return {name: batch.column(i).to_pylist() for i, name in enumerate(names)}, batch.num_rows


def columns_of_rows(rows: Sequence[Any]) -> tuple[dict[str, list[Any]], int]:
    """Spark ``Row`` objects (or dicts) transposed into one list per column."""
    if not rows:
        return {}, 0
    first = rows[0]
    names = list(first.keys()) if isinstance(first, Mapping) else list(first.__fields__)
    if isinstance(first, Mapping):
        return {name: [row.get(name) for row in rows] for name in names}, len(rows)
    return {name: [row[i] for row in rows] for i, name in enumerate(names)}, len(rows)


def outgoing_chunks(
    chunks: Iterable[Any], *, topic: str | None, rows_per_chunk: int = 1024
) -> Iterator[list[Outgoing]]:
    """Messages of a task's input, one list per Arrow record batch (or per ``rows_per_chunk`` rows when
    Spark hands over ``Row`` objects)."""
    position = 0
    pending_rows: list[Any] = []
    for chunk in chunks:
        if hasattr(chunk, "num_rows") and hasattr(chunk, "schema"):
            columns, count = columns_of_record_batch(chunk)
        else:
            pending_rows.append(chunk)
            if len(pending_rows) < rows_per_chunk:
                continue
            columns, count = columns_of_rows(pending_rows)
            pending_rows = []
        yield messages_from_columns(columns, count, topic=topic, first_row=position)
        position += count
    if pending_rows:
        columns, count = columns_of_rows(pending_rows)
        yield messages_from_columns(columns, count, topic=topic, first_row=position)
