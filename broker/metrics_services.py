"""The broker's metric families that come from its services rather than its traffic counters: request
timings, topic and group creation, transactions, the timer wheel and POP (Apache's ``RemotingMetricsManager``,
the transaction part of ``BrokerMetricsManager``, ``DefaultStoreMetricsManager``'s timer part and
``PopMetricsManager``).

Every figure is read from state the services keep anyway or from plain counters they add to; labels are
built here, at scrape time. Where the project's design has no counterpart of an Apache figure, the family
says what corresponds, and docs/observability.md says how.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from broker.histogram import HistogramTable
from broker.pop.service import PopService
from broker.processors.pop import REVIVE_QUEUE_NUM
from broker.stats import BrokerStats
from broker.timer import SNAPSHOT_BOUNDS_S, TimerMessageService
from broker.transaction_metrics import TransactionMetrics
from nameserver.metrics_http import LabelledFamilies
from rocketmq_wire.topics import is_system_resource, is_system_topic

_GAUGE_HELP = "default view for gauge."
_COUNTER_HELP = "default view for counter."
#: The store's figures carry these two labels in Apache, always with these values for a local disk store.
STORE_LABELS = {"storage_medium": "disk", "storage_type": "local"}


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _topic_histogram(
    f: LabelledFamilies, name: str, help_text: str, table: HistogramTable[tuple[str]], extra: dict[str, str]
) -> Metric:
    rows = [({"topic": topic, **extra}, b.counts, b.total) for (topic,), b in table.items()]
    return f.histogram(name, help_text, table.bounds, rows, ["topic", *extra])


def requests(f: LabelledFamilies, stats: BrokerStats) -> Iterator[Metric]:
    """Request timings and the admin creation timings."""
    rpc = stats.rpc_latency
    keys = ["is_long_polling", "protocol_type", "request_code", "response_code", "result"]
    yield f.histogram(
        "rocketmq_rpc_latency_milliseconds", "Rpc latency", rpc.table.bounds, rpc.series(), keys
    )
    topics = stats.topic_create
    yield f.histogram(
        "rocketmq_topic_create_execution_time_milliseconds",
        "The distribution of create topic time",
        topics.bounds,
        [
            ({"invocation_status": status, "is_system": system}, b.counts, b.total)
            for (status, system), b in topics.items()
        ],
        ["invocation_status", "is_system"],
    )
    groups = stats.group_create
    yield f.histogram(
        "rocketmq_consumer_group_create_execution_time_milliseconds",
        "The distribution of create subscription time",
        groups.bounds,
        [({"invocation_status": status}, b.counts, b.total) for (status,), b in groups.items()],
        ["invocation_status"],
    )


def transactions(f: LabelledFamilies, metrics: TransactionMetrics) -> Iterator[Metric]:
    for name, table in (
        ("rocketmq_commit_messages_total", metrics.commits),
        ("rocketmq_rollback_messages_total", metrics.rollbacks),
    ):
        yield f.counter(name, _COUNTER_HELP, [({"topic": t}, n) for t, n in list(table.items())], ["topic"])
    yield _topic_histogram(
        f,
        "rocketmq_finish_message_latency_milliseconds",
        "Transaction finish latency",
        metrics.finish_latency,
        {},
    )
    half = [({"topic": topic}, count) for topic, count in list(metrics.half.items())]
    yield f.gauge("rocketmq_half_messages", _GAUGE_HELP, half, ["topic"])


def timer(f: LabelledFamilies, service: TimerMessageService) -> Iterator[Metric]:
    """Apache registers these only with the timer wheel on; so does this."""
    if not service.settings.wheel_enable():
        return
    store_keys = sorted(STORE_LABELS)
    enqueue_lag, enqueue_latency = service.enqueue_behind()
    dequeue_lag, dequeue_latency = service.dequeue_behind()
    for name, value in (
        ("rocketmq_timer_enqueue_lag", enqueue_lag),
        ("rocketmq_timer_enqueue_latency_milliseconds", enqueue_latency),
        ("rocketmq_timer_dequeue_lag", dequeue_lag),
        ("rocketmq_timer_dequeue_latency_milliseconds", dequeue_latency),
    ):
        yield f.gauge(name, _GAUGE_HELP, [(STORE_LABELS, value)], store_keys)
    topic_keys = ["topic", *store_keys]
    timing = [
        ({"topic": topic, **STORE_LABELS}, count) for topic, (count, _) in list(service.timing_count.items())
    ]
    yield f.gauge("rocketmq_timing_messages", _GAUGE_HELP, timing, topic_keys)
    for name, table in (
        ("rocketmq_timer_enqueue_total", service.enqueued),
        ("rocketmq_timer_dequeue_total", service.dequeued),
    ):
        rows = [({"topic": topic, **STORE_LABELS}, count) for topic, count in list(table.items())]
        yield f.counter(name, _COUNTER_HELP, rows, topic_keys)
    windows = service.due_within(SNAPSHOT_BOUNDS_S)
    yield f.gauge(
        "rocketmq_timer_message_snapshot",
        _GAUGE_HELP,
        [
            ({"timer_bound_s": str(bound), **STORE_LABELS}, n)
            for bound, n in zip(SNAPSHOT_BOUNDS_S, windows, strict=True)
        ],
        ["timer_bound_s", *store_keys],
    )
    yield _topic_histogram(
        f,
        "rocketmq_delay_message_latency_seconds",
        "Timer message set latency distribution",
        service.set_latency,
        STORE_LABELS,
    )


def pop(f: LabelledFamilies, service: PopService) -> Iterator[Metric]:
    scan = service.scan_time
    series = scan.get(())
    yield f.histogram(
        "rocketmq_pop_buffer_scan_time_consume_milliseconds",
        "Time consuming of pop buffer scan",
        scan.bounds,
        [] if series is None else [({}, series.counts, series.total)],
        [],
    )
    # Apache merges checkpoints and acks in a memory buffer before writing them (when enabled); this broker
    # writes each to its checkpoint table before answering, so nothing is ever buffered.
    yield f.gauge("rocketmq_pop_checkpoint_buffer_size", _GAUGE_HELP, [({}, 0)], [])
    yield f.gauge("rocketmq_pop_offset_buffer_size", _GAUGE_HELP, [({}, 0)], [])
    yield f.counter(
        "rocketmq_pop_revive_in_message_total",
        _COUNTER_HELP,
        [
            ({"consumer_group": g, "put_status": status, "revive_message_type": kind, "topic": t}, n)
            for (g, t, kind, status), n in list(service.revive_in.items())
        ],
        ["consumer_group", "put_status", "revive_message_type", "topic"],
    )
    yield f.counter(
        "rocketmq_pop_revive_out_message_total",
        _COUNTER_HELP,
        [
            ({"consumer_group": g, "queue_id": str(q), "revive_message_type": kind, "topic": t}, n)
            for (g, t, q, kind), n in list(service.revive_out.items())
        ],
        ["consumer_group", "queue_id", "revive_message_type", "topic"],
    )
    yield f.counter(
        "rocketmq_pop_revive_retry_messages_total",
        _COUNTER_HELP,
        [
            ({"consumer_group": g, "put_status": status, "topic": t}, n)
            for (g, t, status), n in list(service.revive_retry.items())
        ],
        ["consumer_group", "put_status", "topic"],
    )
    behind = service.revive_behind(range(REVIVE_QUEUE_NUM))
    for index, name in enumerate(
        ("rocketmq_pop_revive_lag_milliseconds", "rocketmq_pop_revive_latency_milliseconds")
    ):
        rows = [({"queue_id": str(q)}, figures[index]) for q, figures in sorted(behind.items())]
        yield f.gauge(name, _GAUGE_HELP, rows, ["queue_id"])


def pop_out_rows(stats: BrokerStats, column: int) -> list[tuple[dict[str, str], float]]:
    """POP's share of ``rocketmq_messages_out_total`` (column 0) or ``..._throughput_out_total`` (1): as
    Apache's, under the popped topic with ``is_retry`` saying whether it came from the POP retry topic."""
    return [
        (
            {
                "consumer_group": group,
                "is_retry": _flag(retry),
                "is_system": _flag(is_system_topic(topic) or is_system_resource(group)),
                "topic": topic,
            },
            row[column],
        )
        for (group, topic, retry), row in list(stats.pop_out.items())
    ]
