"""``rmq quickstart`` as a real process: the whole round trip, and ``--serve`` until SIGTERM.

Each test kills its process by pid if it outlives its deadline, so a hang fails the test instead of the run.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from pathlib import Path

from admin import Admin

DEADLINE_S = 60


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    env.pop("NAMESRV_ADDR", None)
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "cli.main",
        "quickstart",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
    )


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        os.kill(proc.pid, signal.SIGKILL)
        await proc.wait()


async def _line_matching(proc: asyncio.subprocess.Process, pattern: str, seen: list[str]) -> re.Match[str]:
    assert proc.stdout is not None
    while True:
        raw = await proc.stdout.readline()
        if not raw:
            raise AssertionError(f"quickstart ended before printing {pattern!r}: {''.join(seen)}")
        seen.append(raw.decode())
        match = re.search(pattern, seen[-1])
        if match:
            return match


async def test_quickstart_round_trip_then_clean_stop() -> None:
    proc = await _spawn("--messages", "3")
    try:
        output, _ = await asyncio.wait_for(proc.communicate(), DEADLINE_S)
    finally:
        await _stop(proc)
    text = output.decode()
    assert proc.returncode == 0, text
    assert "sent 3 messages" in text
    assert "read back 3 of 3 messages" in text
    assert all(f"quickstart-{n} " in text for n in (1, 2, 3))  # each message's key in the read-back table
    assert "Progress of QuickstartConsumer" in text and "total lag 0" in text  # the read-back committed
    assert "Route of QuickstartTopic" in text and "DefaultCluster" in text
    assert text.rstrip().endswith("NameServer and Broker stopped cleanly")
    assert "Traceback" not in text
    store = re.search(r"store (\S+)", text)
    assert store is not None and not Path(store.group(1)).exists()  # the temporary store went with it


async def test_quickstart_serves_until_sigterm(tmp_path: Path) -> None:
    store = tmp_path / "store"
    proc = await _spawn("--serve", "--store", str(store), "--topic", "Served", "--messages", "2")
    seen: list[str] = []
    try:
        match = await asyncio.wait_for(
            _line_matching(proc, r"export NAMESRV_ADDR=(127\.0\.0\.1:\d+)", seen), DEADLINE_S
        )
        async with Admin(match.group(1)) as admin:
            status = await admin.topic_status("Served")
        assert status.total_messages == 2
        os.kill(proc.pid, signal.SIGTERM)
        await asyncio.wait_for(_line_matching(proc, r"stopped cleanly", seen), DEADLINE_S)
        assert await asyncio.wait_for(proc.wait(), DEADLINE_S) == 0
    finally:
        await _stop(proc)
    assert (store / "commitlog").is_dir()
    assert "Traceback" not in "".join(seen)
