"""``rmq inspect``: decode captured frames (hex lines, JSON-lines captures, or raw frame files)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from cli.errors import CliError, friendly
from rocketmq_wire import FrameDecoder, RemotingCommand


def _frames_from(path: Path) -> Iterator[tuple[str, RemotingCommand]]:
    data = sys.stdin.buffer.read() if str(path) == "-" else path.read_bytes()
    text: str | None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        text = None
    if text is not None and text.lstrip().startswith("{"):
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip():
                row = json.loads(line)
                if "hex" not in row:
                    raise CliError(f"{path}:{number}: a JSON line without a 'hex' field")
                yield str(row.get("id", number)), RemotingCommand.decode(bytes.fromhex(row["hex"]))
        return
    if text is not None and all(c in "0123456789abcdefABCDEF \n\r\t" for c in text):
        for number, line in enumerate(text.split(), 1):
            yield str(number), RemotingCommand.decode(bytes.fromhex(line))
        return
    for number, cmd in enumerate(FrameDecoder().feed(data), 1):
        yield str(number), cmd


def _kind(cmd: RemotingCommand) -> str:
    return "response" if cmd.is_response else ("oneway" if cmd.is_oneway else "request")


@friendly
def inspect(
    path: Path = typer.Argument(..., help="A .jsonl capture, a file of hex frames, raw frames, or -"),
    limit: int = typer.Option(0, help="Show at most this many frames (0: all)"),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per frame"),
) -> None:
    """Decode RemotingCommand frames and show their headers."""
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
            out.print_json(json.dumps(record, ensure_ascii=False))
            continue
        fields = ", ".join(f"{k}={v}" for k, v in cmd.fields().items())
        table.add_row(
            ident,
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
