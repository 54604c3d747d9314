"""The broker's topic table: system topics, topics created on first send, admin changes.

Persisted through the store's ``config/topics.json`` (:class:`TopicConfigStore`), whose data version is the
one the broker reports to NameServers, so a NameServer can tell a stale registration from a fresh one.
Every change calls the ``on_change`` callback, which the broker uses to re-register at once (Apache does
the same, so routes of a new topic appear without waiting for the 30 s cycle).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from broker.config import BrokerConfig
from broker.store import TopicConfigStore
from broker.store.json_config import DataVersion as StoreDataVersion
from rocketmq_wire import topics
from rocketmq_wire.bodies.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketmq_wire.perm import PERM_INHERIT, PERM_READ, PERM_WRITE, is_inherited, perm_to_string

log = logging.getLogger("broker.topic_config")

#: Queues of the delay-level topic: one per level of Apache's default table.
SCHEDULE_QUEUE_NUMS = 18


def to_body(config: Mapping[str, Any]) -> TopicConfig:
    """The store's Java-named mapping as a typed :class:`TopicConfig`."""
    return TopicConfig(
        topic_name=str(config["topicName"]),
        read_queue_nums=int(config.get("readQueueNums", 16)),
        write_queue_nums=int(config.get("writeQueueNums", 16)),
        perm=int(config.get("perm", 6)),
        topic_filter_type=str(config.get("topicFilterType", "SINGLE_TAG")),
        topic_sys_flag=int(config.get("topicSysFlag", 0)),
        order=bool(config.get("order", False)),
        attributes=_attributes(config.get("attributes")),
    )


def _attributes(value: Any) -> dict[str, str] | None:
    """A topic's 5.x attributes; ``None`` for none, so a 4.x-form body (registration, table) is unchanged."""
    if not isinstance(value, Mapping) or not value:
        return None
    return {str(k): str(v) for k, v in value.items()}


def to_mapping(config: TopicConfig) -> dict[str, Any]:
    return {
        "topicName": config.topic_name,
        "readQueueNums": config.read_queue_nums,
        "writeQueueNums": config.write_queue_nums,
        "perm": config.perm,
        "topicFilterType": config.topic_filter_type,
        "topicSysFlag": config.topic_sys_flag,
        "order": config.order,
        **({"attributes": dict(config.attributes)} if config.attributes else {}),
    }


def describe(config: TopicConfig) -> str:
    """``TopicConfig.toString`` as Apache's remarks and logs show it."""
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={perm_to_string(config.perm)}, "
        f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
        f"order={'true' if config.order else 'false'}]"
    )


