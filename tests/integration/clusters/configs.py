"""Broker and NameServer settings every provider writes, under Apache's names (``broker.conf`` format).

One set of settings for all brokers keeps the scenarios provider-independent: the project's Broker reads the
same names (:meth:`broker.BrokerConfig.from_properties`). Apache ignores names it does not know, so a key only
one side understands (``listenHost`` for the project's broker, ``bindAddress`` for Apache 5.x) is harmless to
the other.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME

#: A half message older than this (ms) may be checked back; Apache's default (6 s) would make the check-back
#: scenario slow.
TRANSACTION_TIMEOUT_MS = 1000
#: How often the broker looks for half messages to check (Apache's default: 60 s).
TRANSACTION_CHECK_INTERVAL_MS = 1000
#: How long a send may wait in a broker's queue before it is refused SYSTEM_BUSY (Apache's default: 200 ms).
#: Test machines are loaded 2-core boxes where a JVM pause or a busy event loop can pass 200 ms, and the
#: Java 4.9 and C++ clients do not resend a busy answer; test_flow_control.py provokes flow control on
#: purpose instead.
WAIT_TIME_MILLS_IN_SEND_QUEUE = 1000
#: Apache 5.5.0's TransactionalOpBatchService spins a core for the rest of the broker's life once a decided
#: transaction's op record has been written and its queue has sat idle for ``transactionOpBatchInterval``
#: (batchSendOpMessage takes the idle queue's old write time as the next wake-up, which is then always past,
#: so it answers "now" again; 5.3.3's thread stayed idle, 6 ms of CPU, in the same check). In one suite run
#: the shared 5.5.0 broker burned 308 s of CPU in 441 s that way, on a 2-core machine. Writing each
#: verdict's op record at once (a limit of 1 byte wakes the service on every verdict) and never waking on a
#: timer sidesteps it, on any 5.x release; the records are written sooner than with the defaults, so half
#: messages are checked back no more often.
TRANSACTION_OP_SETTINGS = {"transactionOpMsgMaxSize": "1", "transactionOpBatchInterval": str(2**31 - 1)}


def broker_properties(
    *,
    listen_port: int,
    namesrv_addr: str,
    store_dir: str | None,
    broker_ip: str = "127.0.0.1",
    broker_name: str = BROKER_NAME,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The settings of the one broker of a test cluster; ``store_dir`` None keeps the broker's default."""
    settings = {
        "brokerClusterName": CLUSTER_NAME,
        "brokerName": broker_name,
        "brokerId": "0",
        "brokerRole": "ASYNC_MASTER",
        "flushDiskType": "ASYNC_FLUSH",
        "brokerIP1": broker_ip,
        "listenPort": str(listen_port),
        "namesrvAddr": namesrv_addr,
        "autoCreateTopicEnable": "true",
        "autoCreateSubscriptionGroup": "true",
        "defaultTopicQueueNums": "4",
        "transactionTimeOut": str(TRANSACTION_TIMEOUT_MS),
        "transactionCheckInterval": str(TRANSACTION_CHECK_INTERVAL_MS),
        "waitTimeMillsInSendQueue": str(WAIT_TIME_MILLS_IN_SEND_QUEUE),
        **TRANSACTION_OP_SETTINGS,
        # Test machines often have fuller disks than the 75 % at which a broker stops accepting writes.
        "diskMaxUsedSpaceRatio": "95",
        "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
        "deleteWhen": "04",
        "fileReservedTime": "48",
    }
    if store_dir is not None:
        settings["storePathRootDir"] = store_dir
        # Apache 4.x derives the commit log's folder from user.home, not from storePathRootDir.
        settings["storePathCommitLog"] = f"{store_dir}/commitlog"
    settings.update(extra or {})
    return settings


def render(settings: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def write_properties(path: Path, settings: Mapping[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(settings), "utf-8")
    return path
