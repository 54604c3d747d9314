"""``rmq top`` in a real terminal (tmux): figures on screen, the sort keys, ``q`` restoring the terminal."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from admin import BlockingAdmin
from rocketmq_wire.bodies import SubscriptionGroupConfig
from rocketmq_wire.message import Message
from spark_connector.testing import LocalCluster

REPO = Path(__file__).resolve().parents[2]
RMQ = Path(sys.executable).with_name("rmq")
TOPIC = "TopTopic"
GROUP = "TopLaggingGroup"

log = logging.getLogger("tests.cli_top")


def _tmux_or_skip() -> str:
    installer = REPO / "scripts" / "install-tmux.sh"
    done = subprocess.run(["bash", str(installer)], capture_output=True, text=True, check=False)
    tmux = shutil.which("tmux")
    if tmux is None:
        reason = (
            f"tmux is not installed and scripts/install-tmux.sh could not install it: {done.stderr.strip()}"
        )
        if os.environ.get("ROCKETMQ_REQUIRE_PEERS"):
            pytest.fail(reason)
        pytest.skip(reason)
    return tmux


@pytest.fixture
def tmux() -> Iterator[list[str]]:
    """A tmux server of the test's own (its own socket), killed afterwards."""
    command = [_tmux_or_skip(), "-L", f"rmq-top-{uuid.uuid4().hex[:8]}"]
    yield command
    subprocess.run([*command, "kill-server"], capture_output=True, check=False)


def _screen(tmux: list[str]) -> str:
    return subprocess.run([*tmux, "capture-pane", "-p", "-t", "top"], capture_output=True, text=True).stdout


def _wait_for(tmux: list[str], predicate: Callable[[str], bool], what: str, timeout: float = 15.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = _screen(tmux)
        if predicate(screen):
            return screen
        time.sleep(0.2)
    raise AssertionError(f"{what} never showed; the screen was:\n{screen}")


def test_top_shows_the_lag_switches_sort_and_quits_restoring_the_terminal(
    tmp_path: Path, tmux: list[str]
) -> None:
    with LocalCluster(tmp_path / "store") as local:
        local.create_topic(TOPIC, queues=2)
        local.send([Message(TOPIC, f"m{i}".encode()) for i in range(7)])
        with BlockingAdmin(local.namesrv_address) as admin:
            admin.update_subscription_group(
                SubscriptionGroupConfig(group_name=GROUP), cluster="DefaultCluster"
            )
            admin.update_consumer_offset(GROUP, TOPIC, 0, 0)
            admin.update_consumer_offset(GROUP, TOPIC, 1, 0)
        rc_file = tmp_path / "rc"
        shell = f"'{RMQ}' top -n {local.namesrv_address} --interval 1; echo $? > '{rc_file}'; sleep 60"
        subprocess.run([*tmux, "new-session", "-d", "-s", "top", "-x", "160", "-y", "50", shell], check=True)
        screen = _wait_for(tmux, lambda s: GROUP in s and "Brokers" in s, "the groups table")
        # docs/observability.md shows this screen: run with --log-cli-level=INFO to see it again.
        log.info("rmq top's screen:\n%s", screen.rstrip())
        [line] = [row for row in screen.splitlines() if GROUP in row]
        assert TOPIC in line and " 7 " in f" {line} ", line  # 7 sent, none consumed: lag 7
        assert "sort: lag" in screen

        subprocess.run([*tmux, "send-keys", "-t", "top", "n"], check=True)
        _wait_for(tmux, lambda s: "sort: name" in s, "the name order")

        subprocess.run([*tmux, "send-keys", "-t", "top", "q"], check=True)
        deadline = time.monotonic() + 15
        while not rc_file.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rc_file.read_text().strip() == "0"
        restored = _screen(tmux)
        assert "Brokers" not in restored and "rmq top: bye" in restored, restored
