"""The pytest plugin (``rocketmq_testing.plugin``) is loaded by every pytest session of every project that
installs the toolkit, through its ``pytest11`` entry point, whether a test uses RocketMQ or not: loading it
must import nothing of the toolkit's servers or clients, nor testcontainers and Docker's SDK."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

#: The top-level packages the plugin may load only when a fixture is asked for.
DEFERRED = {
    "broker",
    "nameserver",
    "producer",
    "consumer",
    "admin",
    "client",
    "rocketmq_wire",
    "testcontainers",
    "docker",
}

SCRIPT = """
import json, sys, time
import pytest
before = set(sys.modules)
started = time.perf_counter()
import rocketmq_testing.plugin
took = time.perf_counter() - started
print(json.dumps({"added": sorted(set(sys.modules) - before), "seconds": took}))
"""


def test_loading_the_plugin_imports_only_the_plugin() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["added"] == ["rocketmq_testing", "rocketmq_testing.plugin"]
    assert not DEFERRED & {name.split(".")[0] for name in found["added"]}


def test_the_entry_point_names_the_plugin() -> None:
    points = metadata.entry_points(group="pytest11")
    [ours] = [point for point in points if point.value == "rocketmq_testing.plugin"]
    assert ours.name == "rocketmq"
