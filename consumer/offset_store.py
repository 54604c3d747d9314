"""Where consumed offsets are kept: on the brokers (clustering) or in a local file (broadcasting).

Both keep an in-memory table that consumption updates cheaply and that is written out on a timer and on
shutdown, as Java's ``RemoteBrokerOffsetStore`` / ``LocalFileOffsetStore`` do. In clustering mode the
broker is the truth -- every member of the group must resume where the group left off -- so reads go there;
in broadcasting mode each consumer has its own progress, which no broker keeps, so it lives in a file.

A queue whose pull answered "offset moved" is *frozen* at the offset the broker gave: handlers still
finishing old messages of that queue must not move it back before it is committed and released.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Protocol

from consumer.broker_api import BrokerApi
from consumer.errors import ConsumerError, OffsetNotFoundError
from rocketmq_wire.bodies import OffsetSerializeWrapper
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.errors import CodecError
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.offset_store")

#: ``(queue) -> broker address`` for offset requests about that queue (its master, if it has one).
BrokerLocator = Callable[[MessageQueue], Awaitable[str]]


class ReadOffsetType(enum.Enum):
    """Where :meth:`OffsetStore.read` looks (Java's ``ReadOffsetType``)."""

    MEMORY = "READ_FROM_MEMORY"
    STORE = "READ_FROM_STORE"
    MEMORY_THEN_STORE = "MEMORY_FIRST_THEN_STORE"


class OffsetStore(Protocol):
    """Committed-offset bookkeeping for one consumer group; offsets are "the next message to consume"."""

    async def load(self) -> None: ...

    def update(self, queue: MessageQueue, offset: int, *, increase_only: bool) -> None: ...

    def update_and_freeze(self, queue: MessageQueue, offset: int) -> None: ...

    async def read(self, queue: MessageQueue, how: ReadOffsetType) -> int:
        """The offset, or -1 when there is none; raises :class:`ConsumerError` when the store cannot say."""
        ...

    async def persist(self, queue: MessageQueue) -> None: ...

    async def persist_all(self, queues: Iterable[MessageQueue], *, oneway: bool = True) -> None: ...

    def remove(self, queue: MessageQueue) -> None: ...

    def snapshot(self) -> dict[MessageQueue, int]: ...


class _MemoryTable:
    """The in-memory part both stores share."""

    def __init__(self) -> None:
        self._offsets: dict[MessageQueue, int] = {}
        self._frozen: set[MessageQueue] = set()

    def update(self, queue: MessageQueue, offset: int, *, increase_only: bool) -> None:
        if queue in self._frozen:
            return
        current = self._offsets.get(queue)
        if current is None or not increase_only or offset > current:
            self._offsets[queue] = offset

    def update_and_freeze(self, queue: MessageQueue, offset: int) -> None:
        self._frozen.add(queue)
        self._offsets[queue] = offset

    def remove(self, queue: MessageQueue) -> None:
        self._offsets.pop(queue, None)
        self._frozen.discard(queue)

    def memory(self, queue: MessageQueue) -> int | None:
        return self._offsets.get(queue)

    def snapshot(self) -> dict[MessageQueue, int]:
        return dict(self._offsets)


class RemoteBrokerOffsetStore(_MemoryTable):
    """Clustering mode: offsets committed to the broker that hosts each queue."""

    def __init__(
        self, api: BrokerApi, group: str, locate: BrokerLocator, *, strict_not_found: bool = False
    ) -> None:
        super().__init__()
        self._api = api
        self._group = group
        self._locate = locate
        self._strict = strict_not_found

    async def load(self) -> None:
        """Nothing to load: the brokers answer reads."""

    async def read(self, queue: MessageQueue, how: ReadOffsetType) -> int:
        if how is not ReadOffsetType.STORE:
            held = self.memory(queue)
            if held is not None or how is ReadOffsetType.MEMORY:
                return -1 if held is None else held
        try:
            addr = await self._locate(queue)
            offset = await self._api.query_offset(
                addr, self._group, queue, zero_if_not_found=False if self._strict else None
            )
        except OffsetNotFoundError:
            return -1
        except RemotingError as exc:
            raise ConsumerError(f"could not read the offset of {queue}: {exc}") from exc
        self.update(queue, offset, increase_only=False)
        return offset

    async def persist(self, queue: MessageQueue) -> None:
        """Commit one queue's offset and wait for the broker to confirm."""
        offset = self.memory(queue)
        if offset is None:
            return
        addr = await self._locate(queue)
        await self._api.update_offset(addr, self._group, queue, offset, oneway=False)

    async def persist_all(self, queues: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        """Commit the offsets of ``queues`` (Java: oneway, on its timer); forget queues no longer owned."""
        owned = set(queues)
        for queue in list(self.snapshot()):
            if queue not in owned:
                self.remove(queue)
                continue
            try:
                addr = await self._locate(queue)
                # Read now, not from a copy taken before the round's awaits: a queue the broker moved
                # (offset out of range, or a 5.x reset) meanwhile has had its corrected offset committed,
                # and a stale value sent after it would undo the correction.
                offset = self.memory(queue)
                if offset is None:
                    continue
                await self._api.update_offset(addr, self._group, queue, offset, oneway=oneway)
            except (ConsumerError, RemotingError) as exc:
                logger.warning("committing the offset of %s failed: %s", queue, exc)


def default_local_offset_dir() -> Path:
    """Java's default ``rocketmq.client.localOffsetStoreDir``: ``~/.rocketmq_offsets``."""
    return Path.home() / ".rocketmq_offsets"


class LocalFileOffsetStore(_MemoryTable):
    """Broadcasting mode: ``<dir>/<client id>/<group>/offsets.json``, the layout and format Java uses, with
    the previous version kept as ``offsets.json.bak`` in case the process dies mid-write."""

    def __init__(self, directory: Path, client_id: str, group: str) -> None:
        super().__init__()
        self.path = directory / client_id / group / "offsets.json"
        self._lock = asyncio.Lock()

    async def load(self) -> None:
        wrapper = await asyncio.to_thread(self._read_file)
        for queue, offset in wrapper.offset_table.items():
            self.update(queue, offset, increase_only=False)
        if wrapper.offset_table:
            logger.info("loaded %d offsets from %s", len(wrapper.offset_table), self.path)

    def _read_file(self) -> OffsetSerializeWrapper:
        for candidate in (self.path, self.path.with_name(self.path.name + ".bak")):
            try:
                text = candidate.read_bytes()
            except FileNotFoundError:
                continue
            if not text.strip():
                continue
            try:
                return OffsetSerializeWrapper.from_json(text)
            except CodecError as exc:
                logger.warning("offsets file %s is unreadable (%s); trying its backup", candidate, exc)
        return OffsetSerializeWrapper()

    async def read(self, queue: MessageQueue, how: ReadOffsetType) -> int:
        if how is not ReadOffsetType.STORE:
            held = self.memory(queue)
            if held is not None or how is ReadOffsetType.MEMORY:
                return -1 if held is None else held
        stored = (await asyncio.to_thread(self._read_file)).offset_table.get(queue)
        if stored is None:
            return -1
        self.update(queue, stored, increase_only=False)
        return stored

    async def persist(self, queue: MessageQueue) -> None:
        await self.persist_all(self.snapshot().keys())

    async def persist_all(self, queues: Iterable[MessageQueue], *, oneway: bool = True) -> None:
        owned = set(queues)
        table = {queue: offset for queue, offset in self.snapshot().items() if queue in owned}
        if not table:
            return
        data = OffsetSerializeWrapper(offset_table=table).to_json()
        async with self._lock:
            await asyncio.to_thread(self._write_file, data)

    def _write_file(self, data: bytes) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(self.path.name + ".tmp")
        with open(temporary, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if self.path.exists():
            os.replace(self.path, self.path.with_name(self.path.name + ".bak"))
        os.replace(temporary, self.path)
