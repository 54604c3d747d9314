"""The POP table's shared durable writes (``broker/pop/group_save.py``): each caller is answered by a write
that holds its change, concurrent callers share writes, and a failed write fails exactly its callers."""

from __future__ import annotations

import asyncio
import threading

import pytest

from broker.pop.group_save import GroupSave


class Table:
    """A table of numbers; ``write`` records what reached the "disk" and can be made to fail or wait."""

    def __init__(self) -> None:
        self.values: list[int] = []
        self.written: list[list[int]] = []
        self.fail_next = False
        self.gate = threading.Event()
        self.gate.set()

    def snapshot(self) -> bytes:
        return ",".join(map(str, self.values)).encode()

    def write(self, data: bytes) -> None:
        self.gate.wait(5)
        if self.fail_next:
            self.fail_next = False
            raise OSError(28, "No space left on device")
        self.written.append([int(v) for v in data.decode().split(",") if v])


async def test_each_caller_returns_after_a_write_holding_its_change_and_writes_are_shared() -> None:
    table = Table()
    saver = GroupSave(table.snapshot, table.write)

    async def change_then_save(value: int) -> list[int]:
        table.values.append(value)
        await saver.save(changed=True)
        return table.written[-1] if table.written else []

    table.gate.clear()  # the first write waits: the other 49 callers pile up behind it
    first = asyncio.create_task(change_then_save(0))
    await asyncio.sleep(0.05)
    rest = [asyncio.create_task(change_then_save(v)) for v in range(1, 50)]
    await asyncio.sleep(0.05)
    table.gate.set()
    seen = await asyncio.gather(first, *rest)
    for value, written in enumerate(seen):
        assert value in written  # durable when answered
    assert len(table.written) == 2  # one write for the first caller, one for the 49 that came meanwhile
    assert table.written[-1] == list(range(50))


async def test_nothing_changed_and_nothing_under_way_writes_nothing() -> None:
    table = Table()
    saver = GroupSave(table.snapshot, table.write)
    await saver.save(changed=False)
    assert table.written == []


async def test_a_caller_without_changes_waits_for_the_write_under_way() -> None:
    table = Table()
    saver = GroupSave(table.snapshot, table.write)
    table.values.append(1)
    table.gate.clear()
    writer = asyncio.create_task(saver.save(changed=True))
    await asyncio.sleep(0.05)
    reader = asyncio.create_task(saver.save(changed=False))
    await asyncio.sleep(0.05)
    assert not reader.done()  # its answer may rest on the change being written
    table.gate.set()
    await asyncio.gather(writer, reader)
    assert table.written == [[1]]


async def test_a_failed_write_fails_its_callers_and_the_next_save_writes_again() -> None:
    table = Table()
    saver = GroupSave(table.snapshot, table.write)
    table.values.append(1)
    table.fail_next = True
    with pytest.raises(OSError):
        await saver.save(changed=True)
    assert table.written == []
    table.values.append(2)
    await saver.save(changed=True)
    assert table.written == [[1, 2]]
    await saver.drain()
    assert not saver.writing


async def test_a_page_cache_write_is_made_on_the_loop_and_shared_by_the_callers_of_one_turn() -> None:
    table = Table()
    threads: list[int] = []

    def write(data: bytes) -> None:
        threads.append(threading.get_ident())
        table.write(data)

    saver = GroupSave(table.snapshot, write, in_thread=False)

    async def change_then_save(value: int) -> list[int]:
        table.values.append(value)
        await saver.save(changed=True)
        return table.written[-1]

    seen = await asyncio.gather(*(change_then_save(v) for v in range(10)))
    assert all(value in written for value, written in enumerate(seen))
    assert len(table.written) == 1 and threads == [threading.get_ident()]
    table.values.append(10)
    await saver.save(changed=True)
    assert table.written[-1] == list(range(11)) and len(threads) == 2


async def test_a_disk_write_is_made_in_a_worker_thread() -> None:
    table = Table()
    threads: list[int] = []

    def write(data: bytes) -> None:
        threads.append(threading.get_ident())
        table.write(data)

    saver = GroupSave(table.snapshot, write)
    table.values.append(1)
    await saver.save(changed=True)
    assert table.written == [[1]] and threads and threads[0] != threading.get_ident()
