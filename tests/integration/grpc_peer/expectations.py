"""What Apache's gRPC SDKs must see through Apache's Proxy, written once for every SDK the suite drives.

Each peer (Python's ``peer.py``, Java's ``GrpcPeer``) sends ``count`` messages of every type, bodies
``grpc <kind> <index>`` (FIFO ones alternately in ``group-0`` and ``group-1``, delay ones with a due time),
plus one transactional message rolled back, and reports ``sent``, ``rolled_back`` and ``received`` events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

KINDS = ("normal", "fifo", "delay", "transaction")
#: A received delay message may arrive up to this much before its due time (Apache floors a timer to its
#: precision, 1 s).
PRECISION_MS = 1000
#: Both peers send one transactional message with this body and roll it back.
ROLLBACK_BODY = "grpc transaction rollback"


def expect_every_type(
    sdk: str,
    count: int,
    sent: Mapping[str, Sequence[dict[str, Any]]],
    received: Mapping[str, Sequence[dict[str, Any]]],
    rolled_back: Sequence[dict[str, Any]],
    describe: Mapping[str, str],
) -> None:
    """What every SDK must see through the proxy, per message type: ``sent`` and ``received`` are the peer's
    events of that type (``count`` of each sent, in two message groups for FIFO), ``rolled_back`` its
    ``rolled_back`` events, ``describe`` how its runs ended (for the failure message)."""
    assert len(rolled_back) == 1, f"{sdk}: no rolled-back transaction was sent; {describe['transaction']}"
    for kind in KINDS:
        assert len(sent[kind]) == count, f"{sdk} {kind}: sent {sent[kind]}; {describe[kind]}"
        bodies = [e["body"] for e in received[kind]]
        assert ROLLBACK_BODY not in bodies, f"{sdk}: a rolled-back transactional message arrived: {bodies}"
        expected = [f"grpc {kind} {i}" for i in range(count)]
        assert sorted(bodies) == sorted(expected), f"{sdk} {kind}: got {bodies}; {describe[kind]}"
        if kind == "delay":
            due = {f"grpc delay {e['index']}": e["due_ms"] for e in sent[kind]}
            for e in received[kind]:
                assert e["at_ms"] >= due[e["body"]] - PRECISION_MS, f"{sdk}: delay message came early: {e}"
        if kind == "fifo":
            for group in ("group-0", "group-1"):
                in_group = [e["body"] for e in received[kind] if e["group"] == group]
                assert len(in_group) == count // 2, f"{sdk}: group {group} got {in_group}"
                ordered = sorted(in_group, key=lambda b: int(b.rsplit(" ", 1)[1]))
                assert in_group == ordered, f"{sdk}: group {group} out of order: {in_group}"
