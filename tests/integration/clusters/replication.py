"""A master and its slave of one broker name, each the project's broker or Apache's, on one NameServer.

Used by the replication scenarios (``test_ha.py``) and ``benchmarks/ha.py``. Every broker gets the suite's
``broker.conf`` plus its role: a slave is ``brokerId=1``/``SLAVE`` with ``slaveReadEnable`` (Apache 5.x
slaves serve pulls only with it; 4.9's and the project's serve them anyway); a master is ``brokerId=0`` with
the role asked for and ``inSyncReplicas=2`` (a 5.x SYNC_MASTER waits for a slave only when it needs two
copies; 4.9's and the project's always wait).
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from pathlib import Path

from admin import Admin
from producer import Message, Producer, ProducerError, SendStatus
from rocketmq_wire.bodies.cluster import ClusterInfo
from tests.integration.apache import servers
from tests.integration.apache.releases import ApacheRelease
from tests.integration.clusters import python_servers
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.probe import eventually
from tests.integration.clusters.processes import ManagedProcess
from tests.integration.clusters.providers import ProviderSpec, Started, java_unavailable

HA_BROKER = "it-ha-broker"
REGISTER_S = 60.0
SYNC_READY_S = 30.0


@dataclasses.dataclass
class Pair:
    """What :func:`pair_spec` started: the NameServer, the master's process, each side's commit log."""

    master_kind: str  # "python" or an Apache version
    slave_kind: str
    role: str
    namesrv: str = ""
    master: ManagedProcess | None = None
    commit_logs: dict[str, Path] = dataclasses.field(default_factory=dict)


#: Small commit-log files, so that a few tens of MB of replicated load cross several file ends (the master
#: streams up to a file's end, then the next file's start; both logs must roll at the same record).
HA_COMMIT_LOG_FILE_SIZE = 8 * 1024 * 1024
#: A master's ``transactionTimeOut``: Apache's default, not the suite's 1 s (which is there for the check-back
#: scenarios; no pair checks back). An Apache 5.x master writes the op records of decided transactions in
#: batches every 3 s (``transactionOpBatchInterval``): with a 1 s timeout its check service found each of the
#: load's 500 decided half messages without an op, put it back and checked it again, 15 times, until it moved
#: it to TRANS_CHECK_MAX_TIME_TOPIC -- 8,000 records more over 15 s, which every comparison waited out.
HA_TRANSACTION_TIMEOUT_MS = 6000


def start_ha_broker(
    launch: Launch, kind: str, release: ApacheRelease, namesrv: str, *, slave: bool, role: str
) -> tuple[ManagedProcess, Path]:
    """One side of the pair; returns its process and its commit-log folder."""
    name = "slave" if slave else "master"
    if slave:
        extra = {"brokerId": "1", "brokerRole": "SLAVE", "slaveReadEnable": "true"}
    else:
        extra = {"brokerId": "0", "brokerRole": role, "inSyncReplicas": "2", "totalReplicas": "2"}
        extra["transactionTimeOut"] = str(HA_TRANSACTION_TIMEOUT_MS)
    extra["mappedFileSizeCommitLog"] = str(HA_COMMIT_LOG_FILE_SIZE)
    if kind == "python":
        process = python_servers.start_broker(
            launch, namesrv, broker_name=HA_BROKER, name=f"python-{name}", extra=extra
        )
        return process, launch.work_dir / f"python-{name}-store" / "commitlog"
    process = servers.start_broker(
        launch, release, namesrv, broker_name=HA_BROKER, name=f"apache-{name}", extra=extra
    )
    return process, launch.work_dir / f"apache-{name}" / "store" / "commitlog"


def pair_spec(release: ApacheRelease, pair: Pair) -> ProviderSpec:
    """A provider starting ``release``'s NameServer, then ``pair``'s master and slave; fills in ``pair``."""

    def start(launch: Launch) -> Started:
        namesrv = servers.start_namesrv(launch, release)
        pair.namesrv = namesrv.addr
        pair.master, pair.commit_logs["master"] = start_ha_broker(
            launch, pair.master_kind, release, namesrv.addr, slave=False, role=pair.role
        )
        _, pair.commit_logs["slave"] = start_ha_broker(
            launch, pair.slave_kind, release, namesrv.addr, slave=True, role=pair.role
        )
        return Started(namesrv, ((HA_BROKER, pair.master_kind),))

    label = f"{pair.master_kind}-master-{pair.slave_kind}-slave-{pair.role.lower()}"
    return ProviderSpec(f"ha-{label}", "binaries", start, 120.0, lambda: java_unavailable(release))


def broker_ids(info: ClusterInfo) -> set[int]:
    data = info.broker_addr_table.get(HA_BROKER)
    return set(data.broker_addrs) if data is not None else set()


async def wait_for_slave(namesrv: str) -> dict[int, str]:
    """Until the NameServer lists the master (0) and the slave (1); returns their addresses."""
    async with Admin(namesrv) as admin:
        info = await eventually(
            admin.cluster_info,
            lambda info: broker_ids(info) == {0, 1},
            timeout_s=REGISTER_S,
            what=f"{HA_BROKER}'s master and slave registered",
        )
    return dict(info.broker_addr_table[HA_BROKER].broker_addrs)


async def commit_log_ends(namesrv: str, addrs: dict[int, str]) -> dict[int, int]:
    """Each broker's commit-log end (``commitLogMaxOffset`` of GET_BROKER_RUNTIME_INFO), by broker id."""
    async with Admin(namesrv) as admin:
        return {
            broker_id: int((await admin.broker_runtime_stats(addr))["commitLogMaxOffset"])
            for broker_id, addr in addrs.items()
        }


async def wait_in_sync(producer: Producer, topic: str, acked: set[bytes]) -> None:
    """Until the master acknowledges SEND_OK; the warm-up messages acknowledged go into ``acked``.

    Before its slave has reported an offset (an Apache slave does so seconds after it connects) a
    SYNC_MASTER answers SLAVE_NOT_AVAILABLE or FLUSH_SLAVE_TIMEOUT: stored, not replicated yet.
    """
    deadline = time.monotonic() + SYNC_READY_S
    last: object = None
    for i in range(10**6):
        body = f"warm-up {i:05d}".encode()
        try:
            result = await producer.send(Message(topic, body), timeout_ms=10_000)
        except ProducerError as exc:
            last = exc
        else:
            if result.status is SendStatus.SEND_OK:
                acked.add(body)
                return
            last = result.status
        if time.monotonic() >= deadline:
            raise AssertionError(f"no SEND_OK from the master in {SYNC_READY_S} s: {last}")
        await asyncio.sleep(0.2)
