"""The broker's memory while peers that never read their answers (and peers that stall mid-frame) are
connected, and after they are gone.

    .venv/bin/python -m benchmarks.stalled_peers [--unread 40] [--requests 4000] [--stalled 40]
                                                 [--stalled-bytes 512] [--settle 5] [--set KEY=VALUE ...]
                                                 [--tree DIR]

A broker (``python -m cli.main broker``, a temporary store, a free loopback port) runs in a process of its
own. Once it answers, its resident size is read from ``/proc/<pid>/status`` (``VmRSS``; also ``RssAnon``
and the peak ``VmHWM``) -- "before". Then ``--unread`` connections each send ``--requests``
GET_BROKER_CONFIG requests (a few KiB answer each) and never read, their receive buffers kept small, and
``--stalled`` connections each send the first ``--stalled-bytes`` bytes of a frame announced twice as long
and go silent. When the broker's RSS has stopped moving -- "during" -- a connection that reads asks one
more question (its answer time is printed: the others must not starve it). Then every one of those
connections is closed, and ``--settle`` seconds later the RSS is read again -- "after".

``--set`` adds broker.conf settings (``--set serverChannelMaxBufferedBytes=0 --set serverMaxBufferedBytes=0``
shows the broker without its bounds); ``--tree`` runs the broker of another checkout of the project (its
folder comes first on the import path), e.g. a ``git archive`` of an older commit, for a before/after.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import RemotingClient

REPO = Path(__file__).resolve().parent.parent
MIB = 1024 * 1024


def free_port() -> int:
    """A loopback port whose neighbours the broker also takes (HA on +1, VIP channel on -2) are free."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        if port < 1026:
            continue
        try:
            for other in (port - 2, port + 1):
                with socket.socket() as taken:
                    taken.bind(("127.0.0.1", other))
        except OSError:
            continue
        return port
    raise RuntimeError("no free port block")


def status(pid: int) -> dict[str, int]:
    """``VmRSS``, ``VmHWM``, ``RssAnon`` of ``pid``, in KiB."""
    figures: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon"):
            figures[key] = int(value.split()[0])
    return figures


def show(phase: str, figures: dict[str, int], note: str = "") -> None:
    print(
        f"{phase:<8} VmRSS {figures['VmRSS'] / 1024:7.1f} MiB   RssAnon {figures['RssAnon'] / 1024:7.1f} MiB"
        f"   VmHWM {figures['VmHWM'] / 1024:7.1f} MiB   {note}",
        flush=True,
    )


async def ask(address: str) -> tuple[float, int]:
    """One GET_BROKER_CONFIG on a fresh connection: seconds taken and answer size."""
    async with RemotingClient() as client:
        began = time.perf_counter()
        answer = await client.invoke(address, RemotingCommand.request(RequestCode.GET_BROKER_CONFIG), 30_000)
        if answer.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"GET_BROKER_CONFIG: {answer.code} {answer.remark}")
        return time.perf_counter() - began, len(answer.encode())


async def wait_until_serving(address: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the broker exited with {proc.returncode}")
        try:
            await ask(address)
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.3)


async def unread(port: int, requests: int) -> asyncio.StreamWriter:
    """A connection that sends ``requests`` requests and never reads an answer."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    _, writer = await asyncio.open_connection(sock=sock)
    for opaque in range(requests):
        writer.write(RemotingCommand(code=RequestCode.GET_BROKER_CONFIG, opaque=opaque).encode())
    # What the broker does not read stays in this process's buffer, unsent.
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(writer.drain(), 2.0)
    return writer


async def stalled(port: int, size: int) -> asyncio.StreamWriter:
    """A connection that sends the first ``size`` bytes of a frame announced as ``2 * size`` and stops."""
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write((2 * size).to_bytes(4, "big") + b"\0" * (size - 4))
    await writer.drain()
    return writer


async def steady(pid: int, limit: float = 60) -> dict[str, int]:
    """The process's figures once its RSS moved by less than 1 % over a second (or after ``limit`` s)."""
    deadline = time.monotonic() + limit
    last = status(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        now = status(pid)
        if abs(now["VmRSS"] - last["VmRSS"]) <= last["VmRSS"] / 100:
            return now
        last = now
    return last


async def measure(args: argparse.Namespace, port: int, proc: subprocess.Popen[bytes]) -> None:
    address = f"127.0.0.1:{port}"
    await wait_until_serving(address, proc)
    for _ in range(20):  # the ordinary work first, so "before" includes what serving costs anyway
        _, answer_size = await ask(address)
    await asyncio.sleep(1.0)
    show("before", status(proc.pid), f"(GET_BROKER_CONFIG answers are {answer_size:,} B)")

    began = time.perf_counter()
    peers = list(await asyncio.gather(*(unread(port, args.requests) for _ in range(args.unread))))
    peers += await asyncio.gather(*(stalled(port, args.stalled_bytes) for _ in range(args.stalled)))
    during = await steady(proc.pid)
    try:
        took, _ = await ask(address)
        answered = f"another client's answer took {took * 1000:.1f} ms"
    except Exception as exc:  # the broker this measures may starve other clients: that is a figure too
        answered = f"another client got no answer: {exc}"
    show(
        "during",
        during,
        f"({args.unread} unread x {args.requests} requests, {args.stalled} stalled; sent in "
        f"{time.perf_counter() - began:.1f} s; {answered})",
    )

    for peer in peers:
        peer.transport.abort()
    await asyncio.sleep(args.settle)
    took, _ = await ask(address)
    show(
        "after",
        status(proc.pid),
        f"({args.settle:g} s after closing them; an answer took {took * 1000:.1f} ms)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--unread", type=int, default=40, help="connections that never read (40)")
    parser.add_argument("--requests", type=int, default=4000, help="requests each of them sends (4000)")
    parser.add_argument("--stalled", type=int, default=40, help="connections that stop mid-frame (40)")
    parser.add_argument("--stalled-bytes", type=int, default=512, help="bytes of their frame sent (512)")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds between closing them and 'after'")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a broker.conf line")
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose broker runs")
    args = parser.parse_args()
    if args.stalled_bytes < 8:
        parser.error("--stalled-bytes must be at least 8")

    port = free_port()
    with tempfile.TemporaryDirectory(prefix="rmq-stalled-") as root:
        conf = Path(root) / "broker.conf"
        conf.write_text("".join(f"{line}\n" for line in args.set))
        log = (Path(root) / "broker.log").open("wb")
        env = {**os.environ, "PYTHONPATH": str(args.tree.resolve())}
        argv = [sys.executable, "-m", "cli.main", "broker", "--store", str(Path(root) / "store")]
        argv += ["--host", "127.0.0.1", "--port", str(port), "--config", str(conf), "--log-level", "WARNING"]
        proc = subprocess.Popen(argv, cwd=args.tree, env=env, stdout=log, stderr=subprocess.STDOUT)
        print(
            f"broker pid {proc.pid} on 127.0.0.1:{port} from {args.tree}; settings: {args.set or 'defaults'}"
        )
        try:
            asyncio.run(measure(args, port, proc))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            warnings = [
                line
                for line in (Path(root) / "broker.log").read_text(errors="replace").splitlines()
                if "WARNING" in line or "ERROR" in line
            ]
            with contextlib.suppress(Exception):
                for line in warnings[:5]:
                    print(f"  broker log: {line}")
                if len(warnings) > 5:
                    print(f"  broker log: ... {len(warnings) - 5} more warning lines")


if __name__ == "__main__":
    main()
