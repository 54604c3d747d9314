"""QUERY_CONSUME_QUEUE (mqadmin ``queryCq``): raw entries of one consume queue, answered as Apache does.

A queue that does not exist is SYSTEM_ERROR "<queueId>@<topic> is not exist!"; an index past the queue's
end is SUCCESS with the remark "Index <i> of <queueId>@<topic> is not exist!" and no body. Entries are
rebuilt through the store's public reads (commit-log offset by queue offset, then the stored record for
its size and tags); this store keeps no consume-queue extension units, so those fields stay empty.
"""

from __future__ import annotations

from broker.clients import ConsumerManager
from broker.processors.common import read_header
from broker.store import MessageStore
from rocketmq_wire import RemotingCommand, ResponseCode, fastjson
from rocketmq_wire.bodies import ConsumeQueueData, QueryConsumeQueueResponseBody
from rocketmq_wire.bodies.subscription import tag_code
from rocketmq_wire.headers.query import QueryConsumeQueueRequestHeader
from rocketmq_wire.transport import Connection


class QueryConsumeQueueProcessor:
    def __init__(self, *, consumers: ConsumerManager, store: MessageStore) -> None:
        self._consumers = consumers
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, QueryConsumeQueueRequestHeader)
        topic, queue_id = str(header.topic), int(header.queue_id or 0)
        store = self._store
        if queue_id not in store.topics().get(topic, []):
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"{queue_id}@{topic} is not exist!")
        body = QueryConsumeQueueResponseBody(
            max_queue_index=store.get_max_offset(topic, queue_id),
            min_queue_index=store.get_min_offset(topic, queue_id),
        )
        if header.consumer_group is not None:
            group = self._consumers.group(header.consumer_group)
            subscription = group.find_subscription(topic) if group is not None else None
            body.subscription_data = subscription
            if subscription is None:
                body.filter_data = f"{header.consumer_group}@{topic} is not online!"
            else:
                body.filter_data = fastjson.dumps(None)  # no filter data for tag subscriptions: Java's "null"
        index = int(header.index or 0)
        if not body.min_queue_index <= index < body.max_queue_index:
            return request.make_response(
                ResponseCode.SUCCESS, f"Index {index} of {queue_id}@{topic} is not exist!"
            )
        entries: list[ConsumeQueueData] = []
        for queue_offset in range(index, min(index + max(0, int(header.count or 0)), body.max_queue_index)):
            physical = store.get_commit_log_offset(topic, queue_id, queue_offset)
            if physical is None:
                break
            message = store.look_message_by_offset(physical)
            entry = ConsumeQueueData(physic_offset=physical)
            if message is not None:
                entry.physic_size = message.store_size
                entry.tags_code = tag_code(message.tags) if message.tags else 0
            entries.append(entry)
        body.queue_data = entries
        return request.make_response(ResponseCode.SUCCESS, body=body.to_json())
