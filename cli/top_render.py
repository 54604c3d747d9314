"""What ``rmq top`` draws from a cluster snapshot: brokers, the busiest topics, groups by lag."""

from __future__ import annotations

import dataclasses
import enum
import time

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from admin.snapshot import ClusterSnapshot


class SortBy(enum.Enum):
    """Order of the topic and group tables; each has its key in ``rmq top``."""

    RATE = "r"
    LAG = "l"
    NAME = "n"


@dataclasses.dataclass(frozen=True, slots=True)
class TopicRow:
    topic: str
    offset: int
    #: Messages per second put since the previous snapshot (0 on the first).
    in_tps: float


def topic_rows(previous: ClusterSnapshot | None, current: ClusterSnapshot) -> list[TopicRow]:
    """Per-topic put rates from the growth of the topic's offsets between two snapshots."""
    now: dict[str, int] = {}
    for (_, _, topic), offset in current.topic_offsets().items():
        now[topic] = now.get(topic, 0) + offset
    before: dict[str, int] = {}
    if previous is not None:
        for (_, _, topic), offset in previous.topic_offsets().items():
            before[topic] = before.get(topic, 0) + offset
    span = current.taken_at - previous.taken_at if previous is not None else 0.0
    return [
        TopicRow(topic, offset, (offset - before.get(topic, offset)) / span if span > 0 else 0.0)
        for topic, offset in now.items()
    ]


def _sorted_topics(rows: list[TopicRow], sort: SortBy) -> list[TopicRow]:
    if sort is SortBy.NAME:
        return sorted(rows, key=lambda r: r.topic)
    if sort is SortBy.LAG:
        return sorted(rows, key=lambda r: (-r.offset, r.topic))
    return sorted(rows, key=lambda r: (-r.in_tps, -r.offset, r.topic))


def render(
    previous: ClusterSnapshot | None, current: ClusterSnapshot, sort: SortBy, *, limit: int = 10
) -> RenderableType:
    """The whole screen for one refresh."""
    header = Text(
        f"rmq top  {time.strftime('%H:%M:%S', time.localtime(current.taken_at))}  "
        f"read in {current.elapsed * 1000:.0f} ms  sort: {sort.name.lower()}  "
        "[r]ate [l]ag [n]ame  [q]uit"
    )
    brokers = Table(title="Brokers", expand=True)
    for column in ("cluster", "broker", "address", "in TPS", "out TPS", "put today", "get today"):
        brokers.add_column(column, justify="right" if "TPS" in column or "today" in column else "left")
    for b in sorted(current.brokers, key=lambda b: (b.cluster, b.broker_name)):
        brokers.add_row(
            Text(b.cluster),
            Text(b.broker_name),
            Text(b.addr),
            f"{b.rate('putTps'):.1f}",
            f"{b.rate('getTransferedTps'):.1f}",
            f"{b.number('msgPutTotalTodayNow'):.0f}",
            f"{b.number('msgGetTotalTodayNow'):.0f}",
        )
    for addr, reason in current.failures.items():
        brokers.add_row("", "", Text(addr), Text(f"unanswered: {reason}"), "", "", "")

    topics = Table(title="Topics", expand=True)
    for column in ("topic", "in TPS", "messages"):
        topics.add_column(column, justify="left" if column == "topic" else "right")
    for row in _sorted_topics(topic_rows(previous, current), sort)[:limit]:
        topics.add_row(Text(row.topic), f"{row.in_tps:.1f}", str(row.offset))

    groups = Table(title="Groups", expand=True)
    for column in ("group", "topic", "lag", "consume TPS", "online"):
        groups.add_column(column, justify="left" if column in ("group", "topic") else "right")
    tps: dict[tuple[str, str], float] = {}
    for p in current.progress:
        tps[(p.group, p.topic)] = tps.get((p.group, p.topic), 0.0) + p.consume_tps
    lags = current.group_diffs()
    if sort is SortBy.NAME:
        order = sorted(lags, key=lambda k: k)
    elif sort is SortBy.RATE:
        order = sorted(lags, key=lambda k: (-tps.get(k, 0.0), -lags[k], k))
    else:
        order = sorted(lags, key=lambda k: (-lags[k], k))
    for group, topic in order[:limit]:
        online = current.members.get(group, (0, ""))[0]
        groups.add_row(
            Text(group),
            Text(topic),
            str(lags[(group, topic)]),
            f"{tps.get((group, topic), 0.0):.1f}",
            str(online),
        )
    return Group(header, brokers, topics, groups)
