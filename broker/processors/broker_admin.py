"""GET_BROKER_RUNTIME_INFO, GET_BROKER_CONFIG, UPDATE_BROKER_CONFIG: ``mqadmin brokerStatus``,
``getBrokerConfig`` and ``updateBrokerConfig``.

The runtime table has the keys a 4.9 broker reports, so tools that read particular keys find them. This
broker has no thread pools: the send-queue figures are those of the send flow control (sends waiting for
the event loop, see ``broker/flow_control.py``); the other pools' figures are fixed.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from rocketmq_wire import DEFAULT_VERSION, CodecError, RemotingCommand, ResponseCode
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.properties_text import PropertiesBody
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.admin import GetBrokerConfigResponseHeader
from rocketmq_wire.transport import Connection

if TYPE_CHECKING:
    from broker.broker import Broker

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
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    def table(self) -> dict[str, str]:
        broker = self._broker
        stats = broker.stats
        store = broker.store
        root = Path(broker.config.store_path_root_dir)
        ratio, capacity = _disk(root / "commitlog")
        ratio_text = f"{ratio:.2f}"
        put_tps = stats.per_second(stats.put_messages_total)
        found_tps = stats.per_second(stats.get_found_total)
        miss_tps = stats.per_second(stats.get_miss_total)
        transferred_tps = stats.per_second(stats.get_messages_total)
        total_tps = found_tps + miss_tps
        average = stats.put_size_total / stats.put_times_total if stats.put_times_total else 0.0
        min_offset = store.min_physical_offset if store.max_physical_offset > 0 else -1
        sends = broker.send_flow_control
        table = {
            "brokerVersionDesc": MQVersion.name_of(DEFAULT_VERSION),
            "brokerVersion": str(DEFAULT_VERSION),
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
            "sendThreadPoolQueueCapacity": str(broker.config.send_thread_pool_queue_capacity),
            "sendThreadPoolQueueHeadWaitTimeMills": str(sends.head_wait_ms()),
            "pullThreadPoolQueueSize": str(broker.pull_holder.held_count),
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
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        broker = self._broker
        header = GetBrokerConfigResponseHeader(version=broker.config_version.to_json().decode())
        body = broker.config.to_properties().encode("utf-8")
        return request.make_response(ResponseCode.SUCCESS, header=header, body=body)


class UpdateBrokerConfigProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        broker = self._broker
        if request.body:
            try:
                properties = dict(PropertiesBody.from_text(request.body).properties)
            except CodecError as exc:
                log.error("updateBrokerConfig from %s: %s", conn.remote_address, exc)
                return request.make_response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
            if broker.config.blacklisted(properties):
                return request.make_response(
                    ResponseCode.NO_PERMISSION, "Can not update config in black list."
                )
            log.info("updateBrokerConfig from %s: %s", conn.remote_address, properties)
            seen = broker.announcer.changes
            changed = broker.config.update(properties)
            if changed:
                broker.config_changed(changed)
            await broker.announcer.announced_since(seen)  # a new brokerPermission is routed once answered
        return request.make_response(ResponseCode.SUCCESS)
