"""Queue allocation: the splits Java's strategies produce, and that a group always covers every queue once."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from consumer.allocate import (
    allocate_averagely,
    allocate_by_circle,
    allocate_by_config,
    queue_sort_key,
    sorted_queues,
    strategy_named,
)
from rocketmq_wire.bodies.message_queue import MessageQueue


def queues(count: int, topic: str = "T", broker: str = "broker-a") -> list[MessageQueue]:
    return [MessageQueue(topic=topic, broker_name=broker, queue_id=i) for i in range(count)]


def ids(of: list[MessageQueue]) -> list[int]:
    return [q.queue_id for q in of]


MEMBERS = ["c0", "c1", "c2"]


def test_averagely_gives_contiguous_runs_with_the_remainder_to_the_first_members() -> None:
    mq = queues(8)
    shares = [ids(allocate_averagely("G", cid, mq, MEMBERS)) for cid in MEMBERS]
    assert shares == [[0, 1, 2], [3, 4, 5], [6, 7]]


def test_averagely_with_more_members_than_queues_leaves_the_last_ones_idle() -> None:
    mq = queues(2)
    members = ["a", "b", "c", "d"]
    assert [ids(allocate_averagely("G", cid, mq, members)) for cid in members] == [[0], [1], [], []]


def test_circle_deals_queues_like_cards() -> None:
    mq = queues(8)
    shares = [ids(allocate_by_circle("G", cid, mq, MEMBERS)) for cid in MEMBERS]
    assert shares == [[0, 3, 6], [1, 4, 7], [2, 5]]


def test_a_client_missing_from_the_member_list_gets_nothing() -> None:
    assert allocate_averagely("G", "stranger", queues(4), MEMBERS) == []
    assert allocate_by_circle("G", "stranger", queues(4), MEMBERS) == []


def test_empty_inputs_are_refused_as_in_java() -> None:
    with pytest.raises(ValueError, match="client id"):
        allocate_averagely("G", "", queues(1), MEMBERS)
    with pytest.raises(ValueError, match="no queues"):
        allocate_averagely("G", "c0", [], MEMBERS)
    with pytest.raises(ValueError, match="no client ids"):
        allocate_by_circle("G", "c0", queues(1), [])


def test_by_config_ignores_the_group() -> None:
    pinned = [MessageQueue(topic="T", broker_name="broker-b", queue_id=3)]
    strategy = allocate_by_config(pinned)
    assert strategy("G", "c1", queues(8), MEMBERS) == pinned
    assert strategy_named("by_config", pinned)("G", "c2", queues(2), ["c2"]) == pinned


def test_strategies_by_name() -> None:
    assert strategy_named("averagely") is allocate_averagely
    assert strategy_named("circle") is allocate_by_circle
    with pytest.raises(ValueError, match="needs the queues"):
        strategy_named("by_config")
    with pytest.raises(ValueError, match="unknown allocation strategy 'hash'"):
        strategy_named("hash")


def test_queues_sort_as_java_compares_them() -> None:
    mixed = [
        MessageQueue(topic="T", broker_name="broker-b", queue_id=0),
        MessageQueue(topic="T", broker_name="broker-a", queue_id=10),
        MessageQueue(topic="T", broker_name="broker-a", queue_id=2),
        MessageQueue(topic="S", broker_name="broker-z", queue_id=0),
    ]
    assert [queue_sort_key(q) for q in sorted_queues(mixed)] == [
        ("S", "broker-z", 0),
        ("T", "broker-a", 2),
        ("T", "broker-a", 10),
        ("T", "broker-b", 0),
    ]


@given(
    queue_count=st.integers(min_value=1, max_value=40),
    member_count=st.integers(min_value=1, max_value=12),
    circle=st.booleans(),
)
def test_every_queue_goes_to_exactly_one_member(queue_count: int, member_count: int, circle: bool) -> None:
    mq = queues(queue_count // 2 + 1, broker="broker-a") + queues(queue_count - queue_count // 2, broker="b")
    mq = sorted_queues(mq)
    members = sorted(f"10.0.0.{i}@{i}" for i in range(member_count))
    strategy = allocate_by_circle if circle else allocate_averagely
    shares = [strategy("G", cid, mq, members) for cid in members]
    flat = [q for share in shares for q in share]
    assert sorted(flat, key=queue_sort_key) == mq
    sizes = [len(share) for share in shares]
    assert max(sizes) - min(sizes) <= 1
