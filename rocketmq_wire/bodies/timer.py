"""The answers to GET_TIMER_CHECK_POINT (binary) and GET_TIMER_METRICS (fastjson), as Apache's broker sends.

GET_TIMER_CHECK_POINT's body is Apache's ``TimerCheckpoint.encode``: seven big-endian longs (56 bytes) --
the wheel's read time, the timer log's flushed position, the timer queue offset read up to, the master's
timer queue offset, and the checkpoint's data version (state version, timestamp, counter).

GET_TIMER_METRICS's body is a ``TimerMetricsSerializeWrapper``: per real topic, how many timer messages
wait (``count``) and when that count last changed (``timeStamp``), and a data version.
"""

from __future__ import annotations

import dataclasses
import struct
from typing import Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, same, write_map
from rocketmq_wire.bodies.java_collections import CONCURRENT_HASH_MAP, read_map, string_hash
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.errors import CodecError

_CHECKPOINT = struct.Struct(">7q")


@dataclasses.dataclass(frozen=True, slots=True)
class TimerCheckpointBody:
    last_read_time_ms: int
    last_timer_log_flush_pos: int
    last_timer_queue_offset: int
    master_timer_queue_offset: int
    state_version: int
    timestamp: int
    counter: int

    def encode(self) -> bytes:
        return _CHECKPOINT.pack(*dataclasses.astuple(self))

    @classmethod
    def decode(cls, data: bytes) -> Self:
        if len(data) != _CHECKPOINT.size:
            raise CodecError(f"a timer checkpoint is {_CHECKPOINT.size} bytes, not {len(data)}")
        return cls(*_CHECKPOINT.unpack(data))


@dataclasses.dataclass(frozen=True, slots=True)
class TimerMetric:
    count: int
    time_stamp: int

    def to_bean(self) -> fastjson.Bean:
        return bean(count=self.count, timeStamp=self.time_stamp)


@dataclasses.dataclass(slots=True)
class TimerMetricsBody(JsonBody):
    timing_count: dict[str, TimerMetric] = dataclasses.field(default_factory=dict)
    data_version: DataVersion = dataclasses.field(default_factory=DataVersion)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            dataVersion=self.data_version.to_bean(),
            timingCount=write_map(
                self.timing_count, string_hash, CONCURRENT_HASH_MAP, same, lambda m: m.to_bean()
            ),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        counts: dict[str, TimerMetric] = {}
        for topic, metric in (obj.get_map("timingCount") or {}).items():
            fields = Fields(metric, f"timingCount[{topic!r}]")
            counts[str(topic)] = TimerMetric(fields.get_long("count"), fields.get_long("timeStamp"))
        version = obj.get_object("dataVersion")
        return cls(
            timing_count=read_map(counts.items(), string_hash, CONCURRENT_HASH_MAP),
            data_version=DataVersion.from_object(version) if version is not None else DataVersion(),
        )
