"""Store maintenance on request: CLEAN_EXPIRED_CONSUMEQUEUE (mqadmin ``cleanExpiredCQ``),
DELETE_EXPIRED_COMMITLOG (``deleteExpiredCommitLog``) and CLEAN_UNUSED_TOPIC (``cleanUnusedTopic``).

Apache answers each with a bare SUCCESS once its store has done the work; so does this broker. The work is
done through the store's public operations, so it is as fine-grained as they are: a topic's consume queues
go together (Apache drops the expired queues one by one, which differs only when some queues of a topic
are expired and others are not -- then this broker keeps them all until every one is).
"""

from __future__ import annotations

import asyncio
import logging

from broker.store import MessageStore
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.topics import SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.store_admin")

#: Topics Apache never drops as unused: the delay-level queues and the transaction op log.
_KEPT_WHEN_UNUSED = frozenset({SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC})


def _is_lmq(topic: str) -> bool:
    """``MixAll.isLmq``: light message queues live outside the topic table on purpose."""
    return topic.startswith("%LMQ%")


def expired_topics(store: MessageStore) -> list[str]:
    """Topics all of whose non-empty consume queues point only below the commit log's first offset."""
    floor = store.min_physical_offset
    expired: list[str] = []
    for topic, queue_ids in sorted(store.topics().items()):
        if topic == SCHEDULE_TOPIC or not queue_ids:
            continue
        lasts = []
        for queue_id in queue_ids:
            max_offset = store.get_max_offset(topic, queue_id)
            last = store.get_commit_log_offset(topic, queue_id, max_offset - 1) if max_offset > 0 else None
            lasts.append(last)
        if all(last is not None and last < floor for last in lasts):
            expired.append(topic)
    return expired


class CleanExpiredConsumeQueueProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        log.warning("cleanExpiredConsumeQueue asked by %s", conn.remote_address)
        store = self._store
        for topic in expired_topics(store):
            store.delete_topic(topic)
            log.info("cleanExpiredConsumeQueue: consume queues of %s dropped", topic)
        return request.make_response(ResponseCode.SUCCESS)


class DeleteExpiredCommitLogProcessor:
    def __init__(self, *, store: MessageStore) -> None:
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        log.warning("deleteExpiredCommitLog asked by %s", conn.remote_address)
        result = await asyncio.to_thread(self._store.clean_expired)
        log.info("deleteExpiredCommitLog removed %s", result)
        return request.make_response(ResponseCode.SUCCESS)


class CleanUnusedTopicProcessor:
    def __init__(self, *, topics: TopicConfigManager, store: MessageStore) -> None:
        self._topics = topics
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        log.warning("cleanUnusedTopic asked by %s", conn.remote_address)
        known = self._topics.all()
        for topic in sorted(self._store.topics()):
            if topic in known or topic in _KEPT_WHEN_UNUSED or _is_lmq(topic):
                continue
            self._store.delete_topic(topic)
            log.info("cleanUnusedTopic: %s destroyed", topic)
        return request.make_response(ResponseCode.SUCCESS)
