"""The Broker's durable message store, laid out on disk as Apache RocketMQ lays out its store.

:class:`MessageStore` is the entry point (appends, pulls, lookups, retention, recovery);
:class:`ConsumerOffsetStore` and :class:`TopicConfigStore` keep the broker's ``config/*.json`` files.
"""

from broker.store.config import BrokerRole, FlushDiskType, StoreConfig
from broker.store.consume_queue import tag_hash_code
from broker.store.consumer_offsets import ConsumerOffsetStore
from broker.store.message_store import MessageStore, StoreLockedError
from broker.store.results import (
    BoundaryType,
    CleanResult,
    GetMessageResult,
    GetMessageStatus,
    PutMessageResult,
    PutMessageStatus,
    QueryMessageResult,
)
from broker.store.topic_configs import TopicConfigStore

__all__ = [
    "BoundaryType",
    "BrokerRole",
    "CleanResult",
    "ConsumerOffsetStore",
    "FlushDiskType",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageStore",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
    "StoreConfig",
    "StoreLockedError",
    "TopicConfigStore",
    "tag_hash_code",
]
