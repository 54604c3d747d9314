"""The master half of classic HA: the HA port, one link per slave, and waiting for slaves to catch up.

Apache's ``HAService`` (master side) and ``HAConnection``. A slave connects to the HA port and reports its
commit-log max offset; that first report says where to start, later ones acknowledge. The master streams
its commit log from there in transfers of at most ``haTransferBatchSize`` bytes, never across a file
(what one file holds so far), and a header-only heartbeat when it has nothing to send for
``haSendHeartbeatInterval``. A slave reporting 0 holds nothing, so it starts at the beginning of the
master's last commit-log file, as Apache's does, rather than replaying the whole log.

The highest offset any slave acknowledged (``push2SlaveMaxOffset`` in Apache, never lowered) is what a
SYNC_MASTER waits for, through :meth:`ReplicationMaster.wait_replicated`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import threading
import time

from broker.config import BrokerConfig
from broker.ha.protocol import HAProtocolError, ReportReader, encode_header
from broker.ha.rate import RateMeter
from broker.store import MessageStore
from broker.store.waiting import settle, wait_settled

log = logging.getLogger("broker.ha.master")

#: How much of a slave's reports one read takes (Apache's read buffer is 1 MiB of 8-byte reports).
_READ_CHUNK = 64 * 1024
#: Longest wait for new commit-log bytes before looking again (a missed wake-up costs at most this).
_IDLE_POLL_S = 1.0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclasses.dataclass(frozen=True, slots=True)
class SlaveLinkInfo:
    """One slave as GET_BROKER_HA_STATUS shows it (``HAConnectionRuntimeInfo``)."""

    addr: str
    slave_ack_offset: int
    diff: int
    in_sync: bool
    transferred_byte_in_second: int
    transfer_from_where: int


class SlaveLink:
    """One connected slave (Apache's ``HAConnection``): reads its reports, streams it the commit log."""

    def __init__(
        self, master: ReplicationMaster, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self._master = master
        self._reader = reader
        self._writer = writer
        peer = writer.get_extra_info("peername")
        self.address = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        #: The slave's first report: where the stream starts (-1 until it arrives).
        self.request_offset = -1
        #: The slave's latest report: what it holds.
        self.ack_offset = -1
        #: Where the stream started and where it continues.
        self.transfer_from = -1
        self.next_transfer = -1
        self.bytes_sent = 0
        self.rate = RateMeter()
        self._requested = asyncio.Event()
        #: Settled by :meth:`wake`; a new one per turn of the stream (a bare future: SYNC_MASTER sends wake
        #: the link once each, and ``asyncio.wait_for`` on an event would make a task per wake-up).
        self._data_ready: asyncio.Future[bool] | None = None
        self._tasks: tuple[asyncio.Task[None], ...] = ()
        self._stopped = False

    def wake(self) -> None:
        """New commit-log bytes exist: stop waiting for them."""
        if self._data_ready is not None:
            settle(self._data_ready, True)

    def stop(self) -> None:
        """End the link (the master is closing); :meth:`run` then returns."""
        self._stopped = True
        for task in self._tasks:
            task.cancel()

    async def run(self) -> None:
        """Serve the slave until either direction ends (or :meth:`stop`), then drop the connection."""
        if self._stopped:
            self._writer.transport.abort()
            return
        reading = asyncio.create_task(self._read_reports(), name=f"ha-read-{self.address}")
        streaming = asyncio.create_task(self._stream(), name=f"ha-stream-{self.address}")
        self._tasks = (reading, streaming)
        try:
            done, _ = await asyncio.wait((reading, streaming), return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if not task.cancelled() and task.exception() is not None:
                    log.warning("HA link with slave %s failed: %s", self.address, task.exception())
        finally:
            for task in (reading, streaming):
                task.cancel()
            for task in (reading, streaming):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            # abort, not close: a slave that stopped reading would keep close() waiting for the buffer.
            self._writer.transport.abort()
            log.info("HA link with slave %s closed (acknowledged %d)", self.address, self.ack_offset)

    async def _read_reports(self) -> None:
        config = self._master.config
        store = self._master.store
        reports = ReportReader()
        while True:
            try:
                data = await asyncio.wait_for(
                    self._reader.read(_READ_CHUNK), config.ha_housekeeping_interval / 1000
                )
            except TimeoutError:
                log.warning(
                    "HA housekeeping: slave %s silent for %d ms, closing",
                    self.address,
                    config.ha_housekeeping_interval,
                )
                return
            if not data:
                log.info("slave %s closed its HA link", self.address)
                return
            offset = reports.feed(data)
            if offset is None:
                continue
            self.ack_offset = offset
            if self.request_offset < 0:
                self.request_offset = offset
                log.info("slave %s requests the commit log from offset %d", self.address, offset)
                self._requested.set()
            elif offset > store.max_physical_offset:
                raise HAProtocolError(
                    f"slave {self.address} acknowledges {offset}, past this commit log's end "
                    f"{store.max_physical_offset}"
                )
            self._master.acknowledged(offset)

    async def _stream(self) -> None:
        await self._requested.wait()
        master = self._master
        store = master.store
        start = self.request_offset
        if start == 0:
            # A slave with nothing starts at the last file: the history before it is not worth sending.
            end = store.max_physical_offset
            start = end - end % store.config.commit_log_segment_size
        self.transfer_from = self.next_transfer = start
        log.info("streaming the commit log from %d to slave %s", start, self.address)
        if start > store.max_physical_offset:
            # As in Apache the link stays up, sending heartbeats: the slave's log diverged from this one.
            log.warning(
                "slave %s holds more (%d) than this master (%d): nothing to send it",
                self.address,
                start,
                store.max_physical_offset,
            )
        elif start < store.min_physical_offset:
            log.warning(
                "slave %s asks for offset %d, before this master's oldest byte %d: nothing to send it",
                self.address,
                start,
                store.min_physical_offset,
            )
        last_write = _now_ms()
        loop = asyncio.get_running_loop()
        while True:
            config = master.config
            self._data_ready = loop.create_future()  # before reading: an append from now on settles it
            chunk = store.read_commit_log(self.next_transfer, config.ha_transfer_batch_size)
            if chunk is not None:
                self._writer.write(encode_header(self.next_transfer, len(chunk)) + chunk)
                self.next_transfer += len(chunk)
                self.bytes_sent += len(chunk)
                self.rate.add(len(chunk))
                last_write = _now_ms()
                await self._writer.drain()
                continue
            idle = _now_ms() - last_write
            if idle > config.ha_send_heartbeat_interval:
                self._writer.write(encode_header(self.next_transfer, 0))
                last_write = _now_ms()
                await self._writer.drain()
                continue
            wait_s = min(_IDLE_POLL_S, (config.ha_send_heartbeat_interval - idle + 1) / 1000)
            await wait_settled(self._data_ready, wait_s)


class ReplicationMaster:
    """The HA port and the slaves on it; the SYNC_MASTER store's :class:`~broker.store.message_store.
    ReplicaWaiter`."""

    def __init__(self, store: MessageStore, config: BrokerConfig) -> None:
        self.store = store
        self.config = config
        self.links: list[SlaveLink] = []
        #: The highest offset a slave acknowledged (Apache's ``push2SlaveMaxOffset``).
        self.push_max_offset = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._waiters: list[tuple[int, asyncio.Future[bool]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self.port = 0

    # -- lifecycle ----------------------------------------------------------------------------------------

    async def start(self, host: str, port: int) -> int:
        """Listen on the HA port (0: any free one); returns the port bound."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._server = await asyncio.start_server(self._accept, host, port, reuse_address=True)
        sockets = self._server.sockets
        self.port = int(sockets[0].getsockname()[1]) if sockets else port
        self.store.add_append_listener(self._appended)
        log.info("HA service listening on %s:%d", host, self.port)
        return self.port

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
        for link in list(self.links):
            link.stop()
        # The links end on their own once stopped; the connection tasks are asyncio's, not cancelled here.
        tasks = list(self._tasks)
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        self._fail_waiters()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = SlaveLink(self, reader, writer)
        log.info("HA service: new slave connection from %s", link.address)
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        self.links.append(link)
        try:
            await link.run()
        finally:
            self.links.remove(link)
            if task is not None:
                self._tasks.discard(task)

    # -- what the store and the broker ask ----------------------------------------------------------------

    def _appended(self, end: int) -> None:
        """Append listener, called for every append: cheap when no slave is connected (the common case)
        and when on the loop's own thread (a send), where waking the links needs no self-pipe write.
        Appends made on worker threads hand the wake-up to the loop."""
        if not self.links:
            return  # a link that connects later reads whatever is stored by then
        loop = self._loop
        if loop is None or loop.is_closed() or self._server is None:
            return
        if threading.get_ident() == self._loop_thread:
            self._wake_links()
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._wake_links)

    def _wake_links(self) -> None:
        for link in self.links:
            link.wake()

    def is_slave_ok(self, master_put_where: int) -> bool:
        """Apache's ``isSlaveOK``: a slave is connected and no further behind than the limit."""
        behind = master_put_where - self.push_max_offset
        return bool(self.links) and behind < self.config.slave_fall_behind_limit

    async def wait_replicated(self, offset: int, timeout_s: float) -> bool:
        """True once a slave acknowledged every byte before ``offset``; False after ``timeout_s``.

        Every send of a SYNC_MASTER waits here, so the wait is a bare future and a timer (no task of its
        own, as ``asyncio.wait_for`` would make); :meth:`acknowledged` settles and drops the entries.
        """
        if self.push_max_offset >= offset:
            return True
        self._wake_links()
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiters.append((offset, future))
        if await wait_settled(future, timeout_s):
            return True
        self._waiters = [entry for entry in self._waiters if entry[1] is not future]
        log.warning("no slave acknowledged offset %d within %.1f s", offset, timeout_s)
        return self.push_max_offset >= offset

    def acknowledged(self, offset: int) -> None:
        """A slave holds everything before ``offset`` (Apache's ``notifyTransferSome``)."""
        if offset <= self.push_max_offset:
            return
        self.push_max_offset = offset
        waiting = []
        for entry in self._waiters:
            wanted, future = entry
            if future.done():  # timed out or cancelled
                continue
            if wanted <= offset:
                future.set_result(True)
            else:
                waiting.append(entry)
        self._waiters = waiting

    def _fail_waiters(self) -> None:
        for _, future in self._waiters:
            if not future.done():
                future.set_result(False)

    @property
    def slave_fall_behind(self) -> int:
        """Bytes the best slave lacks (Apache's ``slaveFallBehindMuch``, logged every minute)."""
        return self.store.max_physical_offset - self.push_max_offset

    def link_infos(self) -> list[SlaveLinkInfo]:
        put_where = self.store.max_physical_offset
        limit = self.config.slave_fall_behind_limit
        return [
            SlaveLinkInfo(
                addr=link.address,
                slave_ack_offset=link.ack_offset,
                diff=put_where - link.ack_offset,
                in_sync=put_where - link.ack_offset < limit,
                transferred_byte_in_second=link.rate.per_second(),
                transfer_from_where=link.next_transfer,
            )
            for link in self.links
        ]
