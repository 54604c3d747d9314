"""Texts a client sends operators when asked how it is doing: a "jstack" and one-line exception summaries.

GET_CONSUMER_RUNNING_INFO with ``jstackEnable`` asks a Java client for ``UtilAll.jstack``: every thread with
a stack, a ``name TID: id STATE: state`` line and then one line per frame, each prefixed by the thread name
padded to 40 columns, innermost frame first, a blank line after each thread. Tools that show it (mqadmin,
dashboards) print it as text, so the same layout is used here for what a Python process runs: its threads,
and the asyncio tasks of the running loop (where a consumer's work actually waits).

A listener that throws during CONSUME_MESSAGE_DIRECTLY is reported the way ``RemotingHelper
.exceptionSimpleDesc`` reports it: the exception as ``Throwable.toString`` prints it, then the frame where
it was raised.
"""

from __future__ import annotations

import asyncio
import sys
import threading
import traceback
from types import FrameType

_NAME_WIDTH = 40


def _frame_text(frame: FrameType, lineno: int | None = None) -> str:
    """A frame as Java's ``StackTraceElement.toString``: ``where.function(file:line)``."""
    module = frame.f_globals.get("__name__", "?")
    code = frame.f_code
    line = frame.f_lineno if lineno is None else lineno
    return f"{module}.{code.co_qualname}({code.co_filename.rsplit('/', 1)[-1]}:{line})"


def _thread_frames(frame: FrameType | None) -> list[FrameType]:
    """The frames of a thread, innermost first (Java's order)."""
    frames: list[FrameType] = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames


def _section(name: str, ident: int, state: str, lines: list[str]) -> str:
    head = f"{name:<{_NAME_WIDTH}}TID: {ident} STATE: {state}\n"
    return head + "".join(f"{name:<{_NAME_WIDTH}}{line}\n" for line in lines) + "\n"


def jstack() -> str:
    """The threads and (when called on a loop) asyncio tasks of this process, in Java's jstack layout."""
    sections: list[str] = []
    current = threading.get_ident()
    frames = sys._current_frames()
    for thread in threading.enumerate():
        stack = _thread_frames(frames.get(thread.ident or 0))
        if stack:
            state = "RUNNABLE" if thread.ident == current else "WAITING"
            sections.append(_section(thread.name, thread.ident or 0, state, [_frame_text(f) for f in stack]))
    try:
        tasks = asyncio.all_tasks()
        running = asyncio.current_task()
    except RuntimeError:  # no running loop: threads are all there is
        tasks, running = set(), None
    for task in sorted(tasks, key=lambda t: t.get_name()):
        stack = list(reversed(task.get_stack()))  # asyncio lists the outermost first
        if stack:
            state = "RUNNABLE" if task is running else "WAITING"
            sections.append(_section(task.get_name(), id(task), state, [_frame_text(f) for f in stack]))
    return "".join(sections)


def _java_class_name(exc: BaseException) -> str:
    kind = type(exc)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def exception_simple_desc(exc: BaseException) -> str:
    """``ValueError: bad body, handlers.on_message(handlers.py:42)``: the exception, where it was raised."""
    message = str(exc)
    text = f"{_java_class_name(exc)}: {message}" if message else _java_class_name(exc)
    innermost = None
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        innermost = (frame, lineno)
    if innermost is not None:
        text += ", " + _frame_text(*innermost)
    return text
