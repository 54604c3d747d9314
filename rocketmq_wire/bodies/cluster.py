"""Cluster info: the NameServer's answer to GET_BROKER_CLUSTER_INFO.

Both maps are the NameServer's own route tables, handed to fastjson as they are, so their iteration order
is that of tables with the NameServer's construction capacities. 5.x builds them as
``ConcurrentHashMap(128)`` and ``ConcurrentHashMap(32)`` (256 and 64 buckets); 4.x as ``HashMap(128)`` and
``HashMap(32)``. A value built here uses the 5.x sizes; one read off the wire keeps the size its order
shows, so it is written back exactly.
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
    to_required_string,
    write_map,
    write_set,
)
from rocketmq_wire.bodies.java_collections import (
    HASH_MAP,
    JavaSet,
    JavaTable,
    MapKind,
    read_map,
    read_set,
    string_hash,
)
from rocketmq_wire.bodies.route import BrokerData

BROKER_ADDR_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, 128)
CLUSTER_ADDR_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, 32)


def _broker_data(value: Any, path: str) -> BrokerData:
    return BrokerData.from_object(object_fields(value, path))


def _broker_names(value: Any, path: str) -> JavaSet[str]:
    return read_set(string_list(value, path), string_hash, HASH_MAP)


def _write_names(names: list[str]) -> fastjson.JsonValue:
    return write_set(names, string_hash, HASH_MAP, same)


@dataclasses.dataclass(kw_only=True)
class ClusterInfo(JsonBody):
    """Every broker group by name, and the broker names of each cluster (a ``HashSet`` per cluster)."""

    broker_addr_table: dict[str, BrokerData] = dataclasses.field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = dataclasses.field(default_factory=dict)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            brokerAddrTable=write_map(
                self.broker_addr_table, string_hash, BROKER_ADDR_TABLE, same, lambda b: b.to_bean()
            ),
            clusterAddrTable=write_map(
                self.cluster_addr_table, string_hash, CLUSTER_ADDR_TABLE, same, _write_names
            ),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        brokers = obj.entries_of("brokerAddrTable", to_required_string, _broker_data)
        clusters = obj.entries_of("clusterAddrTable", to_required_string, _broker_names)
        return cls(
            broker_addr_table={} if brokers is None else read_map(brokers, string_hash, BROKER_ADDR_TABLE),
            cluster_addr_table=(
                {} if clusters is None else read_map(clusters, string_hash, CLUSTER_ADDR_TABLE)
            ),
        )

    def broker_addrs_of_cluster(self, cluster: str) -> list[str]:
        """Every address of every broker group in ``cluster`` (``retrieveAllAddrByCluster``)."""
        addrs: list[str] = []
        for name in self.cluster_addr_table.get(cluster, []):
            data = self.broker_addr_table.get(name)
            if data is not None:
                addrs.extend(data.broker_addrs.values())
        return addrs
