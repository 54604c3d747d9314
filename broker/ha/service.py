"""A broker's part in classic master/slave replication, chosen by ``brokerRole``.

* A master (ASYNC_MASTER, SYNC_MASTER) listens on the HA port for slaves (:class:`ReplicationMaster`); a
  SYNC_MASTER's store waits on it before acknowledging sends. The port is ``haListenPort``, or
  ``listenPort + 1`` when that is 0 or less, as Apache's ``BrokerStartup`` settles it. A port that cannot be
  bound is logged and the broker runs on without slaves (a SYNC_MASTER then answers SLAVE_NOT_AVAILABLE):
  many single brokers on one host share the default port, and refusing to start over a port nobody uses
  would turn a cosmetic clash into an outage.
* A slave follows its master's commit log (:class:`ReplicationSlave`) and copies its metadata
  (:class:`SlaveSynchronizer`). It learns the master's HA and remoting addresses from the NameServer's
  answer to its registration, unless ``haMasterAddress`` names the HA address.
"""

from __future__ import annotations

import logging

from broker.clock import Clock
from broker.config import BrokerConfig, BrokerRole
from broker.ha.master import ReplicationMaster
from broker.ha.slave import ReplicationSlave
from broker.ha.sync import FIRST_SYNC_DELAY_MS, SYNC_PERIOD_MS, SlaveSynchronizer
from broker.message_service import MessageService
from broker.periodic import PeriodicTask
from broker.registration import RegistrationResult
from broker.store import MessageStore
from rocketmq_wire import fastjson

log = logging.getLogger("broker.ha")

#: Apache's master logs how far its slave lags every minute, starting 10 s after start.
_DIFF_LOG_DELAY_MS = 10_000
_DIFF_LOG_PERIOD_MS = 60_000


class HighAvailability:
    """Replication for one broker; ``synchronizer`` is the metadata copy a slave runs (unused by a master)."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        clock: Clock,
        store: MessageStore,
        messages: MessageService,
        synchronizer: SlaveSynchronizer,
    ) -> None:
        self._config = config
        self._clock = clock
        self._store = store
        self._messages = messages
        self._slave_synchronizer = synchronizer
        self.master: ReplicationMaster | None = None
        self.slave: ReplicationSlave | None = None
        self.synchronizer: SlaveSynchronizer | None = None

    async def start(self, listen_port_requested: int) -> None:
        """Start this broker's side; ``listen_port_requested`` is the listen port asked for (0: any)."""
        config = self._config
        if config.is_slave:
            # Registered as the slave's haServerAddr, as Apache derives it; nothing replicates from a slave.
            config.ha_listen_port = config.ha_port_to_bind(listen_port_requested)
            slave = ReplicationSlave(self._store, config, self._messages.announce_replicated)
            static = config.static_ha_master_address
            if static is not None:
                slave.update_master_address(static)
            slave.start()
            self.slave = slave
            self.synchronizer = self._slave_synchronizer
            return
        master = ReplicationMaster(self._store, config)
        port = config.ha_port_to_bind(listen_port_requested)
        try:
            config.ha_listen_port = await master.start(config.listen_host, port)
        except OSError as exc:
            log.error("cannot listen on HA port %d (%s): this master serves no slave", port, exc)
            if port > 0:
                config.ha_listen_port = port
            return
        self.master = master
        if config.role is BrokerRole.SYNC_MASTER:
            self._store.set_replica_waiter(master)

    def chores(self) -> list[PeriodicTask]:
        """The periodic work of this broker's side (started and stopped with the broker's chores)."""
        clock = self._clock
        synchronizer = self.synchronizer
        if synchronizer is not None:
            return [
                PeriodicTask(
                    "slave-synchronize",
                    clock,
                    lambda: SYNC_PERIOD_MS,
                    synchronizer.sync_all,
                    initial_delay_ms=FIRST_SYNC_DELAY_MS,
                )
            ]
        if self.master is not None:
            return [
                PeriodicTask(
                    "log-slave-fall-behind",
                    clock,
                    lambda: _DIFF_LOG_PERIOD_MS,
                    self._log_fall_behind,
                    initial_delay_ms=_DIFF_LOG_DELAY_MS,
                )
            ]
        return []

    def _log_fall_behind(self) -> None:
        if self.master is not None:
            log.info("Slave fall behind master: %d bytes", self.master.slave_fall_behind)

    def registered(self, results: list[RegistrationResult]) -> None:
        """Registration listener: the first NameServer that answered names the master, as in Apache."""
        answer = next((result for result in results if result.ok), None)
        if answer is None:
            return
        if self.slave is not None and self._config.static_ha_master_address is None:
            if answer.ha_server_addr:
                self.slave.update_master_address(answer.ha_server_addr)
        if self.synchronizer is not None:
            self.synchronizer.master_addr = answer.master_addr

    async def close(self) -> None:
        self._store.set_replica_waiter(None)
        if self.slave is not None:
            await self.slave.close()
        if self.master is not None:
            await self.master.close()

    # -- GET_BROKER_HA_STATUS (5.x ``mqadmin haStatus``) --------------------------------------------------

    def status_body(self) -> bytes:
        """Apache 5.x's ``HARuntimeInfo`` for this broker, as fastjson writes it."""
        store = self._store
        client: dict[str, fastjson.JsonValue] = {
            "masterAddr": None,
            "transferredByteInSecond": 0,
            "maxOffset": 0,
            "lastReadTimestamp": 0,
            "lastWriteTimestamp": 0,
            "masterFlushOffset": 0,
        }
        links: list[fastjson.JsonValue] = []
        in_sync = 0
        put_where = 0
        if self.slave is not None:
            slave = self.slave
            client.update(
                masterAddr=slave.master_address,
                transferredByteInSecond=slave.rate.per_second(),
                maxOffset=store.max_physical_offset,
                lastReadTimestamp=slave.last_read_ms,
                lastWriteTimestamp=slave.last_write_ms,
            )
        elif self.master is not None:
            put_where = store.max_physical_offset
            for info in self.master.link_infos():
                in_sync += int(info.in_sync)
                links.append(
                    fastjson.Bean(
                        {
                            "addr": info.addr,
                            "slaveAckOffset": info.slave_ack_offset,
                            "diff": info.diff,
                            "inSync": info.in_sync,
                            "transferredByteInSecond": info.transferred_byte_in_second,
                            "transferFromWhere": info.transfer_from_where,
                        }
                    )
                )
        else:
            put_where = store.max_physical_offset
        body = fastjson.Bean(
            {
                "master": not self._config.is_slave,
                "masterCommitLogMaxOffset": put_where,
                "inSyncSlaveNums": in_sync,
                "haConnectionInfo": links,
                "haClientRuntimeInfo": fastjson.Bean(client),
            }
        )
        return fastjson.dump_bytes(body)
