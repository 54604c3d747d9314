"""Turning a commit-log record into its derived entries: a consume-queue pointer and index keys.

Used for live appends and for re-dispatch during recovery, which is why both targets skip what they already
hold: a consume queue ignores a queue offset it has, the index ignores commit-log offsets at or before the
last one it indexed. Re-dispatching a stretch twice therefore changes nothing.
"""

from __future__ import annotations

from broker.store.consume_queue import tag_hash_code
from broker.store.index_service import IndexService, index_key
from broker.store.queue_table import QueueTable
from rocketmq_wire.message import sysflag
from rocketmq_wire.message.stored import MessageExt

#: Half (prepared) and rolled-back transaction messages stay out of consume queues until committed.
_INVISIBLE = (sysflag.TRANSACTION_PREPARED_TYPE, sysflag.TRANSACTION_ROLLBACK_TYPE)


def is_consumable(sys_flag: int) -> bool:
    """Whether a message with this sysflag gets a queue offset and a consume-queue entry."""
    return (sys_flag & sysflag.TRANSACTION_MASK) not in _INVISIBLE


class Dispatcher:
    def __init__(self, queues: QueueTable, index: IndexService | None) -> None:
        self._queues = queues
        self._index = index

    def dispatch(self, message: MessageExt, offset: int, size: int) -> None:
        if is_consumable(message.sys_flag):
            queue = self._queues.get_or_create(message.topic, message.queue_id)
            queue.put(message.queue_offset, offset, size, tag_hash_code(message.tags))
        index = self._index
        if index is None:
            return
        if message.sys_flag & sysflag.TRANSACTION_MASK == sysflag.TRANSACTION_ROLLBACK_TYPE:
            return
        if offset <= index.last_indexed_offset:
            return
        keys: list[str] = []
        unique = message.unique_id
        if unique:
            keys.append(index_key(message.topic, unique))
        keys.extend(index_key(message.topic, key) for key in message.keys)
        if keys:
            index.put(keys, offset, message.store_timestamp)
