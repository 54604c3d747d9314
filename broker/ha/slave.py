"""The slave half of classic HA: follow a master's commit log byte for byte (Apache's ``HAClient``).

The slave connects to its master's HA port, reports its commit-log max offset, and appends whatever the
master streams, unchanged, so its commit log stays byte-identical to the master's; each record that becomes
complete is dispatched to consume queues and the index as recovery would. It reports again whenever its
offset advanced and at least every ``haSendHeartbeatInterval``, which is also the master's acknowledgement.

A transfer must start exactly where the slave's log ends (any start is accepted while the slave holds
nothing); anything else means the two logs diverged or the stream is broken, and the slave drops the
connection and starts over with a fresh report, as Apache's does. The master's address comes from
``haMasterAddress`` or from the NameServer's answer to the slave's registration.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from broker.config import BrokerConfig
from broker.ha.protocol import HAProtocolError, Transfer, TransferReader, encode_report
from broker.ha.rate import RateMeter
from broker.store import MessageStore
from rocketmq_wire.message.stored import MessageExt

log = logging.getLogger("broker.ha.slave")

#: How long to wait before trying again after a failed connect, or with no master known (Apache: 5 s).
RETRY_AFTER_S = 5.0
#: Pause before reconnecting after a link broke, so a master that keeps failing is not hammered.
RECONNECT_PAUSE_S = 1.0
_CONNECT_TIMEOUT_S = 3.0
_READ_CHUNK = 256 * 1024

#: ``listener(records)``: replicated records were dispatched (long polling wakes on these).
DispatchListener = Callable[[list[MessageExt]], None]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.strip().rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{address!r} is not host:port")
    return host, int(port)


class _LinkBroken(Exception):
    """The current HA link must be dropped (and a new one made)."""


class ReplicationSlave:
    def __init__(
        self,
        store: MessageStore,
        config: BrokerConfig,
        on_dispatched: DispatchListener | None = None,
        *,
        retry_after_s: float = RETRY_AFTER_S,
        reconnect_pause_s: float = RECONNECT_PAUSE_S,
    ) -> None:
        self.store = store
        self.config = config
        self._on_dispatched = on_dispatched
        self._retry_after_s = retry_after_s
        self._reconnect_pause_s = reconnect_pause_s
        self.master_address: str | None = None
        self._address_changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Links made so far (a reconnect makes another).
        self.connections = 0
        self.connected = False
        self.reported_offset = -1
        self.last_read_ms = 0
        self.last_write_ms = 0
        self.rate = RateMeter()

    def update_master_address(self, address: str | None) -> None:
        """Follow another master from now on (the current link, if any, is dropped)."""
        if address == self.master_address:
            return
        log.info("HA master address: %s -> %s", self.master_address, address)
        self.master_address = address
        self._address_changed.set()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="ha-slave")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _pause(self, seconds: float) -> None:
        """Sleep, but wake at once when the master's address changes."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._address_changed.wait(), seconds)

    async def _run(self) -> None:
        while True:
            self._address_changed.clear()
            address = self.master_address
            if address is None:
                await self._pause(self._retry_after_s)
                continue
            try:
                host, port = _split_address(address)
                connecting = asyncio.open_connection(host, port)
                reader, writer = await asyncio.wait_for(connecting, _CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError, ValueError) as exc:
                log.warning("cannot connect to HA master %s: %s", address, exc)
                await self._pause(self._retry_after_s)
                continue
            self.connections += 1
            self.connected = True
            log.info("connected to HA master %s", address)
            try:
                await self._follow(reader, writer)
            except _LinkBroken as exc:
                log.warning("dropping the HA link with %s: %s", address, exc)
            except (OSError, HAProtocolError) as exc:
                log.warning("HA link with %s failed: %s", address, exc)
            finally:
                self.connected = False
                writer.transport.abort()
            await self._pause(self._reconnect_pause_s)

    async def _follow(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        store = self.store
        transfers = TransferReader(max_body_size=store.config.commit_log_segment_size)
        self.last_read_ms = _now_ms()
        await self._report(writer, store.max_physical_offset)
        while True:
            if self._address_changed.is_set():
                raise _LinkBroken("the master changed")
            config = self.config
            since_write = _now_ms() - self.last_write_ms
            if since_write >= config.ha_send_heartbeat_interval:
                await self._report(writer, self.reported_offset)
                continue
            try:
                data = await asyncio.wait_for(
                    reader.read(_READ_CHUNK), (config.ha_send_heartbeat_interval - since_write) / 1000
                )
            except TimeoutError:
                silent = _now_ms() - self.last_read_ms
                if silent > config.ha_housekeeping_interval:
                    raise _LinkBroken(f"the master sent nothing for {silent} ms") from None
                continue
            if not data:
                raise _LinkBroken("the master closed the link")
            self.last_read_ms = _now_ms()
            self.rate.add(len(data))
            self._apply(transfers.feed(data))
            pending = transfers.pending_header()
            if pending is not None:
                self._check_offset(pending[0])
            if store.max_physical_offset > self.reported_offset:
                await self._report(writer, store.max_physical_offset)

    def _apply(self, transfers: list[Transfer]) -> None:
        """Store what one read completed, contiguous transfers as one append.

        A master that keeps up with its producers streams each record on its own; appending (and
        dispatching) them one by one made the slave fall seconds behind a busy project master, so the
        transfers a read brings are joined, up to the end of a commit-log file (no append crosses one).
        """
        file_size = self.store.config.commit_log_segment_size
        run_start, run_end, run = -1, -1, list[bytes]()
        for transfer in transfers:
            if run and transfer.offset == run_end and transfer.offset % file_size:
                run.append(transfer.body)
                run_end += len(transfer.body)
                continue
            if run:
                self._append(run_start, b"".join(run))
                run = []
            self._check_offset(transfer.offset)
            if transfer.body:
                run_start, run_end, run = (
                    transfer.offset,
                    transfer.offset + len(transfer.body),
                    [transfer.body],
                )
        if run:
            self._append(run_start, b"".join(run))

    def _check_offset(self, master_offset: int) -> None:
        mine = self.store.max_physical_offset
        if mine != 0 and mine != master_offset:
            raise _LinkBroken(f"the master sends offset {master_offset} but this commit log ends at {mine}")

    def _append(self, offset: int, body: bytes) -> None:
        try:
            records = self.store.append_replicated(offset, body)
        except (ValueError, RuntimeError) as exc:
            raise _LinkBroken(str(exc)) from None
        if records and self._on_dispatched is not None:
            try:
                self._on_dispatched(records)
            except Exception:
                log.exception("replicated-dispatch listener failed")

    async def _report(self, writer: asyncio.StreamWriter, offset: int) -> None:
        writer.write(encode_report(offset))
        await writer.drain()
        self.reported_offset = offset
        self.last_write_ms = _now_ms()
