"""Requests of the mqadmin commands rmq gained, where the captures hold mqadmin's own frame: byte for
byte the same (language and opaque aside), in both header serializations.

mqadmin ``updateKvConfig`` on ``ORDER_TOPIC_CONFIG`` in the capture is what ``updateOrderConf`` sends
(same code, same namespace): :meth:`Admin.update_order_conf` must produce that frame. The captures hold no
mqadmin frame of the group, write-perm or NameServer-config requests, so those are covered against the
project's servers (``test_admin_groups.py``, ``test_cli_mqadmin_cmds.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from admin import Admin
from rocketmq_wire import LanguageCode, RemotingCommand, RequestCode
from rocketmq_wire.acl import ACCESS_KEY
from rocketmq_wire.codes import SerializeType
from tests.golden import load_golden
from tests.unit.test_admin_golden import ACCESS, SECRET, StandIn, _normalised


def _mqadmin_frames(capture: str, code: int) -> set[bytes]:
    found: set[bytes] = set()
    for golden in load_golden():
        if golden.capture != capture or golden.kind != "request" or golden.code != code:
            continue
        cmd = RemotingCommand.decode(golden.frame)
        if cmd.language == LanguageCode.JAVA and ACCESS_KEY in cmd.fields():
            found.add(_normalised(cmd))
    return found


@pytest.fixture
async def stand_in() -> AsyncIterator[StandIn]:
    server = StandIn()
    await server.server.start()
    try:
        yield server
    finally:
        await server.server.close()


@pytest.mark.parametrize(
    ("capture", "serialize_type"),
    [("java498-json", SerializeType.JSON), ("java498-rocketmq", SerializeType.ROCKETMQ)],
)
async def test_update_order_conf_is_mqadmins_kv_put(
    stand_in: StandIn, capture: str, serialize_type: SerializeType
) -> None:
    captured = _mqadmin_frames(capture, RequestCode.PUT_KV_CONFIG)
    if not captured:
        pytest.skip(f"no mqadmin PUT_KV_CONFIG frame in {capture}")
    async with Admin(
        stand_in.server.address, access_key=ACCESS, secret_key=SECRET, serialize_type=serialize_type
    ) as admin:
        assert await admin.update_order_conf("GoldenOrdered", "broker-a:4") == [stand_in.server.address]
    [request] = stand_in.requests
    assert _normalised(request) in captured
