"""``rmq top``'s figures from two snapshots: topic rates from offset growth, the three orders."""

from __future__ import annotations

from rich.console import Console

from admin.snapshot import BrokerReading, ClusterSnapshot, GroupTopicProgress
from cli.top_render import SortBy, render, topic_rows


def _snapshot(taken_at: float, offsets: dict[str, int], lags: dict[str, int]) -> ClusterSnapshot:
    progress = tuple(
        GroupTopicProgress("c", "b", f"G-{topic}", topic, offset, offset - lags.get(topic, 0), 0.0, 0)
        for topic, offset in offsets.items()
    )
    broker = BrokerReading("c", "b", "127.0.0.1:1", {"putTps": "12.5 3.0 1.0", "getTransferedTps": "4.0 0 0"})
    return ClusterSnapshot(taken_at, (broker,), progress, {}, 0.01)


def test_topic_rates_come_from_offset_growth_between_two_readings() -> None:
    before = _snapshot(100.0, {"A": 10, "B": 50}, {})
    after = _snapshot(102.0, {"A": 30, "B": 51}, {})
    rows = {r.topic: r for r in topic_rows(before, after)}
    assert (rows["A"].in_tps, rows["B"].in_tps) == (10.0, 0.5)
    assert all(r.in_tps == 0.0 for r in topic_rows(None, after))


def _lines(sort: SortBy) -> list[str]:
    before = _snapshot(100.0, {"Aslow": 10, "Bfast": 10, "Clag": 10}, {})
    after = _snapshot(101.0, {"Aslow": 11, "Bfast": 40, "Clag": 12}, {"Clag": 9, "Aslow": 1})
    console = Console(width=140, record=True)
    console.print(render(before, after, sort))
    return console.export_text().splitlines()


def _order(lines: list[str], names: list[str], table: str) -> list[str]:
    start = next(i for i, line in enumerate(lines) if table in line)
    rows = [line for line in lines[start:] if any(f" {n} " in f" {line} " for n in names)]
    return [next(n for n in names if f" {n} " in f" {row} ") for row in rows][: len(names)]


def test_sort_keys_order_the_tables() -> None:
    topics = ["Aslow", "Bfast", "Clag"]
    groups = ["G-Aslow", "G-Bfast", "G-Clag"]
    assert _order(_lines(SortBy.RATE), topics, "Topics") == ["Bfast", "Clag", "Aslow"]
    assert _order(_lines(SortBy.NAME), topics, "Topics") == ["Aslow", "Bfast", "Clag"]
    assert _order(_lines(SortBy.LAG), groups, "Groups") == ["G-Clag", "G-Aslow", "G-Bfast"]
    header = _lines(SortBy.LAG)[0]
    assert "sort: lag" in header
    broker_row = next(line for line in _lines(SortBy.LAG) if "127.0.0.1:1" in line)
    assert "12.5" in broker_row and "4.0" in broker_row
