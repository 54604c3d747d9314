"""Reserved names, validation remarks, namespaces and permission bits."""

from __future__ import annotations

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.perm import PERM_INHERIT, PERM_READ, PERM_WRITE, perm_to_string
from rocketmq_wire.topics import (
    check_send_allowed,
    dlq_topic,
    retry_topic,
    validate_group,
    validate_topic,
    without_namespace,
    wrap_namespace,
)


def test_perm_strings_match_mqadmin() -> None:
    assert perm_to_string(PERM_READ | PERM_WRITE) == "RW-"  # "perm=RW-" in the updateTopic step log
    assert perm_to_string(PERM_READ | PERM_WRITE | PERM_INHERIT) == "RWX"
    assert perm_to_string(0) == "---"


def test_topic_validation_remarks() -> None:
    assert validate_topic("GoldenTopic") is None
    assert validate_topic(" ") == (ResponseCode.SYSTEM_ERROR, "The specified topic is blank.")
    bad = validate_topic("a b")
    assert bad is not None and "illegal characters" in bad[1]
    assert validate_topic("x" * 128) is not None and validate_topic("x" * 127) is None
    assert check_send_allowed("SCHEDULE_TOPIC_XXXX") == (
        ResponseCode.NO_PERMISSION,
        "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.",
    )
    assert check_send_allowed("GoldenTopic") is None
    assert (
        validate_group("g1") is None and validate_group("") is not None and validate_group("a/b") is not None
    )


def test_namespace_wrapping_keeps_retry_prefix_and_system_names() -> None:
    assert wrap_namespace("ns", "Orders") == "ns%Orders"
    assert wrap_namespace("ns", "ns%Orders") == "ns%Orders"
    assert wrap_namespace("ns", retry_topic("g")) == "%RETRY%ns%g"
    assert wrap_namespace("ns", dlq_topic("g")) == "%DLQ%ns%g"
    assert wrap_namespace("ns", "TBW102") == "TBW102"
    assert without_namespace("%RETRY%ns%g", "ns") == "%RETRY%g"
    assert without_namespace("other%g", "ns") == "other%g"
    assert wrap_namespace(None, "Orders") == "Orders"
