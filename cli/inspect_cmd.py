"""``rmq inspect``: decode captured frames (hex lines, JSON-lines captures, or raw frame files)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from cli.errors import CliError, friendly
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javatext import printable

if TYPE_CHECKING:
    from rocketmq_wire import RemotingCommand


def _frames_from(path: Path) -> Iterator[tuple[str, RemotingCommand]]:
    from rocketmq_wire import FrameDecoder

    data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    text: str | None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.lstrip().startswith("{"):
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                row = _json_line(line, f"{path}:{number}")
                yield str(row.get("id", number)), _decode_hex(row["hex"], f"{path}:{number}")
        return
    if text is not None and all(c in "0123456789abcdefABCDEF \n\r\t" for c in text):
        for number, line in enumerate(text.split(), 1):
            yield str(number), _decode_hex(line, f"{path}:{number}")
        return
    decoder = FrameDecoder()
    try:
        commands = decoder.feed(data)
    except CodecError as exc:
        raise CliError(f"{path}: {exc}") from None
    if decoder.buffered:
        raise CliError(f"{path}: its last {decoder.buffered} bytes are not a whole frame (cut short?)")
    for number, cmd in enumerate(commands, 1):
        yield str(number), cmd


def _json_line(line: str, where: str) -> dict[str, Any]:
    """One capture line: a JSON object with a ``hex`` field (and maybe an ``id``)."""
    try:
        row = json.loads(line)
    except ValueError as exc:
        raise CliError(f"{where}: not JSON ({exc})") from None
    if not isinstance(row, dict) or "hex" not in row:
        raise CliError(f"{where}: a JSON line without a 'hex' field")
    return row


def _decode_hex(text: Any, where: str) -> RemotingCommand:
    from rocketmq_wire import RemotingCommand

    try:
        frame = bytes.fromhex(text)
    except (TypeError, ValueError):
        raise CliError(f"{where}: {str(text)[:40]!r} is not a frame in hex") from None
    try:
        return RemotingCommand.decode(frame)
    except CodecError as exc:
        raise CliError(f"{where}: {exc}") from None


def _kind(cmd: RemotingCommand) -> str:
    return "response" if cmd.is_response else ("oneway" if cmd.is_oneway else "request")


@friendly
def inspect(
    path: Path = typer.Argument(
        ...,
        exists=True,
        dir_okay=False,
        readable=True,
        allow_dash=True,
        help="A .jsonl capture, a file of hex frames, raw frames, or -",
    ),
    limit: int = typer.Option(0, min=0, help="Show at most this many frames (0: all)"),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per frame"),
) -> None:
    """Decode RemotingCommand frames and show their headers."""
    from rich.table import Table

    out = Console(highlight=False)
    table = Table("id", "kind", "code", "opaque", "lang", "ser", "fields", "body")
    for count, (ident, cmd) in enumerate(_frames_from(path), 1):
        if limit and count > limit:
            break
        if as_json:
            record = {
                "id": ident,
                "kind": _kind(cmd),
                "code": cmd.code,
                "code_name": cmd.code_name,
                "opaque": cmd.opaque,
                "language": cmd.language.name,
                "version": cmd.version,
                "serialize_type": cmd.serialize_type.name,
                "remark": cmd.remark,
                "fields": cmd.fields(),
                "body_length": len(cmd.body),
            }
            text = json.dumps(record, ensure_ascii=False)
            if printable(text) is text:
                out.print_json(text)
            else:  # a lone surrogate (a JSON peer may send "\ud800"): written as that escape, JSON still
                out.print_json(data=record, ensure_ascii=True)
            continue
        fields = printable(", ".join(f"{k}={v}" for k, v in cmd.fields().items()))
        table.add_row(
            printable(ident),
            _kind(cmd),
            f"{cmd.code} {cmd.code_name}",
            str(cmd.opaque),
            cmd.language.name,
            cmd.serialize_type.name,
            fields[:120] + ("…" if len(fields) > 120 else ""),
            f"{len(cmd.body)} B",
        )
    if not as_json:
        out.print(table)
