"""The running half of moving a consumer group's offsets: ``rmq reset-offset`` (:mod:`cli.consumer_cmds`)
and ``rmq group skip-accumulated`` (:mod:`cli.group_cmd`), which is a reset to the end.

Both commands share it here, so that neither command module calls the other's command function; they import
it once their command line has been read.
"""

from __future__ import annotations

import time

from rich.table import Table

from admin import RESET_TO_LATEST
from cli.common import Target, cell, emit_json, out, with_admin


def reset_offsets(
    where: Target, group: str, topic: str, timestamp_ms: int, force: bool, as_json: bool
) -> None:
    """Move ``group``'s offsets on ``topic`` to the first message stored at or after ``timestamp_ms`` (or to
    the end, for :data:`admin.RESET_TO_LATEST`) and show each queue's move."""
    rows = with_admin(
        where, lambda admin: admin.reset_offset_by_time(group, topic, timestamp_ms, force=force)
    )
    if as_json:
        emit_json({"group": group, "topic": topic, "timestamp_ms": timestamp_ms, "queues": rows})
        return
    table = Table(title=f"Offsets of {group} on {topic}", title_justify="left")
    for heading in ("Broker", "QID", "Was", "Now", "How"):
        table.add_column(heading)
    for row in rows:
        table.add_row(
            cell(row.broker_name),
            cell(row.queue_id),
            cell("" if row.previous_offset is None else row.previous_offset),
            cell(row.new_offset),
            cell(row.method.value),
        )
    table.caption = (
        f"reset to {'the end' if timestamp_ms == RESET_TO_LATEST else time.ctime(timestamp_ms / 1000)}"
    )
    out().print(table)
