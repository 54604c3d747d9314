"""Queue offsets as the source's options and Spark's checkpoints write them.

One JSON shape serves both: ``{"broker-a": {"0": 12, "1": 40}}``, broker name then queue id then offset
(the next message to read). Spark keeps a streaming query's progress in exactly this form, so an offset
copied out of a checkpoint can be given back as ``startingOffsets``. Inside an explicit spec, -2 stands for
the queue's earliest offset and -1 for its latest, as in Spark's Kafka source.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias

from spark_connector.errors import OptionError

#: A message queue of the topic: (broker name, queue id).
QueueKey: TypeAlias = tuple[str, int]
#: ``"earliest"``, ``"latest"``, or an offset per queue (-2 / -1 for earliest / latest).
OffsetSpec: TypeAlias = Literal["earliest", "latest"] | dict[QueueKey, int]

EARLIEST = -2
LATEST = -1


class OffsetSpecError(OptionError):
    """An offsets option or a checkpointed offset is not in the expected JSON shape."""


def parse_offset_spec(text: str, option: str) -> OffsetSpec:
    """``earliest``, ``latest`` or the JSON form; ``option`` names the option in error messages."""
    lowered = text.strip().lower()
    if lowered == "earliest":
        return "earliest"
    if lowered == "latest":
        return "latest"
    try:
        parsed = json.loads(text)
    except ValueError:
        raise OffsetSpecError(
            f"option {option!r} must be 'earliest', 'latest' or JSON like "
            f'{{"broker-a": {{"0": 12}}}}, got {text!r}'
        ) from None
    offsets = offsets_from_json(parsed, option)
    for (broker, queue_id), offset in offsets.items():
        if offset < EARLIEST:
            raise OffsetSpecError(
                f"option {option!r}: offset {offset} of {broker} queue {queue_id} is negative "
                "(only -2 for earliest and -1 for latest are allowed)"
            )
    return offsets


def offsets_from_json(value: Any, what: str = "offsets") -> dict[QueueKey, int]:
    """``{"broker": {"queueId": offset}}`` (already decoded) as a flat map."""
    if not isinstance(value, dict):
        raise OffsetSpecError(f"{what} must be a JSON object of broker names, got {value!r}")
    result: dict[QueueKey, int] = {}
    for broker, queues in value.items():
        if not isinstance(queues, dict):
            raise OffsetSpecError(f"{what}: broker {broker!r} must map queue ids to offsets, got {queues!r}")
        for queue_text, offset in queues.items():
            try:
                queue_id = int(queue_text)
            except ValueError:
                raise OffsetSpecError(
                    f"{what}: queue id {queue_text!r} of {broker!r} is not a number"
                ) from None
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise OffsetSpecError(
                    f"{what}: offset of {broker} queue {queue_id} is not an integer: {offset!r}"
                )
            result[(str(broker), queue_id)] = offset
    return result


def offsets_to_json(offsets: Mapping[QueueKey, int]) -> dict[str, dict[str, int]]:
    """The JSON-ready form, brokers and queues sorted so equal offsets always serialize the same."""
    result: dict[str, dict[str, int]] = {}
    for broker, queue_id in sorted(offsets):
        result.setdefault(broker, {})[str(queue_id)] = offsets[(broker, queue_id)]
    return result


def resolve_offsets(
    spec: OffsetSpec,
    queues: Iterable[QueueKey],
    min_offsets: Mapping[QueueKey, int],
    max_offsets: Mapping[QueueKey, int],
    *,
    default: Literal["earliest", "latest"],
) -> dict[QueueKey, int]:
    """A concrete offset per queue: named positions become the queue's bounds, explicit offsets are kept
    (clamped into the queue's range) and queues an explicit spec leaves out take ``default``."""
    result: dict[QueueKey, int] = {}
    for queue in queues:
        low, high = min_offsets[queue], max_offsets[queue]
        if isinstance(spec, dict):
            wanted = spec.get(queue, EARLIEST if default == "earliest" else LATEST)
        else:
            wanted = EARLIEST if spec == "earliest" else LATEST
        if wanted == EARLIEST:
            result[queue] = low
        elif wanted == LATEST:
            result[queue] = high
        else:
            result[queue] = min(max(wanted, low), high)
    return result


def unknown_queues(spec: OffsetSpec, queues: Iterable[QueueKey]) -> list[QueueKey]:
    """Queues an explicit spec names that the topic does not have (a typo in a broker name, say)."""
    if not isinstance(spec, dict):
        return []
    known = set(queues)
    return sorted(queue for queue in spec if queue not in known)


def cap_offsets(
    start: Mapping[QueueKey, int], latest: Mapping[QueueKey, int], max_messages: int
) -> dict[QueueKey, int]:
    """End offsets that advance at most ``max_messages`` past ``start`` in total (a trigger's budget).

    Each queue gets a share in proportion to what it has waiting, rounded down, and what rounding leaves
    goes one message at a time to the queues with the most left, so the budget is used whole and every
    queue with a backlog is eventually read. Queues missing from ``start`` are read from offset 0.
    """
    waiting = {queue: max(high - start.get(queue, 0), 0) for queue, high in latest.items()}
    total = sum(waiting.values())
    if total <= max_messages:
        return dict(latest)
    grants = {queue: max_messages * count // total for queue, count in waiting.items()}
    left = max_messages - sum(grants.values())
    by_backlog = sorted(waiting, key=lambda queue: (-(waiting[queue] - grants[queue]), queue))
    for queue in by_backlog[:left]:
        grants[queue] += 1
    return {queue: start.get(queue, 0) + grants[queue] for queue in latest}
