"""``rmq top``'s loop: read a snapshot every few seconds, redraw, switch the sort on a key, leave on ``q``
or Ctrl-C with the terminal as it was (the alternate screen left, the line discipline restored)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import termios
import tty
from collections.abc import Iterator

from rich.console import Console
from rich.live import Live
from rich.text import Text

from admin.admin import Admin
from admin.snapshot import ClusterSnapshot, read_snapshot
from cli.top_render import SortBy, render

logger = logging.getLogger("cli.top")

QUIT_KEYS = frozenset({"q", "Q"})


@contextlib.contextmanager
def _keys_unbuffered(fd: int) -> Iterator[None]:
    """Keys arrive one at a time without echo; the previous mode comes back whatever happens."""
    if not sys.stdin.isatty():
        yield
        return
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


async def run_top(admin: Admin, *, interval: float, sort: SortBy, console: Console | None = None) -> None:
    """Until ``q`` or Ctrl-C."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    redraw = asyncio.Event()
    state = {"sort": sort}
    fd = sys.stdin.fileno()
    by_key = {s.value: s for s in SortBy}

    def on_key() -> None:
        key = sys.stdin.read(1)
        if key == "" or key in QUIT_KEYS:
            stop.set()
        elif key.lower() in by_key:
            state["sort"] = by_key[key.lower()]
            redraw.set()

    console = console or Console()
    previous: ClusterSnapshot | None = None
    current = await read_snapshot(admin, rates=False)
    with _keys_unbuffered(fd):
        if sys.stdin.isatty():
            loop.add_reader(fd, on_key)
        loop.add_signal_handler(signal.SIGINT, stop.set)
        try:
            with Live(
                render(None, current, state["sort"]), console=console, screen=True, auto_refresh=False
            ) as live:
                next_read = loop.time() + interval
                while not stop.is_set():
                    waiters = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(redraw.wait())]
                    await asyncio.wait(
                        waiters, timeout=max(0.0, next_read - loop.time()), return_when="FIRST_COMPLETED"
                    )
                    for waiter in waiters:
                        waiter.cancel()
                    if stop.is_set():
                        break
                    if not redraw.is_set():
                        try:
                            previous, current = current, await read_snapshot(admin, rates=False)
                        except Exception as exc:  # a failed round keeps the last screen
                            logger.warning("cluster not read: %s", exc)
                        next_read = loop.time() + interval
                    redraw.clear()
                    live.update(render(previous, current, state["sort"]), refresh=True)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            if sys.stdin.isatty():
                loop.remove_reader(fd)
    console.print(Text("rmq top: bye"))
