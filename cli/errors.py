"""Turning failures into one readable line and a non-zero exit, never a traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import typer
from rich.console import Console

from rocketmq_wire.errors import CodecError

P = ParamSpec("P")
R = TypeVar("R")

_stderr = Console(stderr=True, highlight=False, soft_wrap=True)


class CliError(Exception):
    """A user-facing failure: its message is printed as is."""


def fail(message: str, code: int = 1) -> typer.Exit:
    _stderr.print(f"[bold red]error:[/] {message}")
    return typer.Exit(code)


def friendly(func: Callable[P, R]) -> Callable[P, R]:
    """Run a command, mapping expected failures to ``error: …`` and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except (CliError, CodecError, OSError, TimeoutError) as exc:
            raise fail(str(exc) or type(exc).__name__) from None
        except KeyboardInterrupt:
            raise fail("interrupted", 130) from None

    return wrapper
