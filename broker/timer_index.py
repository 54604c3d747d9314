"""The in-memory index of pending timers: which timer-queue offsets fall due in which slot.

Kept compact because a broker may hold millions of timers: one ``array('q')`` of offsets per slot (eight
bytes per timer) and a heap of the slot times (one entry per slot, and there are at most
``timerMaxDelaySec * 1000 / timerPrecisionMs`` slots in use, 259,200 with the defaults). There is no Python
object per timer, so memory grows with the timers by eight bytes each plus a fixed cost per slot
(``benchmarks/timer_memory.py`` measures both).
"""

from __future__ import annotations

import heapq
from array import array


class TimerIndex:
    def __init__(self) -> None:
        self._slots: dict[int, array[int]] = {}
        self._heap: list[int] = []
        self._pending = 0

    def __len__(self) -> int:
        """Entries waiting."""
        return self._pending

    @property
    def slot_count(self) -> int:
        return len(self._slots)

    def add(self, slot: int, offset: int) -> None:
        offsets = self._slots.get(slot)
        if offsets is None:
            offsets = self._slots[slot] = array("q")
            heapq.heappush(self._heap, slot)
        offsets.append(offset)
        self._pending += 1

    def count_in(self, slot: int) -> int:
        offsets = self._slots.get(slot)
        return 0 if offsets is None else len(offsets)

    def counts(self) -> list[tuple[int, int]]:
        """(slot, entries) of every slot in use, in no order."""
        return [(slot, len(offsets)) for slot, offsets in list(self._slots.items())]

    def earliest(self) -> int | None:
        """The earliest slot with entries, or None."""
        return self._heap[0] if self._heap else None

    def offsets(self, slot: int) -> array[int]:
        return self._slots[slot]

    def drop_earliest(self) -> None:
        """Forget the earliest slot (its entries were all handled)."""
        slot = heapq.heappop(self._heap)
        self._pending -= len(self._slots.pop(slot))

    def lowest_offset(self) -> int | None:
        """The lowest offset waiting, or None."""
        lows = [min(offsets) for offsets in self._slots.values() if offsets]
        return min(lows) if lows else None
