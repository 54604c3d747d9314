"""QUERY_MESSAGE: messages of a topic by key, through the index and confirmed against the messages.

The index is a hash index, so a lookup can return messages of other keys (and of other topics) whose
``topic#key`` hashes alike; each candidate is read back and kept only if it really carries the key. KEYS
keys and UNIQ_KEY values share the index; a query asks for one kind, as Java clients filter.
"""

from __future__ import annotations

from broker.store.commit_log import CommitLog
from broker.store.index_service import IndexService
from broker.store.results import QueryMessageResult
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message.stored import decode_message

#: Apache's cap on how many messages one query returns (``maxMsgsNumBatch``).
MAX_QUERY_RESULTS = 64
#: Candidates asked of the index per wanted result, to make up for hash collisions.
_CANDIDATES_PER_RESULT = 4


def query_by_key(
    index: IndexService,
    commit_log: CommitLog,
    topic: str,
    key: str,
    max_count: int,
    begin_timestamp: int,
    end_timestamp: int,
    *,
    unique_key: bool,
) -> QueryMessageResult:
    limit = min(max_count, MAX_QUERY_RESULTS)
    files = index.files
    last_timestamp = files[-1].end_timestamp if files else 0
    last_offset = files[-1].end_phy_offset if files else 0
    if limit <= 0:
        return QueryMessageResult([], last_timestamp, last_offset)
    candidates = index.lookup(topic, key, limit * _CANDIDATES_PER_RESULT, begin_timestamp, end_timestamp)
    found: dict[int, bytes] = {}
    for offset in candidates:
        if offset in found:
            continue
        data = commit_log.read_record(offset)
        if data is None:
            continue
        try:
            message, _ = decode_message(data, 0, decompress_body=False)
        except CodecError:
            continue
        if message.topic != topic or message.commit_log_offset != offset:
            continue
        if (message.unique_id == key) if unique_key else (key in message.keys):
            found[offset] = data
    newest = sorted(found)[-limit:]
    return QueryMessageResult([found[offset] for offset in newest], last_timestamp, last_offset)
