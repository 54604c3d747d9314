"""Turning admin results into rich tables (laid out like mqadmin's, with readable headings) and into
plain data for ``--json``.

Everything that came from a server -- topic names, message bodies, properties -- goes into cells as
:class:`rich.text.Text`, never as markup, so a body containing ``[red]`` prints as those characters.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.table import Table

from cli.common import cell
from rocketmq_wire.perm import perm_to_string

if TYPE_CHECKING:
    from admin import BrokerAddress, ConsumerProgress, TopicStatus
    from rocketmq_wire.bodies import TopicRouteData
    from rocketmq_wire.message import MessageExt


def timestamp(ms: int) -> str:
    """Local time with milliseconds, as mqadmin prints it; empty for 0 (never)."""
    if ms <= 0:
        return ""
    moment = dt.datetime.fromtimestamp(ms / 1000).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S,") + f"{ms % 1000:03d}"


# -- routes and clusters --------------------------------------------------------------------------------


def route_json(route: TopicRouteData) -> Any:
    """The route as the NameServer's standard-JSON body (mqadmin ``topicRoute`` prints this shape)."""
    return json.loads(route.to_json(standard_json=True))


def route_table(topic: str, route: TopicRouteData) -> Table:
    table = Table(title=f"Route of {topic}", title_justify="left")
    for heading in ("Broker", "Cluster", "Addresses (id=addr)", "Read queues", "Write queues", "Perm"):
        table.add_column(heading, justify="right" if "queues" in heading else "left")
    queues = {q.broker_name: q for q in route.queue_datas}
    for data in sorted(route.broker_datas, key=lambda d: d.broker_name or ""):
        queue = queues.get(data.broker_name)
        addrs = "  ".join(f"{broker_id}={addr}" for broker_id, addr in sorted(data.broker_addrs.items()))
        table.add_row(
            cell(data.broker_name),
            cell(data.cluster),
            cell(addrs),
            cell(queue.read_queue_nums if queue else ""),
            cell(queue.write_queue_nums if queue else ""),
            cell(perm_to_string(queue.perm) if queue else ""),
        )
    if route.order_topic_conf:
        table.caption = f"ordered: {route.order_topic_conf}"
    return table


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerRow:
    """One line of ``rmq clusters``: mqadmin ``clusterList``'s columns, from the broker's runtime table."""

    cluster: str
    broker_name: str
    broker_id: int
    addr: str
    version: str
    in_tps: float | None
    out_tps: float | None
    page_cache_lock_ms: str
    hours_of_messages: float | None
    disk_ratio: float | None
    error: str | None = None


def _first_number(text: str | None) -> float | None:
    """The first figure of a ``"12.0 11.5 10.9"`` rate string."""
    if not text:
        return None
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def broker_row(broker: BrokerAddress, stats: Mapping[str, str] | None, error: str | None = None) -> BrokerRow:
    stats = stats or {}
    earliest = stats.get("earliestMessageTimeStamp", "")
    hours: float | None = None
    if earliest.lstrip("-").isdigit() and int(earliest) > 0:
        hours = (time.time() * 1000 - int(earliest)) / 3_600_000
    ratio = stats.get("commitLogDiskRatio")
    try:
        disk = float(ratio) if ratio is not None else None
    except ValueError:
        disk = None
    return BrokerRow(
        cluster=broker.cluster,
        broker_name=broker.broker_name,
        broker_id=broker.broker_id,
        addr=broker.addr,
        version=stats.get("brokerVersionDesc", ""),
        in_tps=_first_number(stats.get("putTps")),
        out_tps=_first_number(stats.get("getTransferedTps") or stats.get("getTransferredTps")),
        page_cache_lock_ms=stats.get("pageCacheLockTimeMills", ""),
        hours_of_messages=hours,
        disk_ratio=disk,
        error=error,
    )


