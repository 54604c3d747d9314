"""GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG: ``mqadmin brokerStatus``,
``getBrokerConfig`` and ``updateBrokerConfig``.

The runtime table has the keys a 4.9 broker reports, so tools that read particular keys find them. This
broker has no thread pools: the send-queue figures are those of the send flow control (sends waiting for
the event loop, see ``broker/flow_control.py``); the other pools' figures are fixed.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable
from pathlib import Path

from broker.config import BROKER_VERSION, BrokerConfig
from broker.flow_control import SendFlowControl
from broker.long_polling import PullRequestHoldService
from broker.registration import ChangeAnnouncer
from broker.stats import BrokerStats
from broker.store import MessageStore
from rocketmq_wire import CodecError, RemotingCommand, ResponseCode
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.properties_text import PropertiesBody
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.admin import GetBrokerConfigResponseHeader
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.broker_admin")

_GIB = 1024**3


def _disk(path: Path) -> tuple[float, str]:
    """Used fraction of the disk holding ``path`` and Apache's capacity line for it."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    try:
        usage = shutil.disk_usage(probe)
    except OSError:
        return 0.0, "Total : 0.0 GiB, Free : 0.0 GiB."
    ratio = usage.used / usage.total if usage.total else 0.0
    return ratio, f"Total : {usage.total / _GIB:.1f} GiB, Free : {usage.free / _GIB:.1f} GiB."


class GetBrokerRuntimeInfoProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        stats: BrokerStats,
        store: MessageStore,
        send_flow_control: SendFlowControl,
        pull_holder: PullRequestHoldService,
    ) -> None:
        self._config = config
        self._stats = stats
        self._store = store
        self._send_flow_control = send_flow_control
        self._pull_holder = pull_holder

    def table(self) -> dict[str, str]:
        stats = self._stats
        store = self._store
        root = Path(self._config.store_path_root_dir)
        ratio, capacity = _disk(root / "commitlog")
        ratio_text = f"{ratio:.2f}"
        put_tps = stats.per_second(stats.put_messages_total)
        found_tps = stats.per_second(stats.get_found_total)
        miss_tps = stats.per_second(stats.get_miss_total)
        transferred_tps = stats.per_second(stats.get_messages_total)
        total_tps = found_tps + miss_tps
        average = stats.put_size_total / stats.put_times_total if stats.put_times_total else 0.0
        min_offset = store.min_physical_offset if store.max_physical_offset > 0 else -1
        sends = self._send_flow_control
        table = {
            "brokerVersionDesc": MQVersion.name_of(BROKER_VERSION),
            "brokerVersion": str(BROKER_VERSION),
            "bootTimestamp": str(stats.boot_timestamp),
            "runtime": stats.runtime(),
            "putMessageTimesTotal": str(stats.put_times_total),
            "putMessageSizeTotal": str(stats.put_size_total),
            "putMessageAverageSize": repr(float(average)),
            "putMessageFailedTimes": str(stats.put_failed_times),
            "putMessageDistributeTime": "null",
            "putMessageEntireTimeMax": "0",
            "getMessageEntireTimeMax": "0",
            "putLatency99": "0.00",
            "putLatency999": "0.00",
            "putTps": f"{put_tps:.1f} {put_tps:.1f} {put_tps:.1f}",
            "getFoundTps": f"{found_tps:.1f} {found_tps:.1f} {found_tps:.1f}",
            "getMissTps": f"{miss_tps:.1f} {miss_tps:.1f} {miss_tps:.1f}",
            "getTransferedTps": f"{transferred_tps:.1f} {transferred_tps:.1f} {transferred_tps:.1f}",
            "getTotalTps": f"{total_tps:.1f} {total_tps:.1f} {total_tps:.1f}",
            "commitLogMinOffset": str(min_offset),
            "commitLogMaxOffset": str(store.max_physical_offset),
            "earliestMessageTimeStamp": str(store.earliest_store_time()),
            "commitLogDirCapacity": capacity,
            "commitLogDiskRatio": ratio_text,
            f"commitLogDiskRatio_{root / 'commitlog'}": ratio_text,
            "consumeQueueDiskRatio": ratio_text,
            "dispatchBehindBytes": str(store.dispatch_behind_bytes),
            "dispatchMaxBuffer": "0",
            "pageCacheLockTimeMills": str(store.lock_time_ms()),
            "remainHowManyDataToFlush": "0 B",
            "remainTransientStoreBufferNumbs": "2147483647",
            "startAcceptSendRequestTimeStamp": "0",
            "sendThreadPoolQueueSize": str(sends.queued),
            "sendThreadPoolQueueCapacity": str(self._config.send_thread_pool_queue_capacity),
            "sendThreadPoolQueueHeadWaitTimeMills": str(sends.head_wait_ms()),
            "pullThreadPoolQueueSize": str(self._pull_holder.held_count),
            "pullThreadPoolQueueCapacity": "100000",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": "20000",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "EndTransactionQueueSize": "0",
            "EndTransactionThreadPoolQueueCapacity": "100000",
        }
        table.update({name: str(value) for name, value in stats.snapshot().items()})
        return table

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        return request.make_response(ResponseCode.SUCCESS, body=KVTable(table=self.table()).to_json())


class GetBrokerConfigProcessor:
    def __init__(self, *, config: BrokerConfig, config_version: DataVersion) -> None:
        self._config = config
        self._config_version = config_version

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = GetBrokerConfigResponseHeader(version=self._config_version.to_json().decode())
        body = self._config.to_properties().encode("utf-8")
        return request.make_response(ResponseCode.SUCCESS, header=header, body=body)


class UpdateBrokerConfigProcessor:
    """Applies new settings; ``on_config_changed`` lets the parts that copied a setting follow it."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        announcer: ChangeAnnouncer,
        on_config_changed: Callable[[list[str]], None],
    ) -> None:
        self._config = config
        self._announcer = announcer
        self._on_config_changed = on_config_changed

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if request.body:
            try:
                properties = dict(PropertiesBody.from_text(request.body).properties)
            except CodecError as exc:
                log.error("updateBrokerConfig from %s: %s", conn.remote_address, exc)
                return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
            if self._config.blacklisted(properties):
                return request.make_response(
                    ResponseCode.NO_PERMISSION, "Can not update config in black list."
                )
            log.info("updateBrokerConfig from %s: %s", conn.remote_address, properties)
            seen = self._announcer.changes
            changed = self._config.update(properties, remote=True)
            if changed:
                self._on_config_changed(changed)
            await self._announcer.announced_since(seen)  # a new brokerPermission is routed once answered
        return request.make_response(ResponseCode.SUCCESS)
