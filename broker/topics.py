"""Topic names with a meaning of their own, permission bits, and the rules a topic name must follow.

The reserved names and the validation messages are Apache's, because clients and admin tools show the
broker's remark to users and some match on it.
"""

from __future__ import annotations

import re
from typing import Final

from rocketmq_wire.codes import ResponseCode

AUTO_CREATE_TOPIC: Final = "TBW102"
SCHEDULE_TOPIC: Final = "SCHEDULE_TOPIC_XXXX"
SCHEDULE_TOPIC_V2: Final = "SCHEDULE_TOPIC_XXXX_V2"
BENCHMARK_TOPIC: Final = "BenchmarkTest"
TRANS_HALF_TOPIC: Final = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC: Final = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC: Final = "TRANS_CHECK_MAX_TIME_TOPIC"
SELF_TEST_TOPIC: Final = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT: Final = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX: Final = "rmq_sys_"
REPLY_TOPIC_SUFFIX: Final = "_REPLY_TOPIC"

RETRY_GROUP_TOPIC_PREFIX: Final = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX: Final = "%DLQ%"
#: The internal consumer group under which the transaction service keeps its half/op queue progress.
TRANS_CHECK_GROUP: Final = "CID_RMQ_SYS_TRANS"

#: Topics no client may send to.
NOT_ALLOWED_SEND_TOPICS: Final = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
        SCHEDULE_TOPIC_V2,
    }
)
SYSTEM_TOPICS: Final = NOT_ALLOWED_SEND_TOPICS | {AUTO_CREATE_TOPIC, BENCHMARK_TOPIC, "RMQ_SYS_TRACE_TOPIC"}

TOPIC_MAX_LENGTH: Final = 127
_VALID_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")

# --- PermName bits -------------------------------------------------------------------------------
PERM_PRIORITY: Final = 0x1 << 3
PERM_READ: Final = 0x1 << 2
PERM_WRITE: Final = 0x1 << 1
PERM_INHERIT: Final = 0x1


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


def is_inherited(perm: int) -> bool:
    return bool(perm & PERM_INHERIT)


def perm_to_string(perm: int) -> str:
    """``PermName.perm2String``: ``RW-`` style."""
    return (
        ("R" if is_readable(perm) else "-")
        + ("W" if is_writeable(perm) else "-")
        + ("X" if is_inherited(perm) else "-")
    )


# --- names -----------------------------------------------------------------------------------------


def retry_topic(group: str) -> str:
    return RETRY_GROUP_TOPIC_PREFIX + group


def dlq_topic(group: str) -> str:
    return DLQ_GROUP_TOPIC_PREFIX + group


def is_retry_topic(topic: str) -> bool:
    return topic.startswith(RETRY_GROUP_TOPIC_PREFIX)


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def reply_topic(cluster: str) -> str:
    return cluster + REPLY_TOPIC_SUFFIX


def validate_topic(topic: str | None) -> tuple[int, str] | None:
    """Apache's ``TopicValidator.validateTopic``: ``None`` if acceptable, else (response code, remark)."""
    if topic is None or not topic.strip():
        return ResponseCode.SYSTEM_ERROR, "The specified topic is blank."
    if not _VALID_NAME.fullmatch(topic):
        return (
            ResponseCode.SYSTEM_ERROR,
            "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
        )
    if len(topic) > TOPIC_MAX_LENGTH:
        return ResponseCode.SYSTEM_ERROR, "The specified topic is longer than topic max length."
    return None


def check_send_allowed(topic: str) -> tuple[int, str] | None:
    """``TopicValidator.isNotAllowedSendTopic`` as a response: ``None`` when clients may send to it."""
    if topic in NOT_ALLOWED_SEND_TOPICS:
        return ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden."
    return None


# --- the remarks that point users at Apache's FAQ ----------------------------------------------------

FAQ_URL: Final = "http://rocketmq.apache.org/docs/faq/"


def suggest_todo(url: str = FAQ_URL) -> str:
    """``FAQUrl.suggestTodo``: the line Apache appends to some remarks."""
    return f"\nSee {url} for further details."
