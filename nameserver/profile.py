"""Which Apache NameServer this one behaves like: 4.9.8 or 5.3.3.

The two answer the same requests with small but visible differences -- the FAQ link in a TOPIC_NOT_EXIST
remark, the ``enableActingMaster`` field of broker data, the Java collections behind the route tables (and
so the order names come out in), how a re-registration with an unchanged data version is treated. Clients
of either line accept both; a profile makes the answers byte-comparable with one of them.
"""

from __future__ import annotations

import dataclasses

from rocketmq_wire.bodies.java_collections import CONCURRENT_HASH_MAP, HASH_MAP, JavaTable, MapKind
from rocketmq_wire.codes import MQVersion


@dataclasses.dataclass(frozen=True, slots=True)
class ApacheProfile:
    """The behaviour switches that differ between the emulated Apache versions."""

    name: str
    #: The ``version`` the emulated server puts in its responses.
    version: int
    #: ``FAQUrl.APPLY_TOPIC_URL`` of that version, quoted in TOPIC_NOT_EXIST remarks.
    apply_topic_faq_url: str
    #: 5.x: broker data carries ``enableActingMaster``/``zoneName``, a slave may be the "prime slave", a
    #: re-registration with an unchanged data version still adds topics the route table lacks, the broker's
    #: own heartbeat timeout is honoured, and disabled topic lists answer "disable".
    is_5x: bool
    #: Construction of the route tables, which fixes the order they are written in.
    topic_table: JavaTable
    broker_table: JavaTable
    cluster_table: JavaTable
    #: The set a topic list body is collected in.
    topic_list_set: JavaTable

    def faq_suggestion(self, url: str) -> str:
        """``FAQUrl.suggestTodo``: the sentence appended to remarks that have an FAQ entry."""
        return f"\nSee {url} for further details."


APACHE_4_9_8 = ApacheProfile(
    name="4.9.8",
    version=MQVersion.V4_9_8,
    apply_topic_faq_url="http://rocketmq.apache.org/docs/faq/",
    is_5x=False,
    topic_table=JavaTable(MapKind.HASH_MAP, 1024),
    broker_table=JavaTable(MapKind.HASH_MAP, 128),
    cluster_table=JavaTable(MapKind.HASH_MAP, 32),
    topic_list_set=HASH_MAP,
)

APACHE_5_3_3 = ApacheProfile(
    name="5.3.3",
    version=MQVersion.V5_3_3,
    apply_topic_faq_url="https://rocketmq.apache.org/docs/bestPractice/06FAQ",
    is_5x=True,
    topic_table=JavaTable(MapKind.CONCURRENT_HASH_MAP, 1024),
    broker_table=JavaTable(MapKind.CONCURRENT_HASH_MAP, 128),
    cluster_table=JavaTable(MapKind.CONCURRENT_HASH_MAP, 32),
    topic_list_set=CONCURRENT_HASH_MAP,
)

PROFILES: dict[str, ApacheProfile] = {p.name: p for p in (APACHE_4_9_8, APACHE_5_3_3)}
DEFAULT_PROFILE = APACHE_5_3_3


def profile_named(name: str) -> ApacheProfile:
    """The profile for "4.9.8"/"4"/"4.x" or "5.3.3"/"5"/"5.x"; anything else raises ``ValueError``."""
    aliases = {"4": "4.9.8", "4.x": "4.9.8", "4.9": "4.9.8", "5": "5.3.3", "5.x": "5.3.3", "5.3": "5.3.3"}
    key = aliases.get(name.lower(), name)
    try:
        return PROFILES[key]
    except KeyError:
        raise ValueError(
            f"unknown Apache NameServer version {name!r}; known: {', '.join(PROFILES)}"
        ) from None
