"""Turning a commit-log record into its derived entries: a consume-queue pointer and index keys.

Used for live appends and for re-dispatch during recovery, which is why both targets skip what they already
hold: a consume queue ignores a queue offset it has, the index ignores commit-log offsets at or before the
last one it indexed. Re-dispatching a stretch twice therefore changes nothing.
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

    def dispatch_appended(self, records: Sequence[MessageExt]) -> None:
        """Dispatch the records one append wrote (``commit_log_offset`` and ``store_size`` set), in order.

        Consecutive records of one queue (a batch) get their consume-queue entries in one write, and the
        index takes all their keys in one call.
        """
        if len(records) == 1:
            record = records[0]
            self.dispatch(record, record.commit_log_offset, record.store_size)
            return
        run: list[tuple[int, int, int]] = []
        run_queue: tuple[str, int] | None = None
        run_start = 0
        index = self._index
        # Records come in commit-log order, so one look at where the index stands serves them all.
        last_indexed = index.last_indexed_offset if index is not None else None
        keys: list[tuple[str, int, int]] = []
        for record in records:
            if is_consumable(record.sys_flag):
                key = (record.topic, record.queue_id)
                if key != run_queue or record.queue_offset != run_start + len(run):
                    self._put_run(run_queue, run_start, run)
                    run, run_queue, run_start = [], key, record.queue_offset
                tags = record.properties.get(const.TAGS)
                run.append((record.commit_log_offset, record.store_size, tag_hash_code(tags)))
            if last_indexed is not None:
                _index_keys(record, record.commit_log_offset, last_indexed, keys)
        self._put_run(run_queue, run_start, run)
        if index is not None and keys:
            index.put_entries(keys)

    def _put_run(self, queue: tuple[str, int] | None, start: int, run: list[tuple[int, int, int]]) -> None:
        if queue is not None and run:
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