def _number(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def clusters_table(rows: list[BrokerRow]) -> Table:
    table = Table()
    headings = (
        "Cluster",
        "Broker",
        "BID",
        "Address",
        "Version",
        "In TPS",
        "Out TPS",
        "PC wait ms",
        "Hours",
        "Disk",
    )
    for heading in headings:
        table.add_column(
            heading, justify="right" if heading in ("BID", "In TPS", "Out TPS", "Hours") else "left"
        )
    for row in rows:
        table.add_row(
            cell(row.cluster),
            cell(row.broker_name),
            cell(row.broker_id),
            cell(row.addr),
            cell(row.version or (f"unreachable: {row.error}" if row.error else "")),
            cell(_number(row.in_tps)),
            cell(_number(row.out_tps)),
            cell(row.page_cache_lock_ms),
            cell(_number(row.hours_of_messages)),
            cell(_number(row.disk_ratio, 4)),
        )
    return table


def key_value_table(values: Mapping[str, str], title: str | None = None, *, sort: bool = True) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column("Key")
    table.add_column("Value")
    items = sorted(values.items()) if sort else list(values.items())
    for key, value in items:
        table.add_row(cell(key), cell(value))
    return table


# -- topics and groups ----------------------------------------------------------------------------------


def topic_status_table(status: TopicStatus) -> Table:
    table = Table(title=f"Status of {status.topic}", title_justify="left")
    for heading in ("Broker", "QID", "Min offset", "Max offset", "Messages", "Last updated"):
        table.add_column(heading, justify="left" if heading in ("Broker", "Last updated") else "right")
    for queue in status.queues:
        table.add_row(
            cell(queue.broker_name),
            cell(queue.queue_id),
            cell(queue.min_offset),
            cell(queue.max_offset),
            cell(queue.messages),
            cell(timestamp(queue.last_updated_ms)),
        )
    caption = f"{status.total_messages} messages in {len(status.queues)} queues"
    if status.put_tps is not None:
        caption += f"; put TPS {status.put_tps:.1f}"
    table.caption = caption
    return table


def progress_table(progress: ConsumerProgress) -> Table:
    table = Table(title=f"Progress of {progress.group}", title_justify="left")
    for heading in ("Topic", "Broker", "QID", "Broker offset", "Consumer offset", "Lag", "Last consumed"):
        table.add_column(
            heading, justify="right" if heading in ("QID", "Lag") or "offset" in heading else "left"
        )
    for queue in progress.queues:
        table.add_row(
            cell(queue.topic),
            cell(queue.broker_name),
            cell(queue.queue_id),
            cell(queue.broker_offset),
            cell(queue.consumer_offset),
            cell(queue.lag),
            cell(timestamp(queue.last_timestamp_ms)),
        )
    table.caption = f"consume TPS {progress.consume_tps:.2f}; total lag {progress.total_lag}"
    return table


# -- messages -------------------------------------------------------------------------------------------


def body_text(body: bytes) -> str | None:
    """The body as text when it is UTF-8, else ``None``."""
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError:
        return None


def message_json(message: MessageExt) -> dict[str, Any]:
    text = body_text(message.body)
    return {
        "msg_id": message.client_msg_id,
        "unique_id": message.unique_id,
        "offset_msg_id": message.msg_id,
        "topic": message.topic,
        "tags": message.tags,
        "keys": message.keys,
        "queue_id": message.queue_id,
        "queue_offset": message.queue_offset,
        "commit_log_offset": message.commit_log_offset,
        "reconsume_times": message.reconsume_times,
        "born_timestamp": message.born_timestamp,
        "store_timestamp": message.store_timestamp,
        "born_host": message.born_host,
        "store_host": message.store_host,
        "sys_flag": message.sys_flag,
        "properties": dict(message.properties),
        "body": text,
        "body_base64": None if text is not None else base64.b64encode(message.body).decode("ascii"),
    }


def message_detail(message: MessageExt, *, body_limit: int = 2048) -> Table:
    """One message as mqadmin ``queryMsgById`` lays it out: one field a line."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    text = body_text(message.body)
    if text is None:
        body = f"<{len(message.body)} bytes, not UTF-8>"
    elif len(text) > body_limit:
        body = text[:body_limit] + f"... ({len(message.body)} bytes)"
    else:
        body = text
    rows: list[tuple[str, object]] = [
        ("Message ID", message.client_msg_id),
        ("Offset message ID", message.msg_id),
        ("Topic", message.topic),
        ("Tags", message.tags or ""),
        ("Keys", " ".join(message.keys)),
        ("Queue ID", message.queue_id),
        ("Queue offset", message.queue_offset),
        ("Commit-log offset", message.commit_log_offset),
        ("Reconsume times", message.reconsume_times),
        ("Born", f"{timestamp(message.born_timestamp)}  from {message.born_host}"),
        ("Stored", f"{timestamp(message.store_timestamp)}  on {message.store_host}"),
        ("System flag", message.sys_flag),
        ("Properties", ", ".join(f"{k}={v}" for k, v in message.properties.items())),
        ("Body", body),
    ]
    for name, value in rows:
        table.add_row(name, cell(value))
    return table


def messages_table(messages: list[MessageExt]) -> Table:
    table = Table()
    for heading in ("Message ID", "Stored on", "QID", "Offset", "Tags", "Keys", "Stored at"):
        table.add_column(heading, justify="right" if heading in ("QID", "Offset") else "left")
    for message in messages:
        table.add_row(
            cell(message.client_msg_id),
            cell(message.store_host),
            cell(message.queue_id),
            cell(message.queue_offset),
            cell(message.tags or ""),
            cell(" ".join(message.keys)),
            cell(timestamp(message.store_timestamp)),
        )
    return table
