"""``startingOffsetsByTimestamp`` / ``endingOffsetsByTimestamp``: where a read starts or ends, by store time.

Spark's Kafka source takes ``{"topic": {"partition": timestamp}}`` (and one global ``startingTimestamp``).
A RocketMQ queue is named by its broker as well, so the per-queue form is ``{"topic": {"broker": {"queueId":
timestamp}}}``; a topic may also take one timestamp for all its queues (``{"topic": timestamp}``), and a bare
number applies to every queue the query reads. With the ``topic`` option the topic level may be left out.

The broker turns a timestamp into an offset (SEARCH_OFFSET_BY_TIMESTAMP): the first message stored at or
after that time. As a start that message is the first read; as an end it is the first not read.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from spark_connector.errors import OptionError
from spark_connector.offsets import TopicQueue, offsets_from_json


@dataclasses.dataclass(frozen=True)
class TimestampSpec:
    """Epoch milliseconds per queue, per topic, or for every queue (the most specific one applies)."""

    everywhere: int | None = None
    per_topic: tuple[tuple[str, int], ...] = ()
    per_queue: tuple[tuple[TopicQueue, int], ...] = ()

    def for_queue(self, queue: TopicQueue) -> int | None:
        """The timestamp that positions ``queue``, or None when the spec leaves it to the offsets option."""
        for key, stamp in self.per_queue:
            if key == queue:
                return stamp
        for topic, stamp in self.per_topic:
            if topic == queue[0]:
                return stamp
        return self.everywhere


def _stamp(value: Any, option: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise OptionError(
            f"option {option!r}: the timestamp of {where} must be epoch milliseconds, got {value!r}"
        )
    return value


def parse_timestamp_spec(text: str, option: str, single_topic: str | None) -> TimestampSpec:
    """A bare number or the JSON forms above; ``single_topic`` lets the topic level be left out."""
    try:
        parsed = json.loads(text)
    except ValueError:
        raise OptionError(
            f"option {option!r} must be epoch milliseconds or JSON like "
            f'{{"Orders": {{"broker-a": {{"0": 1700000000000}}}}}} or {{"Orders": 1700000000000}}, '
            f"got {text!r}"
        ) from None
    if not isinstance(parsed, dict):
        return TimestampSpec(everywhere=_stamp(parsed, option, "every queue"))
    if single_topic is not None and parsed and all(isinstance(v, dict) for v in parsed.values()):
        if all(not isinstance(inner, dict) for v in parsed.values() for inner in v.values()):
            parsed = {single_topic: parsed}
    per_topic: list[tuple[str, int]] = []
    per_queue: list[tuple[TopicQueue, int]] = []
    for topic, value in parsed.items():
        if single_topic is not None and topic != single_topic:
            raise OptionError(
                f"option {option!r} names topic {topic!r}, but the query reads {single_topic!r} only"
            )
        if isinstance(value, dict):
            try:
                queues = offsets_from_json(value, f"option {option!r} of topic {topic!r}")
            except OptionError as exc:
                raise OptionError(str(exc).replace("offset", "timestamp")) from None
            for (broker, queue_id), stamp in sorted(queues.items()):
                where = f"{topic} {broker} queue {queue_id}"
                per_queue.append(((str(topic), broker, queue_id), _stamp(stamp, option, where)))
        else:
            per_topic.append((str(topic), _stamp(value, option, f"topic {topic}")))
    return TimestampSpec(per_topic=tuple(per_topic), per_queue=tuple(per_queue))
