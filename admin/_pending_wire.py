"""Protocol facts the admin client needs that ``rocketmq_wire`` does not hold yet.

TEMPORARY: each of these belongs in ``rocketmq_wire`` (the query flag beside the query header, the producer
connection body beside ``ConsumerConnection``, the properties text beside the other bodies). They live here
only so the admin client can move while those modules are being finished; once they land there, this module
goes and its users import from ``rocketmq_wire``. Nothing in it does I/O.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, object_fields
from rocketmq_wire.bodies.consumer import Connection

#: Ext entry (not a header field) of QUERY_MESSAGE: ``"true"`` looks the key up as a unique key (UNIQ_KEY),
#: ``"false"`` among the KEYS. mqadmin always sends it.
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"

#: The group admin tools pull under (``MixAll.TOOLS_CONSUMER_GROUP``).
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"

#: ``Long.MAX_VALUE``: the open end of a query's time range, as mqadmin sends it.
LONG_MAX: Final = (1 << 63) - 1


def _connection(value: Any, path: str) -> Connection:
    return Connection.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class ProducerConnection(JsonBody):
    """GET_PRODUCER_CONNECTION_LIST's answer: the live connections of a producer group on one broker.

    ``Connection`` hashes by identity in Java, so the set is written in the order given.
    """

    connection_set: list[Connection] = dataclasses.field(default_factory=list)

    def to_bean(self) -> fastjson.Bean:
        return bean(connectionSet=[c.to_bean() for c in self.connection_set])

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(connection_set=obj.items_of("connectionSet", _connection) or [])


def parse_properties_text(text: str) -> dict[str, str]:
    """The GET_BROKER_CONFIG body (``MixAll.properties2String``): ``key=value`` lines, in the order sent.

    Java reads it back with ``Properties.load``; brokers only ever write plain ``key=value`` lines, so
    comments and blank lines are skipped and the first ``=`` (or ``:``) splits key from value.
    """
    result: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        cut = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if cut < 0:
            result[line] = ""
        else:
            result[line[:cut].strip()] = line[cut + 1 :].strip()
    return result
