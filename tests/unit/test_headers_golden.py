"""Typed headers against the frames real Apache 4.9.8 / 5.3.3 processes and the C++ client sent.

For every captured request whose code has a header class (and every successful response whose request's
code has one): the header parses from the decoded ext entries, covers every entry that is not one of the
known out-of-band keys, renders each value back to the captured string, and -- inserted first into a Java
``HashMap`` with the rest after it -- lands every key where the Java peer's map put it. That last check is
what fixes the declared field order: keys that share a bucket keep their insertion order.
"""

from __future__ import annotations

import collections
import dataclasses

import pytest

from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers import header_for_request, header_for_response
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.javahash import bucket_of, final_table_size, hashmap_order
from tests.golden import CAPTURES, GoldenFrame, load_golden, request_of
from tests.header_checks import header_mismatches, key_order_mismatch, order_is_constrained

#: Requests Java sends without any custom header.
NO_HEADER_REQUESTS = {
    RequestCode.GET_BROKER_CONFIG,
    RequestCode.GET_BROKER_RUNTIME_INFO,
    RequestCode.GET_BROKER_CLUSTER_INFO,
    RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
}

#: Response codes that still carry the header of their kind (a pull that found nothing says where next).
_PULL_STATUS_CODES = {
    ResponseCode.PULL_NOT_FOUND,
    ResponseCode.PULL_RETRY_IMMEDIATELY,
    ResponseCode.PULL_OFFSET_MOVED,
}


@dataclasses.dataclass(frozen=True)
class Case:
    frame: GoldenFrame
    cmd: RemotingCommand
    header_cls: type[CommandHeader]


def _cases(capture: str) -> list[Case]:
    cases = []
    for frame in load_golden():
        if frame.capture != capture:
            continue
        header_cls: type[CommandHeader] | None
        if frame.kind == "response":
            request = request_of(frame)
            if request is None:
                continue
            pull = request.code in (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE)
            if frame.code != ResponseCode.SUCCESS and not (pull and frame.code in _PULL_STATUS_CODES):
                continue
            header_cls = header_for_response(request.code)
        else:
            header_cls = header_for_request(frame.code)
        if header_cls is not None:
            cases.append(Case(frame, RemotingCommand.decode(frame.frame), header_cls))
    return cases


def test_every_request_java_sent_has_a_header_class_or_none_in_java() -> None:
    missing = {
        RequestCode(f.code).name
        for f in load_golden()
        if f.kind != "response" and header_for_request(f.code) is None and f.code not in NO_HEADER_REQUESTS
    }
    assert missing == set()


@pytest.mark.parametrize("capture", CAPTURES)
def test_headers_parse_and_cover_every_header_entry(capture: str) -> None:
    failures: list[str] = []
    parsed: collections.Counter[str] = collections.Counter()
    for case in _cases(capture):
        # The C++ client writes some values its own way ("unitMode":"0"); Java's render as Java does.
        problems = header_mismatches(case.cmd, case.header_cls, check_values=case.frame.from_java)
        failures += [f"{case.frame.id} {problem}" for problem in problems]
        parsed[case.frame.language] += 1
    assert not failures, failures[:10]
    assert parsed["JAVA"] > 150, parsed


@pytest.mark.parametrize("capture", CAPTURES)
def test_header_entries_first_then_the_rest_reproduce_javas_key_order(capture: str) -> None:
    failures: list[str] = []
    checked = constrained = 0
    for case in _cases(capture):
        if not case.frame.from_java or not case.cmd.ext_fields:
            continue  # C++ sorts its keys; an absent map (or a fast-path prefix alone) has no order to check
        mismatch = key_order_mismatch(case.cmd, case.header_cls)
        if mismatch is not None:
            failures.append(f"{case.frame.id} {mismatch}")
        checked += 1
        constrained += order_is_constrained(case.cmd, case.header_cls)
    assert not failures, failures[:10]
    assert checked > 150
    # The check has teeth: in these frames a header key shares its bucket, so a wrong field order fails.
    assert constrained > 0


def test_order_check_would_catch_a_wrong_field_order() -> None:
    # The register-broker frames put brokerId before bodyCrc32 in one bucket; reversed, they would not match.
    frame = next(f for f in load_golden() if f.from_java and f.code == RequestCode.REGISTER_BROKER)
    ext = RemotingCommand.decode(frame.frame).ext_fields
    assert ext is not None
    keys = list(ext)
    size = final_table_size(len(keys), ext.capacity)
    assert bucket_of("brokerId", size) == bucket_of("bodyCrc32", size)
    assert keys.index("brokerId") < keys.index("bodyCrc32")
    swapped = [k for k in keys if k != "brokerId"]
    swapped.insert(swapped.index("bodyCrc32") + 1, "brokerId")
    assert hashmap_order(swapped, ext.capacity) != keys
