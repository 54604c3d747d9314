"""Turning failures into one readable line and a non-zero exit, never a traceback."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

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


class OneLineErrorsGroup(TyperGroup):
    """The root command group: a usage error (missing argument, bad option value) is one ``error:`` line
    and exit code 2, instead of a usage block and a boxed message."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except typer.TyperException as exc:
            # typer has already shown the help for a bare group (it tells this case by the class name too)
            if type(exc).__name__ != "NoArgsIsHelpError":
                ctx = getattr(exc, "ctx", None)
                hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
                _stderr.print(f"[bold red]error:[/] {escape(exc.format_message())}{hint}")
            sys.exit(exc.exit_code)
        except typer.Abort:
            _stderr.print("[bold red]error:[/] aborted")
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)
