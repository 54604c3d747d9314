"""Why the store refuses appends: the conditions under which an acknowledgement could not be kept.

Apache's store keeps such conditions as bits of ``RunningFlags`` (disk full, a consume-queue or index write
that failed) and answers every put with SERVICE_NOT_AVAILABLE while any is set, pulls going on. This is
the same record, with the reason each condition was raised for, so the refusal's remark says what is wrong
rather than listing everything that could be.

Where the project is stricter than Apache:

* a failed consume-queue or index write refuses appends at once, until a retry has written every entry
  the commit log is owed (Apache retries up to 30 times, a second apart, while it keeps acknowledging
  sends, and only then marks the error, for good);
* a failed fsync refuses appends until the store is reopened: Linux reports a lost writeback once, and a
  later fsync that succeeds says nothing about the pages lost before it, so no later acknowledgement may
  rest on them (Apache logs the failure and goes on).

Conditions are raised and cleared from the event loop and from the store's worker threads; each change
is one dict operation, which needs no lock of its own.
"""

from __future__ import annotations

import enum
import logging

log = logging.getLogger("broker.store.health")


class Fault(enum.Enum):
    """A condition that stops the store from taking appends, named as the remark names it."""

    DISK_FULL = "the disk is full"
    DISPATCH_FAILED = "writing a consume queue or the index failed"
    FSYNC_FAILED = "an fsync failed"


#: Conditions that clear themselves when the store sees them gone; the others hold until it reopens.
_TRANSIENT = frozenset({Fault.DISK_FULL, Fault.DISPATCH_FAILED})


class StoreHealth:
    """The faults in force, each with the detail it was raised with."""

    __slots__ = ("_faults",)

    def __init__(self) -> None:
        self._faults: dict[Fault, str] = {}

    @property
    def writable(self) -> bool:
        """Whether the store may take appends (a dict's truth: checked on every send)."""
        return not self._faults

    def raise_fault(self, fault: Fault, detail: str) -> bool:
        """Record ``fault``; True when it was not in force before (the caller logs it once)."""
        fresh = fault not in self._faults
        self._faults[fault] = detail
        if fresh:
            log.error("the store refuses appends: %s (%s)", fault.value, detail)
        return fresh

    def clear(self, fault: Fault) -> bool:
        """Lift ``fault`` if it is one that can clear while the store runs; True when it was in force."""
        if fault not in _TRANSIENT or self._faults.pop(fault, None) is None:
            return False
        log.warning("the store takes appends again: %s no longer holds", fault.value)
        return True

    def has(self, fault: Fault) -> bool:
        return fault in self._faults

    @property
    def reason(self) -> str:
        """Every fault in force with its detail, for a refusal's remark ("" when writable)."""
        return "; ".join(f"{fault.value}: {detail}" for fault, detail in self._faults.items())