class TopicConfigManager:
    """Topic configs by name. Thread-safe (the store's table is), but used from the event loop."""

    def __init__(self, config: BrokerConfig, store: TopicConfigStore) -> None:
        self._config = config
        self._store = store
        self._create_lock = threading.Lock()
        self._on_change: list[Callable[[], None]] = []
        #: Topics the NameServers' ORDER_TOPIC_CONFIG namespace marks as ordered (learned at registration).
        self.order_topics: frozenset[str] = frozenset()
        #: :meth:`select_shared`'s conversions, each with the table entry it was made from.
        self._shared: dict[str, tuple[Mapping[str, Any], TopicConfig]] = {}

    def on_change(self, callback: Callable[[], None]) -> None:
        self._on_change.append(callback)

    def _changed(self) -> None:
        for callback in list(self._on_change):
            try:
                callback()
            except Exception:
                log.exception("topic-change callback failed")

    # -- start-up ---------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read ``topics.json`` and add the system topics it lacks (a saved one wins, as in Apache)."""
        self._store.load()
        added = False
        for config in self._system_topics():
            if config.topic_name not in self._store:
                self._store.put(to_mapping(config), persist=False)
                added = True
        if added:
            self._store.persist()

    def _system_topics(self) -> list[TopicConfig]:
        c = self._config
        rw = PERM_READ | PERM_WRITE
        found = [TopicConfig(topic_name=topics.SELF_TEST_TOPIC, read_queue_nums=1, write_queue_nums=1)]
        if c.auto_create_topic_enable:
            found.append(
                TopicConfig(
                    topic_name=topics.AUTO_CREATE_TOPIC,
                    read_queue_nums=c.default_topic_queue_nums,
                    write_queue_nums=c.default_topic_queue_nums,
                    perm=PERM_INHERIT | rw,
                )
            )
        found.append(
            TopicConfig(topic_name=topics.BENCHMARK_TOPIC, read_queue_nums=1024, write_queue_nums=1024)
        )
        found.append(
            TopicConfig(
                topic_name=c.broker_cluster_name,
                read_queue_nums=16,
                write_queue_nums=16,
                perm=PERM_INHERIT | (rw if c.cluster_topic_enable else 0),
            )
        )
        found.append(
            TopicConfig(
                topic_name=c.broker_name,
                read_queue_nums=1,
                write_queue_nums=1,
                perm=PERM_INHERIT | (rw if c.broker_topic_enable else 0),
            )
        )
        found.append(TopicConfig(topic_name=topics.OFFSET_MOVED_EVENT, read_queue_nums=1, write_queue_nums=1))
        found.append(
            TopicConfig(
                topic_name=topics.SCHEDULE_TOPIC,
                read_queue_nums=SCHEDULE_QUEUE_NUMS,
                write_queue_nums=SCHEDULE_QUEUE_NUMS,
            )
        )
        if c.trace_topic_enable:
            found.append(
                TopicConfig(topic_name=c.msg_trace_topic_name, read_queue_nums=1, write_queue_nums=1)
            )
        found.append(
            TopicConfig(
                topic_name=topics.reply_topic(c.broker_cluster_name), read_queue_nums=1, write_queue_nums=1
            )
        )
        for name in (topics.TRANS_HALF_TOPIC, topics.TRANS_OP_HALF_TOPIC):
            found.append(TopicConfig(topic_name=name, read_queue_nums=1, write_queue_nums=1))
        if c.timer_wheel_enable:  # where timer messages wait (broker/timer.py)
            found.append(
                TopicConfig(topic_name=topics.WHEEL_TIMER_TOPIC, read_queue_nums=1, write_queue_nums=1)
            )
        return found

    # -- lookups ----------------------------------------------------------------------------------------

    def select(self, topic: str) -> TopicConfig | None:
        config = self._store.get(topic)
        return to_body(config) if config is not None else None

    def select_shared(self, topic: str) -> TopicConfig | None:
        """:meth:`select` without a fresh copy: the same object until the topic's config changes, for the
        per-message paths (send, pull) that only read it. Never modify what this returns."""
        entry = self._store.entry(topic)
        if entry is None:
            self._shared.pop(topic, None)
            return None
        cached = self._shared.get(topic)
        if cached is not None and cached[0] is entry:
            return cached[1]
        converted = to_body(entry)
        self._shared[topic] = (entry, converted)
        return converted

    def all(self) -> dict[str, TopicConfig]:
        return {name: to_body(config) for name, config in self._store.topics().items()}

    def __contains__(self, topic: object) -> bool:
        return topic in self._store

    def is_order_topic(self, topic: str) -> bool:
        config = self.select(topic)
        return topic in self.order_topics or (config is not None and config.order)

    def data_version(self) -> DataVersion:
        version = self._store.data_version
        return DataVersion(timestamp=version.timestamp, counter=version.counter)

    def wrapper(self) -> TopicConfigSerializeWrapper:
        """The table as a registration / GET_ALL_TOPIC_CONFIG body (4.x form, no attributes)."""
        return TopicConfigSerializeWrapper(topic_config_table=self.all(), data_version=self.data_version())

    # -- creation and change ----------------------------------------------------------------------------

    def create_in_send(
        self,
        topic: str,
        default_topic: str | None,
        producer: str,
        client_queue_nums: int,
        topic_sys_flag: int,
    ) -> TopicConfig | None:
        """A topic created from a template topic on first send (``createTopicInSendMessageMethod``).

        The template must carry the inherit bit; TBW102 only counts while ``autoCreateTopicEnable`` is on.
        The new topic gets min(client's queue count, template's write queues) queues and the template's
        permission without the inherit bit.
        """
        with self._create_lock:
            existing = self.select(topic)
            if existing is not None:
                return existing
            template = self.select(default_topic) if default_topic else None
            if template is None:
                log.warning(
                    "cannot create topic %s: the default topic [%s] does not exist (producer %s)",
                    topic,
                    default_topic,
                    producer,
                )
                return None
            perm = template.perm
            if default_topic == topics.AUTO_CREATE_TOPIC and not self._config.auto_create_topic_enable:
                perm = PERM_READ | PERM_WRITE
            if not is_inherited(perm):
                log.warning(
                    "cannot create topic %s: default topic [%s] lacks the inherit perm [%d] (producer %s)",
                    topic,
                    default_topic,
                    perm,
                    producer,
                )
                return None
            queue_nums = max(0, min(client_queue_nums, template.write_queue_nums))
            created = TopicConfig(
                topic_name=topic,
                read_queue_nums=queue_nums,
                write_queue_nums=queue_nums,
                perm=perm & ~PERM_INHERIT,
                topic_sys_flag=topic_sys_flag,
                topic_filter_type=template.topic_filter_type,
            )
            self._store.put(to_mapping(created))
        log.info(
            "created topic %s from default topic %s for producer %s: %s",
            topic,
            default_topic,
            producer,
            describe(created),
        )
        self._changed()
        return created

    def create_if_absent(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        """A topic the broker makes for itself (retry, DLQ; ``createTopicInSendMessageBackMethod``)."""
        with self._create_lock:
            existing = self.select(topic)
            if existing is not None:
                return existing
            created = TopicConfig(
                topic_name=topic,
                read_queue_nums=queue_nums,
                write_queue_nums=queue_nums,
                perm=perm,
                topic_sys_flag=topic_sys_flag,
            )
            self._store.put(to_mapping(created))
        log.info("created topic %s: %s", topic, describe(created))
        self._changed()
        return created

    def update(self, config: TopicConfig) -> None:
        """Create or replace a topic as an admin asked (UPDATE_AND_CREATE_TOPIC)."""
        old = self.select(str(config.topic_name))
        self._store.put(to_mapping(config))
        if old is None:
            log.info("created topic %s", describe(config))
        else:
            log.info("updated topic %s (was %s)", describe(config), describe(old))
        self._changed()

    def replace_all(self, table: dict[str, dict[str, Any]], version: StoreDataVersion) -> bool:
        """Take a master's whole table (Java-named mappings) when its data version differs from ours, as
        Apache's slave does every sync; returns whether it was taken."""
        if version == self._store.data_version:
            return False
        self._store.replace_all(table, version)
        self._shared.clear()
        log.info("took the master's topic table: %d topics", len(table))
        self._changed()
        return True

    def routes_changed(self) -> None:
        """Something outside the table changes what it registers (``brokerPermission``): a new data version,
        as NameServers only take a table whose version they have not seen, and a registration round."""
        self._store.bump_version()
        self._changed()

    def delete(self, topic: str) -> bool:
        removed = self._store.remove(topic)
        self._shared.pop(topic, None)
        if removed:
            log.info("deleted topic %s", topic)
            self._changed()
        return removed
