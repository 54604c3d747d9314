"""Protocol facts the admin client needs that ``rocketmq_wire`` does not hold yet.

TEMPORARY: each of these belongs in ``rocketmq_wire`` (the query flag beside the query header, the group and
namespace names in ``rocketmq_wire.topics``). They live here only so the admin client can move while those
modules are being finished; once they land there, this module goes and its users import from
``rocketmq_wire``. Nothing in it does I/O.
"""

from __future__ import annotations

from typing import Final

#: Ext entry (not a header field) of QUERY_MESSAGE: ``"true"`` looks the key up as a unique key (UNIQ_KEY),
#: ``"false"`` among the KEYS. mqadmin always sends it.
UNIQUE_KEY_QUERY: Final = "_UNIQUE_KEY_QUERY"

#: The group admin tools pull under (``MixAll.TOOLS_CONSUMER_GROUP``).
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"

#: ``Long.MAX_VALUE``: the open end of a query's time range, as mqadmin sends it.
LONG_MAX: Final = (1 << 63) - 1

#: The NameServer KV namespace ordered topics keep their queue layout in (``brokerName:queues;...``).
ORDER_TOPIC_CONFIG: Final = "ORDER_TOPIC_CONFIG"
