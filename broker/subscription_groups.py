"""Per consumer group settings: how often a failed message is retried, whether the group may consume.

Apache keeps these in ``subscriptionGroup.json`` and creates a group with default settings the first time
it is seen (``autoCreateSubscriptionGroup``). This broker keeps them in memory only; every group starts
with Apache's defaults, which is what a stock broker gives a group nobody configured.

The table travels whole as Apache's ``SubscriptionGroupWrapper`` (GET_ALL_SUBSCRIPTIONGROUP_CONFIG): a
slave copies its master's when the data version differs, so :class:`SubscriptionGroupManager` keeps a data
version bumped on every change, and encodes and decodes that body here.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from broker.store.json_config import DataVersion
from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import write_map
from rocketmq_wire.bodies.java_collections import JavaTable, MapKind, string_hash
from rocketmq_wire.errors import CodecError

log = logging.getLogger("broker.subscription_groups")

#: ``MixAll.MASTER_ID``.
MASTER_ID = 0
#: Apache's ``subscriptionGroupTable``: ``new ConcurrentHashMap<>(1024)``.
_GROUP_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, 1024)


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclasses.dataclass(slots=True)
class SubscriptionGroupConfig:
    """Apache's ``SubscriptionGroupConfig`` fields that change what the broker does."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = MASTER_ID
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True

    def to_bean(self) -> fastjson.Bean:
        """The group as a 4.9 broker writes it (``SubscriptionGroupConfig`` through fastjson)."""
        return fastjson.Bean(
            {
                "groupName": self.group_name,
                "consumeEnable": self.consume_enable,
                "consumeFromMinEnable": self.consume_from_min_enable,
                "consumeBroadcastEnable": self.consume_broadcast_enable,
                "retryQueueNums": self.retry_queue_nums,
                "retryMaxTimes": self.retry_max_times,
                "brokerId": self.broker_id,
                "whichBrokerWhenConsumeSlowly": self.which_broker_when_consume_slowly,
                "notifyConsumerIdsChangedEnable": self.notify_consumer_ids_changed_enable,
            }
        )

    @classmethod
    def from_mapping(cls, name: str, fields: Mapping[Any, Any]) -> SubscriptionGroupConfig:
        """A group read from a peer's JSON; fields it lacks keep Java's defaults, unknown ones are ignored."""
        config = cls(group_name=name)

        def flag(key: str, default: bool) -> bool:
            value = fields.get(key)
            return value if isinstance(value, bool) else default

        def number(key: str, default: int, bits: int) -> int:
            value = fields.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, str)):
                return default
            try:
                result = int(value)
            except ValueError:
                return default
            if not -(1 << (bits - 1)) <= result < 1 << (bits - 1):
                # fastjson refuses the whole table then; kept, it would fail every later write of ours
                raise CodecError(
                    f"subscription group {name}: {key} {result} does not fit a Java {bits}-bit field"
                )
            return result

        config.consume_enable = flag("consumeEnable", config.consume_enable)
        config.consume_from_min_enable = flag("consumeFromMinEnable", config.consume_from_min_enable)
        config.consume_broadcast_enable = flag("consumeBroadcastEnable", config.consume_broadcast_enable)
        config.notify_consumer_ids_changed_enable = flag(
            "notifyConsumerIdsChangedEnable", config.notify_consumer_ids_changed_enable
        )
        config.retry_queue_nums = number("retryQueueNums", config.retry_queue_nums, 32)
        config.retry_max_times = number("retryMaxTimes", config.retry_max_times, 32)
        config.broker_id = number("brokerId", config.broker_id, 64)
        config.which_broker_when_consume_slowly = number(
            "whichBrokerWhenConsumeSlowly", config.which_broker_when_consume_slowly, 64
        )
        return config


class SubscriptionGroupManager:
    def __init__(self, auto_create: bool = True, clock: Callable[[], int] = _now_ms) -> None:
        self.auto_create = auto_create
        self._clock = clock
        self._groups: dict[str, SubscriptionGroupConfig] = {}
        self.data_version = DataVersion(timestamp=clock())  # a new Java DataVersion carries the time

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """The group's settings; a new group gets the defaults when auto-creation is on."""
        config = self._groups.get(group)
        if config is None and self.auto_create:
            config = SubscriptionGroupConfig(group_name=group)
            self._groups[group] = config
            self.data_version.bump(self._clock())
            log.info("auto-created subscription group %s", group)
        return config

    def put(self, config: SubscriptionGroupConfig) -> None:
        self._groups[config.group_name] = config
        self.data_version.bump(self._clock())

    def delete(self, group: str) -> bool:
        """Forget a group's settings (it gets the defaults again if it comes back); True if it was known."""
        removed = self._groups.pop(group, None) is not None
        if removed:
            self.data_version.bump(self._clock())
        return removed

    def groups(self) -> list[str]:
        return sorted(self._groups)

    # -- the whole table, as masters and slaves exchange it ---------------------------------------------

    def to_json(self) -> bytes:
        """The GET_ALL_SUBSCRIPTIONGROUP_CONFIG body (Apache's ``SubscriptionGroupManager.encode()``)."""
        table = write_map(self._groups, string_hash, _GROUP_TABLE, lambda name: name, lambda c: c.to_bean())
        return fastjson.dump_bytes(
            fastjson.Bean({"dataVersion": self.data_version.to_json(), "subscriptionGroupTable": table})
        )

    def replace_from_json(self, body: bytes) -> bool:
        """Take a peer's whole table if its data version differs from ours (Apache's slave sync).

        Returns whether anything was taken; raises :class:`CodecError` for a body that is no such table.
        """
        parsed = fastjson.loads(body)
        if not isinstance(parsed, dict):
            raise CodecError("a subscription group table must be a JSON object")
        version = DataVersion.from_json(parsed.get("dataVersion"))
        stamps = (version.timestamp, version.counter, version.state_version)
        if not all(-(1 << 63) <= stamp < 1 << 63 for stamp in stamps):
            raise CodecError(f"a subscription group table's dataVersion {stamps} does not fit Java's long")
        if version == self.data_version:
            return False
        raw = parsed.get("subscriptionGroupTable")
        groups: dict[str, SubscriptionGroupConfig] = {}
        if isinstance(raw, dict):
            for name, fields in raw.items():
                if isinstance(name, str) and isinstance(fields, dict):
                    groups[name] = SubscriptionGroupConfig.from_mapping(name, fields)
        self._groups = groups
        self.data_version = version
        return True
