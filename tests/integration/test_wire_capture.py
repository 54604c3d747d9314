"""Golden frames at test time: what Apache's Java client and Apache's servers put on the wire, read off the
loopback interface while the test runs (``clusters/wiretap.py``), and the project's codec held to it.

This is how the suite gets ground truth for requests that ``../shared/golden`` does not hold (it was
captured from 4.9.8 and 5.3.3 only): here from the oldest and the newest line the suite runs, with both
header serializations. Every frame decodes, and every frame a Java process wrote (client requests, server
answers, the broker's registration) encodes again to exactly the bytes captured.
"""

from __future__ import annotations

import asyncio
import collections

import pytest

from rocketmq_wire import RequestCode
from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.wiretap import WireTap, unavailable_reason
from tests.integration.cpp_peer.runner import message
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration

#: Apache's own servers of the oldest and the newest release selected (Java on both ends of every frame).
_JAVA_SETUPS = [f"binaries-{r.version}" for r in (releases()[0], releases()[-1])]
CAPTURED = [spec for spec in PROVIDERS if spec.id in _JAVA_SETUPS]


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


@pytest.mark.parametrize("serialize", ["JSON", "ROCKETMQ"])
@pytest.mark.parametrize("cluster", CAPTURED, ids=[spec.id for spec in CAPTURED], indirect=True)
async def test_what_javas_client_and_servers_send_reencodes_byte_for_byte(
    cluster: Cluster, java_client: JavaClientFactory, serialize: str
) -> None:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    release = next(r for r in releases() if cluster.version == r.version)
    client = java_client(release, serialize)
    ports = {_port(cluster.namesrv): "namesrv"} | {_port(b.addr): b.name for b in cluster.brokers}
    topic = unique_name("Capture")
    specs = [
        message(f"captured {i}: ü", tags="TagA", keys=[f"k{i}", "shared"], properties={"p": str(i)})
        for i in range(3)
    ]
    tap = WireTap(ports).start()
    try:
        result = await asyncio.to_thread(client.send_sync, cluster.namesrv, topic, specs, timeout=60.0)
    finally:
        frames = await asyncio.to_thread(tap.stop)
    result.check()

    commands = [(frame, frame.command()) for frame in frames]
    requests = collections.Counter(cmd.code for frame, cmd in commands if frame.to_server)
    assert requests[RequestCode.SEND_MESSAGE_V2] == len(specs), requests
    assert requests[RequestCode.GET_ROUTEINFO_BY_TOPIC] >= 1, requests
    answers = [cmd for frame, cmd in commands if not frame.to_server and cmd.is_response]
    assert len(answers) >= len(specs) + 1
    # The client's sends, and its route requests for the topic: a 5.x broker asks the NameServer for
    # routes of its own now and then (always in JSON, whatever the client uses), which a capture can catch.
    ours = [
        cmd
        for frame, cmd in commands
        if frame.to_server
        and (
            cmd.code == RequestCode.SEND_MESSAGE_V2
            or (cmd.code == RequestCode.GET_ROUTEINFO_BY_TOPIC and topic in (cmd.ext_fields or {}).values())
        )
    ]
    assert len(ours) >= len(specs) + 1, ours
    assert {cmd.serialize_type.name for cmd in ours} == {serialize}

    java = [(frame, cmd) for frame, cmd in commands if cmd.language.name == "JAVA"]
    assert len(java) == len(commands), "every frame here comes from a Java process"
    differing = [
        f"{'request' if frame.to_server else 'answer'} code {cmd.code} to {frame.server}"
        for frame, cmd in java
        if cmd.encode() != frame.data
    ]
    assert not differing, (
        f"{len(differing)} of {len(java)} captured frames encode differently: {differing[:10]}"
    )
