"""Turning a commit-log record into its derived entries: a consume-queue pointer and index keys.

Used for live appends and for re-dispatch during recovery, which is why both targets skip what they already
hold: a consume queue ignores a queue offset it has, the index ignores commit-log offsets at or before the
last one it indexed. Re-dispatching a stretch twice therefore changes nothing.

Live appends are dispatched a little later, in groups (:meth:`Dispatcher.defer`), as Apache's reput service
dispatches behind the commit log: the sends read from a socket in one loop turn share one index call and one
consume-queue write per queue, where one at a time each paid the whole call chain (single sends, 64 in
flight: ~10% less broker CPU per send). Queue offsets are handed out at append time all the same
(:meth:`Dispatcher.next_queue_offset`), as Apache's commit log keeps its own queue-offset table.
"""

from __future__ import annotations

from collections.abc import Sequence

from broker.store.consume_queue import tag_hash_code
from broker.store.index_service import IndexService, index_key
from broker.store.queue_table import QueueTable
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.stored import MessageExt, split_keys

#: Half (prepared) and rolled-back transaction messages stay out of consume queues until committed.
_INVISIBLE = (sysflag.TRANSACTION_PREPARED_TYPE, sysflag.TRANSACTION_ROLLBACK_TYPE)


def is_consumable(sys_flag: int) -> bool:
    """Whether a message with this sysflag gets a queue offset and a consume-queue entry."""
    return (sys_flag & sysflag.TRANSACTION_MASK) not in _INVISIBLE


class Dispatcher:
    def __init__(self, queues: QueueTable, index: IndexService | None) -> None:
        self._queues = queues
        self._index = index
        # Appended records waiting for their entries, in commit-log order ...
        self._pending: list[MessageExt] = []
        # ... and the queue offset after the last record appended to each queue whose consume queue may
        # not hold it yet. Kept until every appended record has its entries: after a failed dispatch the
        # consume queue lags behind what was handed out, and handing its end out again would give a new
        # message the offset of one acknowledged before it (which the redone dispatch then skips).
        self._next_offsets: dict[tuple[str, int], int] = {}

    @property
    def pending(self) -> int:
        """How many appended records still wait for their consume-queue and index entries."""
        return len(self._pending)

    def next_queue_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset the next message appended to this queue gets, counting the records that
        wait for dispatch."""
        offset = self._next_offsets.get((topic, queue_id))
        return offset if offset is not None else self._queues.next_offset(topic, queue_id)

    def defer(self, records: Sequence[MessageExt]) -> bool:
        """Keep records one append wrote (``commit_log_offset``, ``queue_offset`` and ``store_size`` set)
        for :meth:`dispatch_pending`. True when none were waiting before: the caller arranges for that
        call (readers of the queues and the index call it first as well)."""
        was_idle = not self._pending
        self._pending.extend(records)
        next_offsets = self._next_offsets
        for record in records:
            if is_consumable(record.sys_flag):
                next_offsets[(record.topic, record.queue_id)] = record.queue_offset + 1
        return was_idle

    def dispatch_pending(self) -> None:
        """Give every waiting record its entries. Raises what writing them raised; the records are no
        longer waiting then either (the caller re-dispatches from the commit log)."""
        records, self._pending = self._pending, []
        if records:
            self.dispatch_appended(records)
        self._next_offsets.clear()

    def discard_pending(self) -> None:
        """Forget the waiting records (their bytes are re-read from the commit log instead); the queue
        offsets they took stay taken until :meth:`settled`."""
        self._pending = []

    def settled(self) -> None:
        """Every appended record has its entries now: the consume queues' ends are the next offsets."""
        self._next_offsets.clear()

    def forget_topic(self, topic: str) -> None:
        """A topic's queues were deleted: its next offsets start from what the queues hold again."""
        for key in [key for key in self._next_offsets if key[0] == topic]:
            del self._next_offsets[key]

    def dispatch_appended(self, records: Sequence[MessageExt]) -> None:
        """Dispatch records appended in this order (``commit_log_offset`` and ``store_size`` set).

        The records of each queue get their consume-queue entries in one write while their offsets run on
        (a batch, or the single sends of one loop turn), and the index takes all their keys in one call.
        """
        if len(records) == 1:
            record = records[0]
            self.dispatch(record, record.commit_log_offset, record.store_size)
            return
        runs: dict[tuple[str, int], tuple[int, list[tuple[int, int, int]]]] = {}
        index = self._index
        # Records come in commit-log order, so one look at where the index stands serves them all.
        last_indexed = index.last_indexed_offset if index is not None else None
        keys: list[tuple[str, int, int]] = []
        for record in records:
            if is_consumable(record.sys_flag):
                queue = (record.topic, record.queue_id)
                run = runs.get(queue)
                if run is None or record.queue_offset != run[0] + len(run[1]):
                    if run is not None:
                        self._put_run(queue, *run)
                    run = runs[queue] = (record.queue_offset, [])
                tags = record.properties.get(const.TAGS)
                run[1].append((record.commit_log_offset, record.store_size, tag_hash_code(tags)))
            if last_indexed is not None:
                _index_keys(record, record.commit_log_offset, last_indexed, keys)
        for queue, run in runs.items():
            self._put_run(queue, *run)
        if index is not None and keys:
            index.put_entries(keys)

    def _put_run(self, queue: tuple[str, int], start: int, run: list[tuple[int, int, int]]) -> None:
        self._queues.get_or_create(*queue).put_run(start, run)

    def dispatch(self, message: MessageExt, offset: int, size: int) -> None:
        if is_consumable(message.sys_flag):
            queue = self._queues.get_or_create(message.topic, message.queue_id)
            queue.put(message.queue_offset, offset, size, tag_hash_code(message.properties.get(const.TAGS)))
        index = self._index
        if index is not None:
            keys: list[tuple[str, int, int]] = []
            _index_keys(message, offset, index.last_indexed_offset, keys)
            if keys:
                index.put_entries(keys)


def _index_keys(message: MessageExt, offset: int, last_indexed: int, out: list[tuple[str, int, int]]) -> None:
    """Add the index entries of a record at ``offset`` to ``out``: none for a rolled-back transaction
    message, or for a record the index already covers (a re-dispatch)."""
    rolled_back = message.sys_flag & sysflag.TRANSACTION_MASK == sysflag.TRANSACTION_ROLLBACK_TYPE
    if offset <= last_indexed or rolled_back:
        return
    properties = message.properties
    topic = message.topic
    timestamp = message.store_timestamp
    unique = properties.get(const.UNIQ_KEY)
    if unique:
        out.append((index_key(topic, unique), offset, timestamp))
    listed = properties.get(const.KEYS)
    if listed:
        out.extend((index_key(topic, key), offset, timestamp) for key in split_keys(listed))
