"""Shared by the HA tests: master and slave configs on loopback, waiting for replication, file bytes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from broker import Broker, BrokerConfig
from broker.ha import ReplicationMaster, SlaveLink
from broker.testing import config_for_tests

LIMIT_S = 10
#: Small commit-log files, so a few dozen KiB of messages roll over several of them.
SEGMENT = 64 * 1024


def master_config(store: Path, **overrides: Any) -> BrokerConfig:
    settings: dict[str, Any] = {"ha_listen_port": 0, "mapped_file_size_commit_log": SEGMENT}
    settings.update(overrides)
    return config_for_tests(store, **settings)


def slave_config(store: Path, master: Broker | None = None, **overrides: Any) -> BrokerConfig:
    """A slave of ``master`` through ``haMasterAddress``; without one it must learn it from a NameServer."""
    settings: dict[str, Any] = {
        "broker_role": "SLAVE",
        "broker_id": 1,
        "ha_listen_port": 0,
        "mapped_file_size_commit_log": SEGMENT,
    }
    if master is not None:
        settings["ha_master_address"] = master.config.ha_server_addr
    settings.update(overrides)
    return config_for_tests(store, **settings)


async def wait_until(condition: Callable[[], bool], what: str, limit_s: float = LIMIT_S) -> None:
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.02)


def ha_master(broker: Broker) -> ReplicationMaster:
    master = broker.ha.master
    assert master is not None, "the broker does not listen for slaves"
    return master


async def slave_link(master: Broker) -> SlaveLink:
    """The master's link with its slave, once the slave said where to start."""
    service = ha_master(master)
    await wait_until(
        lambda: any(link.request_offset >= 0 for link in service.links), "a slave reported its offset"
    )
    return next(link for link in service.links if link.request_offset >= 0)


def caught_up(master: Broker, slave: Broker) -> bool:
    end = master.store.max_physical_offset
    return slave.store.max_physical_offset == end and ha_master(master).push_max_offset == end


async def wait_caught_up(master: Broker, slave: Broker) -> None:
    await wait_until(lambda: caught_up(master, slave), "the slave holds the master's whole commit log")


def commit_log_files(broker: Broker) -> dict[str, bytes]:
    directory = Path(broker.config.store_path_root_dir) / "commitlog"
    return {path.name: path.read_bytes() for path in sorted(directory.iterdir())}
