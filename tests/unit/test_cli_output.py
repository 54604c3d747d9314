"""The pieces the commands print with: send statistics, JSON conversion, message rendering."""

from __future__ import annotations

import base64
import enum
import io

from rich.console import Console

from admin import QueueOffsets, TopicStatus
from cli.common import to_plain
from cli.render import message_detail, message_json, route_json, timestamp, topic_status_table
from cli.send_stats import SendStats, percentile
from rocketmq_wire.bodies import BrokerData, QueueData, TopicRouteData
from rocketmq_wire.message import MessageExt, encode_properties


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([], 0.5) == 0.0


def test_send_stats_summary() -> None:
    stats = SendStats()
    for latency_ms in (1, 2, 3, 4):
        stats.record(latency_ms / 1000, messages=2, body_bytes=2 * 1024 * 1024)
    stats.record_failure(1, "first")
    stats.record_failure(1, "second")
    summary = stats.summary(elapsed_s=2.0)
    assert (summary.sent, summary.failed, summary.first_error) == (8, 2, "first")
    assert summary.msgs_per_s == 4.0
    assert summary.mb_per_s == 4.0
    assert (summary.latency_p50_ms, summary.latency_p99_ms, summary.latency_max_ms) == (2.0, 4.0, 4.0)
    assert SendStats().summary(0.0).msgs_per_s == 0.0


class _Colour(enum.Enum):
    RED = "red"


def test_to_plain_flattens_records_enums_and_tuples() -> None:
    status = TopicStatus("T", (QueueOffsets("b", 0, 1, 5, 0),), None)
    assert to_plain({"s": status, "c": _Colour.RED, 3: (1, 2)}) == {
        "s": {
            "topic": "T",
            "queues": [
                {"broker_name": "b", "queue_id": 0, "min_offset": 1, "max_offset": 5, "last_updated_ms": 0}
            ],
            "put_tps": None,
        },
        "c": "red",
        "3": [1, 2],
    }


def _message(body: bytes) -> MessageExt:
    return MessageExt(
        topic="T",
        body=body,
        properties_string=encode_properties({"TAGS": "[bold]x[/]", "KEYS": "a b", "UNIQ_KEY": "ABC"}),
        store_host="127.0.0.1:10911",
        commit_log_offset=225,
    )


def test_message_json_keeps_binary_bodies_whole() -> None:
    text = message_json(_message(b"plain text"))
    assert (text["body"], text["body_base64"], text["keys"], text["msg_id"]) == (
        "plain text",
        None,
        ["a", "b"],
        "ABC",
    )
    assert text["offset_msg_id"] == "7F00000100002A9F00000000000000E1"
    binary = message_json(_message(b"\xff\x00"))
    assert binary["body"] is None
    assert base64.b64decode(binary["body_base64"]) == b"\xff\x00"


def _render(renderable: object) -> str:
    sink = io.StringIO()
    Console(file=sink, width=200, highlight=False).print(renderable)
    return sink.getvalue()


def test_server_text_is_printed_literally_not_as_markup() -> None:
    shown = _render(message_detail(_message(b"[red]not red[/red]")))
    assert "[bold]x[/]" in shown
    assert "[red]not red[/red]" in shown


def test_status_table_and_timestamps() -> None:
    assert timestamp(0) == ""
    assert timestamp(1_700_000_000_123).endswith(",123")
    shown = _render(topic_status_table(TopicStatus("T", (QueueOffsets("broker-a", 3, 2, 9, 0),), 1.5)))
    assert "broker-a" in shown and "7 messages in 1 queues; put TPS 1.5" in shown


def test_route_json_is_strict_json_with_string_ids() -> None:
    route = TopicRouteData(
        queue_datas=[QueueData(broker_name="b", read_queue_nums=2, write_queue_nums=2, perm=6)],
        broker_datas=[BrokerData(cluster="C", broker_name="b", broker_addrs={0: "h:1", 1: "h:2"})],
    )
    data = route_json(route)
    assert data["brokerDatas"][0]["brokerAddrs"] == {"0": "h:1", "1": "h:2"}
    assert data["queueDatas"][0]["perm"] == 6
