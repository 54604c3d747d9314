"""Protocol facts the producer needs that ``rocketmq_wire`` does not hold yet.

TEMPORARY: everything here belongs in ``rocketmq_wire`` (permission bits and well-known names next to the
codes, namespace wrapping and name validation beside them). It lives here only so
the producer can move while those modules are being written; once they land, this module is deleted and its
users import from there. Nothing in it does I/O.
"""

from __future__ import annotations

from typing import Final

# --- well-known names (Java's MixAll / TopicValidator) -------------------------------------------------

#: The topic whose route stands in for one that does not exist yet (``createTopicKey``).
AUTO_CREATE_TOPIC_KEY: Final = "TBW102"
#: The group of the internal producer every Java client instance registers in its heartbeats.
CLIENT_INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
#: The region a broker is assumed to be in when its send response names none.
DEFAULT_TRACE_REGION_ID: Final = "DefaultRegion"
RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
SYSTEM_CONSUMER_GROUP_PREFIX: Final = "CID_RMQ_SYS_"
#: Topics a client must never send to (4.9.x ``TopicValidator.SYSTEM_TOPIC_SET``).
SYSTEM_TOPICS: Final[frozenset[str]] = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY,
        "SCHEDULE_TOPIC_XXXX",
        "BenchmarkTest",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)

#: Topics a producer may not send to (4.9.x ``TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET``).
NOT_ALLOWED_SEND_TOPICS: Final[frozenset[str]] = frozenset(
    {
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "RMQ_SYS_TRACE_TOPIC",
        "RMQ_SYS_TRANS_OP_HALF_TOPIC",
        "TRANS_CHECK_MAX_TIME_TOPIC",
        "SELF_TEST_TOPIC",
        "OFFSET_MOVED_EVENT",
    }
)
#: The group name Java refuses for a producer (``MixAll.DEFAULT_PRODUCER_GROUP``).
DEFAULT_PRODUCER_GROUP: Final = "DEFAULT_PRODUCER"
#: Longest topic a 4.9.x client accepts (``TopicValidator.TOPIC_MAX_LENGTH``) and longest group name.
TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255
#: Characters allowed in topic and group names (``TopicValidator.VALID_PATTERN_STR``).
VALID_NAME_PATTERN: Final = r"^[%|a-zA-Z0-9_-]+$"

# --- permissions (Java's PermName) --------------------------------------------------------------------

PERM_INHERIT: Final = 0x1
PERM_WRITE: Final = 0x1 << 1
PERM_READ: Final = 0x1 << 2


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


# --- namespaces (Java's NamespaceUtil) ----------------------------------------------------------------

NAMESPACE_SEPARATOR: Final = "%"


def is_system_resource(resource: str) -> bool:
    return (
        resource in SYSTEM_TOPICS
        or resource.startswith(SYSTEM_TOPIC_PREFIX)
        or resource.startswith(SYSTEM_CONSUMER_GROUP_PREFIX)
    )


def _split_retry_dlq(resource: str) -> tuple[str, str]:
    for prefix in (RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX):
        if resource.startswith(prefix):
            return prefix, resource[len(prefix) :]
    return "", resource


def wrap_namespace(namespace: str | None, resource: str) -> str:
    """``namespace%resource`` (after a retry/DLQ prefix); system names and wrapped ones stay as they are."""
    if not namespace or not resource or is_system_resource(resource):
        return resource
    prefix, bare = _split_retry_dlq(resource)
    if bare.startswith(namespace + NAMESPACE_SEPARATOR):
        return resource
    return f"{prefix}{namespace}{NAMESPACE_SEPARATOR}{bare}"


def without_namespace(resource: str, namespace: str | None) -> str:
    """The name the user gave, when ``resource`` carries ``namespace``; anything else unchanged."""
    if not namespace or not resource or is_system_resource(resource):
        return resource
    prefix, bare = _split_retry_dlq(resource)
    if not bare.startswith(namespace + NAMESPACE_SEPARATOR):
        return resource
    return prefix + bare[len(namespace) + 1 :]
