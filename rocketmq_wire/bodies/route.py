"""Topic route data: what the NameServer answers to GET_ROUTEINFO_BY_TOPIC.

The NameServer writes it in one of two dialects. Clients that announce version 4.9.4 or later (or set the
``acceptStandardJsonOnly`` header field) get strict JSON: fastjson's ``BrowserCompatible`` and
``MapSortField`` features, so map keys are quoted and sorted (``"brokerAddrs":{"0":"..."}``) and non-ASCII
text is ``\\u``-escaped. Older clients, the C++ client among them, get the plain encoding with bare integer
keys (``{0:"..."}``) in ``HashMap`` order. :meth:`TopicRouteData.to_json` writes either; ``from_json``
reads both.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import (
    Fields,
    JsonBody,
    bean,
    object_fields,
    same,
    string_list,
    to_long,
    to_required_string,
    write_map,
)
from rocketmq_wire.bodies.java_collections import HASH_MAP, long_hash, read_map, string_hash
from rocketmq_wire.bodies.static_topic import TopicQueueMappingInfo

#: The broker id of a master (``MixAll.MASTER_ID``).
MASTER_ID = 0


@dataclasses.dataclass(kw_only=True)
class QueueData(JsonBody):
    """A topic's queues on one broker: how many to read and write, and the permission bits."""

    broker_name: str | None = None
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            brokerName=self.broker_name,
            readQueueNums=self.read_queue_nums,
            writeQueueNums=self.write_queue_nums,
            perm=self.perm,
            topicSysFlag=self.topic_sys_flag,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            broker_name=obj.get_str("brokerName"),
            read_queue_nums=obj.get_int("readQueueNums"),
            write_queue_nums=obj.get_int("writeQueueNums"),
            perm=obj.get_int("perm"),
            topic_sys_flag=obj.get_int("topicSysFlag"),
        )


def _broker_id(value: Any, path: str) -> int:
    return to_long(value, path)


@dataclasses.dataclass(kw_only=True)
class BrokerData(JsonBody):
    """One broker group (master and slaves) by broker id: ``HashMap<Long, String> brokerAddrs``.

    ``enable_acting_master`` and ``zone_name`` exist from 5.0 on; ``None`` leaves them out as 4.x does.
    """

    cluster: str | None = None
    broker_name: str | None = None
    broker_addrs: dict[int, str] = dataclasses.field(default_factory=dict)
    zone_name: str | None = None
    enable_acting_master: bool | None = None

    def master_addr(self) -> str | None:
        return self.broker_addrs.get(MASTER_ID)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            cluster=self.cluster,
            brokerName=self.broker_name,
            brokerAddrs=write_map(self.broker_addrs, long_hash, HASH_MAP, same, same),
            zoneName=self.zone_name,
            enableActingMaster=self.enable_acting_master,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("brokerAddrs", _broker_id, to_required_string)
        return cls(
            cluster=obj.get_str("cluster"),
            broker_name=obj.get_str("brokerName"),
            broker_addrs={} if entries is None else read_map(entries, long_hash, HASH_MAP),
            zone_name=obj.get_str("zoneName"),
            enable_acting_master=obj.opt_bool("enableActingMaster"),
        )


def _queue_data(value: Any, path: str) -> QueueData:
    return QueueData.from_object(object_fields(value, path))


def _broker_data(value: Any, path: str) -> BrokerData:
    return BrokerData.from_object(object_fields(value, path))


def _mapping_info(value: Any, path: str) -> TopicQueueMappingInfo:
    return TopicQueueMappingInfo.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class TopicRouteData(JsonBody):
    """Where a topic lives: its queues per broker and the addresses of those brokers."""

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] = dataclasses.field(default_factory=list)
    broker_datas: list[BrokerData] = dataclasses.field(default_factory=list)
    filter_server_table: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    #: 5.x static topics; ``None`` (the usual case) leaves the field out.
    topic_queue_mapping_by_broker: dict[str, TopicQueueMappingInfo] | None = None

    def to_bean(self) -> fastjson.Bean:
        mapping = self.topic_queue_mapping_by_broker
        return bean(
            orderTopicConf=self.order_topic_conf,
            queueDatas=[q.to_bean() for q in self.queue_datas],
            brokerDatas=[b.to_bean() for b in self.broker_datas],
            filterServerTable=write_map(self.filter_server_table, string_hash, HASH_MAP, same, list),
            topicQueueMappingByBroker=(
                None
                if mapping is None
                else write_map(mapping, string_hash, HASH_MAP, same, lambda info: info.to_bean())
            ),
        )

    def to_json(self, *, standard_json: bool = False) -> bytes:
        """The body as the NameServer writes it; ``standard_json`` for clients of 4.9.4 and later."""
        return fastjson.dump_bytes(self.to_bean(), browser_compatible=standard_json, sort_maps=standard_json)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        filter_entries = obj.entries_of("filterServerTable", to_required_string, string_list)
        mapping_entries = obj.entries_of("topicQueueMappingByBroker", to_required_string, _mapping_info)
        return cls(
            order_topic_conf=obj.get_str("orderTopicConf"),
            queue_datas=obj.items_of("queueDatas", _queue_data) or [],
            broker_datas=obj.items_of("brokerDatas", _broker_data) or [],
            filter_server_table=(
                {} if filter_entries is None else read_map(filter_entries, string_hash, HASH_MAP)
            ),
            topic_queue_mapping_by_broker=(
                None if mapping_entries is None else read_map(mapping_entries, string_hash, HASH_MAP)
            ),
        )
