"""Frames as real programs put them on the wire: a capture of loopback TCP, for golden frames at test time.

The golden frames in ``../shared/golden/`` cover what Apache's 4.9.8 and 5.3.3 clients sent in one scenario.
Every request the project adds needs the same ground truth from a Java peer of the release that has it, and
nothing of Apache's may be copied into the repository: so the suite records it while the test runs. Apache's
Java client is told the broker's address by the NameServer, so a relay in between would have to rewrite
routes; reading the loopback interface instead sees every connection as it is, unchanged.

:class:`WireTap` opens a packet socket on ``lo`` (Linux, and CAP_NET_RAW: root, as CI runs), keeps the TCP
segments of the ports it is given, puts each connection's two byte streams back together by sequence
number, and splits them into frames by their length prefix. It records, it does not interpret:
:func:`decoded` turns the frames into commands with the project's codec afterwards.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import threading
import time
from collections.abc import Iterator, Mapping
from types import TracebackType

from rocketmq_wire import RemotingCommand

#: Receive every protocol (``ETH_P_ALL``).
_ETH_P_ALL = 0x0003
#: The packet type of a packet arriving on ``lo`` (each one also shows up once as outgoing: skipped).
_PACKET_HOST = 0
_ETHERNET_HEADER = 14
_TCP = 6
_SYN, _FIN, _RST = 0x02, 0x01, 0x04
_POLL_S = 0.05


def unavailable_reason() -> str | None:
    """Why no capture can run here, or None."""
    if not hasattr(socket, "AF_PACKET"):
        return "capturing loopback frames needs Linux packet sockets (AF_PACKET)"
    try:
        probe = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(_ETH_P_ALL))
    except PermissionError:
        return f"capturing loopback frames needs CAP_NET_RAW (root); this runs as uid {os.getuid()}"
    except OSError as exc:
        return f"no packet socket: {exc}"
    probe.close()
    return None


@dataclasses.dataclass(frozen=True)
class Frame:
    """One whole frame (length prefix included), as one side sent it."""

    server: str  # the label given for the server's port
    to_server: bool  # True: client -> server
    connection: int  # the client's port: frames of one TCP connection share it
    data: bytes
    at: float  # monotonic time its last byte was seen

    def command(self) -> RemotingCommand:
        return RemotingCommand.decode(self.data)


class _Stream:
    """One direction of one connection: bytes in sequence order, cut into frames."""

    def __init__(self) -> None:
        self.next_seq: int | None = None
        self.early: dict[int, bytes] = {}  # segments ahead of next_seq
        self.buffer = bytearray()

    def add(self, seq: int, flags: int, payload: bytes) -> None:
        if flags & _SYN:
            self.next_seq = (seq + 1) & 0xFFFFFFFF
            return
        if self.next_seq is None:  # joined mid-connection: take it from here
            self.next_seq = seq
        if payload:
            self.early[seq] = payload
        self._drain()

    def _drain(self) -> None:
        assert self.next_seq is not None
        while self.early:
            ahead = {((s - self.next_seq) & 0xFFFFFFFF): s for s in self.early}
            gap = min(ahead)
            if gap > 0x7FFFFFFF:  # behind next_seq: a retransmission, perhaps overlapping new bytes
                seq = ahead[gap]
                payload = self.early.pop(seq)
                behind = (self.next_seq - seq) & 0xFFFFFFFF
                if behind < len(payload):
                    self.early[self.next_seq] = payload[behind:]
                continue
            if gap:
                return  # waiting for a segment in between
            payload = self.early.pop(self.next_seq)
            self.buffer += payload
            self.next_seq = (self.next_seq + len(payload)) & 0xFFFFFFFF

    def frames(self) -> Iterator[bytes]:
        buf = self.buffer
        while len(buf) >= 4:
            length = int.from_bytes(buf[:4], "big")
            if len(buf) < 4 + length:
                return
            yield bytes(buf[: 4 + length])
            del buf[: 4 + length]


class WireTap:
    """Records the frames of loopback TCP connections to ``ports`` (port -> a label such as "broker")."""

    def __init__(self, ports: Mapping[int, str]) -> None:
        self._ports = dict(ports)
        self._streams: dict[tuple[int, int], _Stream] = {}
        self._frames: list[Frame] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> WireTap:
        reason = unavailable_reason()
        if reason is not None:
            raise RuntimeError(reason)
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.ntohs(_ETH_P_ALL))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024 * 1024)
        sock.bind(("lo", 0))
        sock.settimeout(_POLL_S)
        self._sock = sock
        self._thread = threading.Thread(target=self._run, name="wiretap", daemon=True)
        self._thread.start()
        return self

    def stop(self, settle_s: float = 0.2) -> list[Frame]:
        """Stop after ``settle_s`` more seconds of capture (what is in flight arrives); every frame seen."""
        time.sleep(settle_s)
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._sock is not None:
            self._sock.close()
        if self.error is not None:
            raise RuntimeError(f"the capture failed: {self.error}") from self.error
        return self.frames()

    def frames(self) -> list[Frame]:
        with self._lock:
            return list(self._frames)

    def __enter__(self) -> WireTap:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self._stop.is_set():
            self.stop(settle_s=0)

    def _run(self) -> None:
        assert self._sock is not None
        try:
            while not self._stop.is_set():
                try:
                    packet, address = self._sock.recvfrom(1 << 17)
                except TimeoutError:
                    continue
                if address[2] == _PACKET_HOST:
                    self._take(packet)
        except BaseException as exc:  # reported by stop(): a capture that silently lost frames would lie
            self.error = exc

    def _take(self, packet: bytes) -> None:
        ip = memoryview(packet)[_ETHERNET_HEADER:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != _TCP:
            return
        ip_header = (ip[0] & 0x0F) * 4
        total = int.from_bytes(ip[2:4], "big")
        tcp = ip[ip_header:total]
        source, target = int.from_bytes(tcp[0:2], "big"), int.from_bytes(tcp[2:4], "big")
        if target in self._ports:
            server, to_server, client = self._ports[target], True, source
        elif source in self._ports:
            server, to_server, client = self._ports[source], False, target
        else:
            return
        seq = int.from_bytes(tcp[4:8], "big")
        flags = tcp[13]
        payload = bytes(tcp[(tcp[12] >> 4) * 4 :])
        stream = self._streams.setdefault((source, target), _Stream())
        stream.add(seq, flags, payload)
        now = time.monotonic()
        frames = [Frame(server, to_server, client, data, now) for data in stream.frames()]
        if frames:
            with self._lock:
                self._frames.extend(frames)
        if flags & (_FIN | _RST) and not stream.early:
            self._streams.pop((source, target), None)


def decoded(frames: list[Frame]) -> list[tuple[Frame, RemotingCommand]]:
    """Each frame with its command, in capture order."""
    return [(frame, frame.command()) for frame in frames]
