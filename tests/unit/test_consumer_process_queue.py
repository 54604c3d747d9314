"""The in-flight window of a queue: committable offsets, flow-control measures, orderly batches."""

from __future__ import annotations

import asyncio

from consumer.process_queue import ProcessQueue
from rocketmq_wire.message import MessageExt, encode_properties
from rocketmq_wire.message import const as props


def msg(offset: int, body: bytes = b"x", max_offset: int | None = None) -> MessageExt:
    properties = {} if max_offset is None else {props.MAX_OFFSET: str(max_offset)}
    return MessageExt(
        topic="T", body=body, queue_offset=offset, properties_string=encode_properties(properties)
    )


def test_committable_offset_is_the_first_message_still_in_flight() -> None:
    pq = ProcessQueue()
    batch = [msg(i) for i in range(10, 15)]
    pq.put(batch)
    assert pq.count == 5 and pq.max_offset == 14
    # handlers finish out of order: 12 and 13 first
    assert pq.remove([batch[2], batch[3]]) == 10
    assert pq.remove([batch[0]]) == 11
    assert pq.remove([batch[1], batch[4]]) == 15, "all done: one past the highest offset seen"
    assert pq.count == 0


def test_removing_from_an_emptied_window_says_nothing() -> None:
    pq = ProcessQueue()
    first = msg(3)
    pq.put([first])
    pq.clear()
    assert pq.remove([first]) == -1


def test_duplicates_are_ignored_and_out_of_order_puts_keep_offset_order() -> None:
    pq = ProcessQueue()
    pq.put([msg(5), msg(6)])
    pq.put([msg(6), msg(2)])
    assert pq.offsets() == [2, 5, 6]
    assert pq.max_span == 4
    assert pq.remove([msg(2)]) == 5


def test_size_and_backlog_are_tracked() -> None:
    pq = ProcessQueue()
    pq.put([msg(0, b"abc"), msg(1, b"defgh", max_offset=100)])
    assert pq.size_bytes == 8
    assert pq.backlog == 99
    pq.remove([msg(0, b"abc")])
    assert pq.size_bytes == 5


def test_put_says_when_an_orderly_task_must_be_started() -> None:
    pq = ProcessQueue()
    assert pq.put([msg(0), msg(1), msg(2)]) is True
    assert pq.put([msg(3)]) is False, "a task is already consuming"
    assert [m.queue_offset for m in pq.take(2)] == [0, 1]
    assert pq.count == 4, "taken messages still count until committed"
    assert pq.commit() == 2
    assert [m.queue_offset for m in pq.take(5)] == [2, 3]
    assert pq.commit() == 4
    assert pq.take(5) == [] and pq.consuming is False
    assert pq.put([msg(4)]) is True, "the task ended: a new one must start"


def test_a_suspended_batch_goes_back_in_front() -> None:
    pq = ProcessQueue()
    pq.put([msg(i) for i in range(4)])
    taken = pq.take(2)
    pq.consume_again(taken)
    assert pq.offsets() == [0, 1, 2, 3]
    assert [m.queue_offset for m in pq.take(3)] == [0, 1, 2]
    assert pq.commit() == 3


def test_commit_without_a_batch_commits_nothing() -> None:
    assert ProcessQueue().commit() == -1


async def test_flow_control_waits_for_room_not_for_the_timeout() -> None:
    pq = ProcessQueue()
    held = [msg(i) for i in range(3)]
    pq.put(held)
    waiting = asyncio.create_task(pq.wait_for_room(60))
    await asyncio.sleep(0)
    assert not waiting.done()
    pq.remove(held[:1])
    async with asyncio.timeout(5):
        await waiting


async def test_wait_for_room_gives_up_after_its_timeout() -> None:
    pq = ProcessQueue()
    pq.put([msg(0)])
    async with asyncio.timeout(5):
        await pq.wait_for_room(0.001)
    assert pq.count == 1


def test_lock_bookkeeping() -> None:
    pq = ProcessQueue()
    assert not pq.locked and pq.lock_expired(30_000)
    pq.mark_locked(True)
    assert pq.locked and not pq.lock_expired(30_000)
    assert pq.lock_expired(-1)
    pq.mark_locked(False)
    assert not pq.locked
