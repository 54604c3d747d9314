"""Names with a meaning of their own: reserved topics and groups, retry/DLQ topics, namespaces, validation.

These are protocol facts every role shares (Java's ``MixAll``, ``TopicValidator`` and ``NamespaceUtil``):
the producer refuses the same topics the broker refuses, with the same remarks, because users see them.
"""

from __future__ import annotations

import re
from typing import Final

from rocketmq_wire.codes import ResponseCode

#: The topic whose route stands in for one that does not exist yet (``createTopicKey``).
AUTO_CREATE_TOPIC: Final = "TBW102"
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
SCHEDULE_TOPIC_V2: Final = "SCHEDULE_TOPIC_XXXX_V2"
BENCHMARK_TOPIC: Final = "BenchmarkTest"
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
TRACE_TOPIC: Final = "RMQ_SYS_TRACE_TOPIC"
SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
#: Where a 5.x broker keeps timer messages until their time (Apache's ``TimerMessageStore.TIMER_TOPIC``).
WHEEL_TIMER_TOPIC: Final = "rmq_sys_wheel_timer"
REPLY_TOPIC_SUFFIX: Final = "_REPLY_TOPIC"

RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
SYSTEM_CONSUMER_GROUP_PREFIX: Final = "CID_RMQ_SYS_"
#: The internal consumer group under which the transaction service keeps its half/op queue progress.
TRANS_CHECK_GROUP: Final = "CID_RMQ_SYS_TRANS"
#: The group of the internal producer every Java client instance registers in its heartbeats.
CLIENT_INNER_PRODUCER_GROUP: Final = "CLIENT_INNER_PRODUCER"
#: The group name Java refuses for a producer (``MixAll.DEFAULT_PRODUCER_GROUP``).
DEFAULT_PRODUCER_GROUP: Final = "DEFAULT_PRODUCER"
DEFAULT_CONSUMER_GROUP: Final = "DEFAULT_CONSUMER"
#: The group admin tools pull under (``MixAll.TOOLS_CONSUMER_GROUP``).
TOOLS_CONSUMER_GROUP: Final = "TOOLS_CONSUMER"
#: The NameServer KV namespace where ordered topics keep their queue layout (``brokerName:queues;...``).
ORDER_TOPIC_CONFIG: Final = "ORDER_TOPIC_CONFIG"
#: The region a broker is assumed to be in when its send response names none.
DEFAULT_REGION: Final = "DefaultRegion"

#: Topics no client may send to (message traces do go to the trace topic, so it is not among them).
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        SCHEDULE_TOPIC,
        SCHEDULE_TOPIC_V2,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)
SYSTEM_TOPICS: Final = NOT_ALLOWED_SEND_TOPICS | {AUTO_CREATE_TOPIC, BENCHMARK_TOPIC, TRACE_TOPIC}

TOPIC_MAX_LENGTH: Final = 127
GROUP_MAX_LENGTH: Final = 255
VALID_NAME_PATTERN: Final = r"^[%|a-zA-Z0-9_-]+$"
_VALID_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")

NAMESPACE_SEPARATOR: Final = "%"

#: How the light queue of a 5.5 lite topic is named: this prefix, the parent topic, ``$``, the lite topic.
LITE_QUEUE_PREFIX: Final = "%LMQ%$"
LITE_QUEUE_SEPARATOR: Final = "$"


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_dlq_topic(topic: str) -> bool:
    return topic.startswith(DLQ_GROUP_TOPIC_PREFIX)


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def is_system_resource(resource: str) -> bool:
    """Topics and groups namespaces never apply to."""
    return is_system_topic(resource) or resource.startswith(SYSTEM_CONSUMER_GROUP_PREFIX)


def reply_topic(cluster: str) -> str:
    return cluster + REPLY_TOPIC_SUFFIX


def lite_queue_name(parent_topic: str, lite_topic: str) -> str:
    """The light queue (LMQ) in which a 5.5 broker keeps ``lite_topic`` of ``parent_topic``
    (``LiteUtil.toLmqName``); mqadmin prints it, and the broker keeps the lite topic's offsets under it."""
    return f"{LITE_QUEUE_PREFIX}{parent_topic}{LITE_QUEUE_SEPARATOR}{lite_topic}"


def validate_topic(topic: str | None) -> tuple[int, str] | None:
    """``TopicValidator.validateTopic``: ``None`` if acceptable, else (response code, Apache's remark)."""
    if topic is None or not topic.strip():
        return ResponseCode.SYSTEM_ERROR, "The specified topic is blank."
    if not _VALID_NAME.fullmatch(topic):
        return (
            ResponseCode.SYSTEM_ERROR,
            f"The specified topic contains illegal characters, allowing only {VALID_NAME_PATTERN}",
        )
    if len(topic) > TOPIC_MAX_LENGTH:
        return ResponseCode.SYSTEM_ERROR, "The specified topic is longer than topic max length."
    return None


def validate_group(group: str | None) -> str | None:
    """``None`` if ``group`` is a usable group name, else why not (the client-side check)."""
    if group is None or not group.strip():
        return "the specified group is blank"
    if len(group) > GROUP_MAX_LENGTH:
        return f"the specified group is longer than group max length {GROUP_MAX_LENGTH}"
    if not _VALID_NAME.fullmatch(group):
        return f"the specified group[{group}] contains illegal characters, allowing only {VALID_NAME_PATTERN}"
    return None


def check_send_allowed(topic: str) -> tuple[int, str] | None:
    """``None`` when clients may send to ``topic``; else the broker's answer."""
    if topic in NOT_ALLOWED_SEND_TOPICS:
        return ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
    return None


FAQ_URL: Final = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str = FAQ_URL) -> str:
    """The line Apache appends to some remarks, pointing at its FAQ."""
    return f"\nSee {url} for further details."


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
