"""KVTable: a string-to-string map in a body.

Answers GET_KVLIST_BY_NAMESPACE, REGISTER_BROKER (the ``ORDER_TOPIC_CONFIG`` namespace, so brokers learn
which topics are ordered) and GET_BROKER_RUNTIME_INFO. Java holds the entries in a ``HashMap`` built by
inserting them one by one.
"""

from __future__ import annotations

import dataclasses
from typing import Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, same, string_map, write_map
from rocketmq_wire.bodies.java_collections import HASH_MAP, read_map, string_hash


@dataclasses.dataclass(kw_only=True)
class KVTable(JsonBody):
    """``HashMap<String, String> table``."""

    table: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_bean(self) -> fastjson.Bean:
        return bean(table=write_map(self.table, string_hash, HASH_MAP, same, same))

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.get_map("table")
        if entries is None:
            return cls(table={})
        return cls(table=read_map(string_map(entries, f"{obj.path}.table"), string_hash, HASH_MAP))
