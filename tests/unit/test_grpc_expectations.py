"""The gRPC SDKs' shared expectation (``tests/integration/grpc_peer/expectations.py``) without a cluster:
it passes what a correct run reports and fails each way a broker or proxy could go wrong."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.grpc_peer.expectations import KINDS, PRECISION_MS, ROLLBACK_BODY, expect_every_type

COUNT = 4
SENT_AT = 1_000_000
DUE = SENT_AT + 3000

Events = dict[str, list[dict[str, Any]]]


def _good_run() -> tuple[Events, Events]:
    sent: Events = {}
    received: Events = {}
    for kind in KINDS:
        due = DUE if kind == "delay" else None
        sent[kind] = [{"index": i, "at_ms": SENT_AT, "due_ms": due} for i in range(COUNT)]
        received[kind] = [
            {
                "body": f"grpc {kind} {i}",
                "group": f"group-{i % 2}" if kind == "fifo" else None,
                "at_ms": DUE + 10,
            }
            for i in range(COUNT)
        ]
    return sent, received


def _check(sent: Events, received: Events, rolled_back: int = 1) -> None:
    expect_every_type(
        "test", COUNT, sent, received, [{"message_id": "x"}] * rolled_back, dict.fromkeys(KINDS, "")
    )


def test_a_correct_run_passes() -> None:
    sent, received = _good_run()
    _check(sent, received)


def _rollback_arrives(received: Events) -> None:
    received["transaction"][0]["body"] = ROLLBACK_BODY


def _duplicate(received: Events) -> None:
    received["normal"][3] = dict(received["normal"][0])


def _lost(received: Events) -> None:
    received["delay"].pop()


def _early(received: Events) -> None:
    received["delay"][1]["at_ms"] = DUE - PRECISION_MS - 1


def _fifo_reordered(received: Events) -> None:
    fifo = received["fifo"]
    fifo[0], fifo[2] = fifo[2], fifo[0]  # both of group-0


def _fifo_group_lost(received: Events) -> None:
    for event in received["fifo"]:
        event["group"] = None


@pytest.mark.parametrize(
    "spoil", [_rollback_arrives, _duplicate, _lost, _early, _fifo_reordered, _fifo_group_lost]
)
def test_each_fault_fails(spoil: Callable[[Events], None]) -> None:
    sent, received = _good_run()
    spoiled = copy.deepcopy(received)
    spoil(spoiled)
    with pytest.raises(AssertionError):
        _check(sent, spoiled)


def test_a_run_that_sent_no_rollback_fails() -> None:
    sent, received = _good_run()
    with pytest.raises(AssertionError, match="no rolled-back"):
        _check(sent, received, rolled_back=0)


def test_a_delay_message_within_the_timer_precision_passes() -> None:
    sent, received = _good_run()
    received["delay"][0]["at_ms"] = DUE - PRECISION_MS
    _check(sent, received)
