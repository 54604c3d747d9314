"""A script written for the official Python client (PyPI ``rocketmq``) runs unchanged but for its import.

The script below is the shape of the official client's README example; the test swaps only the import line
for ``producer.compat`` and runs it as a separate process against the cluster, then reads what it sent.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.integration.clusters.fixture import on_representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic

#: The official client's script on the servers' kinds and lines; the other set-ups differ only in
#: NameServer pairings, which the compatibility matrix meets.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("scenario_budget"),
    on_representative_setups(),
]

OFFICIAL_SCRIPT = textwrap.dedent(
    """
    import sys
    from rocketmq.client import Producer, Message

    topic, namesrv = sys.argv[1], sys.argv[2]
    producer = Producer('PID-compat-script')
    producer.set_name_server_address(namesrv)
    producer.start()

    msg = Message(topic)
    msg.set_keys('XXX')
    msg.set_tags('XXX')
    msg.set_property('property', 'test')
    msg.set_body('message body')
    ret = producer.send_sync(msg)
    print(ret.status, ret.msg_id, ret.offset)

    ordered = Message(topic)
    ordered.set_body('ordered body')
    ret = producer.send_orderly_with_sharding_key(ordered, 'order-1')
    print(ret.status, ret.msg_id, ret.offset)

    oneway = Message(topic)
    oneway.set_body('oneway body')
    producer.send_oneway(oneway)
    producer.shutdown()
    """
)


async def test_official_client_script_runs_with_only_its_import_changed(
    cluster: Cluster, tmp_path: Path
) -> None:
    script = OFFICIAL_SCRIPT.replace(
        "from rocketmq.client import Producer, Message", "from producer.compat import Producer, Message"
    )
    assert script.count("\n") == OFFICIAL_SCRIPT.count("\n"), "only the import line differs"
    path = tmp_path / "official_example.py"
    path.write_text(script, encoding="utf-8")
    topic = unique_name("CompatScript")
    proc = subprocess.Popen(
        [sys.executable, str(path), topic, cluster.namesrv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        out, err = proc.communicate(timeout=25)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    lines = out.split("\n")
    # SendStatus is an IntEnum there as here, so it prints as its number: OK is 0.
    assert [line.split()[0] for line in lines if line] == ["0", "0"], out
    stored = {m.body: m for m in await read_topic(cluster.namesrv, topic, 3)}
    assert set(stored) == {b"message body", b"ordered body", b"oneway body"}
    first = stored[b"message body"]
    assert (first.tags, first.keys, first.properties.get("property")) == ("XXX", ["XXX"], "test")
