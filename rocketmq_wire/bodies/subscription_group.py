"""A consumer group's broker-side settings and a broker's view of every group's progress.

:class:`SubscriptionGroupConfig` is the UPDATE_AND_CREATE_SUBSCRIPTIONGROUP request body (and each entry of
the GET_ALL_SUBSCRIPTIONGROUP_CONFIG table, :class:`SubscriptionGroupWrapper`); it has the 4.9 fields, with
Java's initial values as defaults, because mqadmin ``updateSubGroup`` sends all of them. 5.x adds fields
(retry policy, attributes ...) that a 5.x broker defaults when they are missing.

:class:`ConsumeStatsList` answers GET_BROKER_CONSUME_STATS: for each group on the broker, one
:class:`~rocketmq_wire.bodies.stats.ConsumeStats` per topic it consumed, and the summed lag.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, object_fields
from rocketmq_wire.bodies.stats import ConsumeStats
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.errors import CodecError

#: ``MixAll.MASTER_ID``: a group reads from the master unless told otherwise.
MASTER_ID = 0


@dataclasses.dataclass(kw_only=True)
class SubscriptionGroupConfig(JsonBody):
    """How a broker treats one consumer group (Apache's ``SubscriptionGroupConfig``, 4.9 fields)."""

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
        return bean(
            groupName=self.group_name,
            consumeEnable=self.consume_enable,
            consumeFromMinEnable=self.consume_from_min_enable,
            consumeBroadcastEnable=self.consume_broadcast_enable,
            retryQueueNums=self.retry_queue_nums,
            retryMaxTimes=self.retry_max_times,
            brokerId=self.broker_id,
            whichBrokerWhenConsumeSlowly=self.which_broker_when_consume_slowly,
            notifyConsumerIdsChangedEnable=self.notify_consumer_ids_changed_enable,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        name = obj.get_str("groupName")
        if name is None:
            raise CodecError(f"{obj.path}.groupName: a subscription group needs a name")
        return cls(
            group_name=name,
            consume_enable=obj.get_bool("consumeEnable", True),
            consume_from_min_enable=obj.get_bool("consumeFromMinEnable", True),
            consume_broadcast_enable=obj.get_bool("consumeBroadcastEnable", True),
            retry_queue_nums=obj.get_int("retryQueueNums", 1),
            retry_max_times=obj.get_int("retryMaxTimes", 16),
            broker_id=obj.get_long("brokerId", MASTER_ID),
            which_broker_when_consume_slowly=obj.get_long("whichBrokerWhenConsumeSlowly", 1),
            notify_consumer_ids_changed_enable=obj.get_bool("notifyConsumerIdsChangedEnable", True),
        )


def _group_config(value: Any, path: str) -> SubscriptionGroupConfig:
    return SubscriptionGroupConfig.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class SubscriptionGroupWrapper(JsonBody):
    """Every group a broker knows, with the table's data version (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).

    Read-only here: the broker writes this table itself, in its own map order.
    """

    subscription_group_table: dict[str, SubscriptionGroupConfig] = dataclasses.field(default_factory=dict)
    data_version: DataVersion | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            subscriptionGroupTable={k: v.to_bean() for k, v in self.subscription_group_table.items()},
            dataVersion=None if self.data_version is None else self.data_version.to_bean(),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        table: dict[str, SubscriptionGroupConfig] = {}
        raw = obj.get_map("subscriptionGroupTable") or {}
        for name, value in raw.items():
            config = _group_config(value, f"{obj.path}.subscriptionGroupTable[{name!r}]")
            table[str(name)] = config
        version = obj.get_object("dataVersion")
        return cls(
            subscription_group_table=table,
            data_version=None if version is None else DataVersion.from_object(version),
        )


def _stats_by_group(value: Any, path: str) -> dict[str, list[ConsumeStats]]:
    result: dict[str, list[ConsumeStats]] = {}
    if not isinstance(value, dict):
        raise CodecError(f"{path}: expected a JSON object")
    for group, stats in value.items():
        if not isinstance(stats, list):
            raise CodecError(f"{path}[{group!r}]: expected an array")
        result[str(group)] = [
            ConsumeStats.from_object(object_fields(item, f"{path}[{group!r}][{i}]"))
            for i, item in enumerate(stats)
        ]
    return result


@dataclasses.dataclass(kw_only=True)
class ConsumeStatsList(JsonBody):
    """One broker's progress of every subscription group (GET_BROKER_CONSUME_STATS).

    ``consume_stats_list`` holds one single-entry map per group (group name -> its stats per topic), the
    shape Java builds; ``total_diff`` is the lag summed over all of them.
    """

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = dataclasses.field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            consumeStatsList=[
                {group: [s.to_bean() for s in stats] for group, stats in entry.items()}
                for entry in self.consume_stats_list
            ],
            brokerAddr=self.broker_addr,
            totalDiff=self.total_diff,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            consume_stats_list=obj.items_of("consumeStatsList", _stats_by_group) or [],
            broker_addr=obj.get_str("brokerAddr"),
            total_diff=obj.get_long("totalDiff"),
        )
