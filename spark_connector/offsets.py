"""Queue offsets as the source's options and Spark's checkpoints write them.

One JSON shape serves both, so an offset copied out of a checkpoint can be given back as
``startingOffsets``. A query on one ``topic`` writes ``{"broker-a": {"0": 12, "1": 40}}``: broker name, queue
id, offset (the next message to read). A query on several topics (``topics``, ``topicPattern``) adds the
topic in front, ``{"Orders": {"broker-a": {"0": 12}}}``, as Spark's Kafka source keys its offsets by topic.
Inside an explicit spec, -2 stands for the queue's earliest offset and -1 for its latest, as in Kafka's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Literal, TypeAlias, TypeVar

from spark_connector.errors import OptionError

#: A message queue of one topic: (broker name, queue id).
QueueKey: TypeAlias = tuple[str, int]
#: A message queue of the query: (topic, broker name, queue id).
TopicQueue: TypeAlias = tuple[str, str, int]
#: ``"earliest"``, ``"latest"``, or an offset per queue (-2 / -1 for earliest / latest).
OffsetSpec: TypeAlias = Literal["earliest", "latest"] | dict[TopicQueue, int]

#: Any queue key (the functions below work on one topic's keys and on the query's alike).
K = TypeVar("K", bound=tuple[Any, ...])

EARLIEST = -2
LATEST = -1


class OffsetSpecError(OptionError):
    """An offsets option or a checkpointed offset is not in the expected JSON shape."""


def parse_offset_spec(text: str, option: str, single_topic: str | None = None) -> OffsetSpec:
    """``earliest``, ``latest`` or the JSON form; ``option`` names the option in error messages.

    ``single_topic``: the query reads this one topic (option ``topic``), so the topic level may be left out.
    """
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
    offsets = topic_offsets_from_json(parsed, option, single_topic)
    for (_topic, broker, queue_id), offset in offsets.items():
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


def _is_queue_level(value: Any) -> bool:
    """Whether a decoded JSON object maps queue ids to numbers (its first value is not an object)."""
    return isinstance(value, dict) and all(not isinstance(inner, dict) for inner in value.values())


def topic_offsets_from_json(value: Any, what: str, single_topic: str | None = None) -> dict[TopicQueue, int]:
    """The topic-keyed form ``{"topic": {"broker": {"queueId": offset}}}`` as a flat map; with
    ``single_topic`` the topic level may be missing (``{"broker": {"queueId": offset}}``)."""
    if not isinstance(value, dict):
        raise OffsetSpecError(f"{what} must be a JSON object, got {value!r}")
    if single_topic is not None and all(_is_queue_level(inner) for inner in value.values()):
        return {
            (single_topic, broker, queue): offset
            for (broker, queue), offset in offsets_from_json(value, what).items()
        }
    result: dict[TopicQueue, int] = {}
    for topic, brokers in value.items():
        if not isinstance(brokers, dict) or not all(isinstance(b, dict) for b in brokers.values()):
            raise OffsetSpecError(
                f'{what}: expected {{"topic": {{"broker": {{"queueId": offset}}}}}} (a query on several '
                f"topics names the topic), got {topic!r}: {brokers!r}"
            )
        if single_topic is not None and topic != single_topic:
            raise OffsetSpecError(f"{what} names topic {topic!r}, but the query reads {single_topic!r} only")
        for (broker, queue), offset in offsets_from_json(brokers, f"{what} of topic {topic!r}").items():
            result[(str(topic), broker, queue)] = offset
    return result


def topic_offsets_to_json(offsets: Mapping[TopicQueue, int], single_topic: str | None) -> dict[str, Any]:
    """The checkpoint form: without the topic level when the query reads ``single_topic`` only (the form
    older checkpoints have), else keyed by topic first; sorted, so equal offsets serialize the same."""
    by_topic: dict[str, dict[QueueKey, int]] = {}
    for (topic, broker, queue), offset in offsets.items():
        by_topic.setdefault(topic, {})[(broker, queue)] = offset
    if single_topic is not None:
        return offsets_to_json(by_topic.get(single_topic, {}))
    return {topic: offsets_to_json(by_topic[topic]) for topic in sorted(by_topic)}


def resolve_offsets(
    spec: Literal["earliest", "latest"] | Mapping[K, int],
    queues: Iterable[K],
    min_offsets: Mapping[K, int],
    max_offsets: Mapping[K, int],
    *,
    default: Literal["earliest", "latest"],
) -> dict[K, int]:
    """A concrete offset per queue: named positions become the queue's bounds, explicit offsets are kept
    (clamped into the queue's range) and queues an explicit spec leaves out take ``default``."""
    result: dict[K, int] = {}
    for queue in queues:
        low, high = min_offsets[queue], max_offsets[queue]
        if not isinstance(spec, str):
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


def unknown_queues(spec: Literal["earliest", "latest"] | Mapping[K, int], queues: Iterable[K]) -> list[K]:
    """Queues an explicit spec names that the topic does not have (a typo in a broker name, say)."""
    if isinstance(spec, str):
        return []
    known = set(queues)
    return sorted(queue for queue in spec if queue not in known)


def waiting_messages(start: Mapping[K, int], latest: Mapping[K, int]) -> int:
    """Messages between ``start`` and ``latest`` (queues missing from ``start`` counted from offset 0)."""
    return sum(max(high - start.get(queue, 0), 0) for queue, high in latest.items())


def cap_offsets(start: Mapping[K, int], latest: Mapping[K, int], max_messages: int) -> dict[K, int]:
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
