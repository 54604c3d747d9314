"""The broker's Prometheus exposition under Apache 5.5.0's metric names, labels and units.

Apache's broker builds its figures with OpenTelemetry and, with ``metricsExporterType=PROM``, serves them
through the OpenTelemetry Prometheus exporter. That exporter appends a metric's unit (``_milliseconds``,
``_bytes``) to its name, keeps counters' ``_total``, sorts labels by name and adds the common labels
(``cluster``, ``node_id``, ``node_type``) and ``otel_scope_name="broker-meter"`` to every series. This module
renders the same names from the broker's own state, read at scrape time: the send and pull paths only add
to plain counters in :class:`~broker.stats.BrokerStats`, so they allocate no label sets; the families of the
broker's services (request timing, transactions, timer, POP) are in :mod:`broker.metrics_services`.
docs/observability.md lists every metric Apache exports and which of them the project does.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from broker import metrics_services
from broker.clients import ConsumerManager, ProducerManager
from broker.clock import Clock
from broker.config import BrokerConfig
from broker.flow_control import SendFlowControl
from broker.parts import BrokerParts
from broker.pop.service import PopService
from broker.stats import MESSAGE_SIZE_BOUNDS, BrokerStats
from broker.store import ConsumerOffsetStore, MessageStore
from broker.subscription_groups import SubscriptionGroupManager
from broker.timer import TimerMessageService
from broker.topic_config_manager import TopicConfigManager
from broker.transaction_metrics import TransactionMetrics
from nameserver.metrics_http import (
    SCOPE_LABEL,
    LabelledFamilies,
    MetricsEndpoint,
    MetricsExporterType,
    target_info,
    with_series,
)
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.topics import is_retry_topic, is_system_resource, is_system_topic

log = logging.getLogger("broker.metrics")

#: The OpenTelemetry meter Apache's broker records under (``otel_scope_name``).
BROKER_METER = "broker-meter"
_STORE_LABELS = metrics_services.STORE_LABELS
_GAUGE_HELP = "default view for gauge."
_COUNTER_HELP = "default view for counter."
_CONSUME_MODES = {"CONSUME_PASSIVELY": "push", "CONSUME_ACTIVELY": "pull", "CONSUME_POP": "pop"}


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _is_system(topic: str, group: str) -> bool:
    return is_system_topic(topic) or is_system_resource(group)


class BrokerMetrics:
    """A ``prometheus_client`` collector over one broker's parts (registered on that broker's endpoint)."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        clock: Clock,
        stats: BrokerStats,
        store: MessageStore,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetStore,
        consumers: ConsumerManager,
        producers: ProducerManager,
        send_flow_control: SendFlowControl,
        transactions: TransactionMetrics,
        timer: TimerMessageService,
        pop: PopService,
    ) -> None:
        self._config = config
        self._clock = clock
        self._stats = stats
        self._store = store
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._consumers = consumers
        self._producers = producers
        self._send_flow_control = send_flow_control
        self._transactions = transactions
        self._timer = timer
        self._pop = pop

    def _families(self) -> LabelledFamilies:
        config = self._config
        return LabelledFamilies(
            {
                "cluster": config.broker_cluster_name,
                "node_id": config.broker_name,
                "node_type": "broker",
                SCOPE_LABEL: BROKER_METER,
            }
        )

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        yield from with_series(self._broker(families))
        yield from with_series(self._traffic(families))
        yield from with_series(self._connections(families))
        yield from with_series(self._consumer_lag(families))
        yield from with_series(self._storage(families))
        yield from with_series(metrics_services.requests(families, self._stats))
        yield from with_series(metrics_services.transactions(families, self._transactions))
        yield from with_series(metrics_services.timer(families, self._timer))
        yield from with_series(metrics_services.pop(families, self._pop))
        yield target_info()

    def _broker(self, f: LabelledFamilies) -> Iterator[Metric]:
        yield f.gauge("rocketmq_broker_permission", _GAUGE_HELP, [({}, self._config.broker_permission)], [])
        yield f.gauge("rocketmq_topic_number", _GAUGE_HELP, [({}, len(self._topics.all()))], [])
        yield f.gauge("rocketmq_consumer_group_number", _GAUGE_HELP, [({}, len(self._groups.groups()))], [])
        # Apache reports the queue of each of its thread pools; this broker's only request queue is the
        # send gate's (every other request is served on the event loop as it arrives).
        yield f.gauge(
            "rocketmq_processor_watermark",
            _GAUGE_HELP,
            [({"processor": "send"}, self._send_flow_control.queued)],
            ["processor"],
        )

    def _traffic(self, f: LabelledFamilies) -> Iterator[Metric]:
        in_keys = ["is_system", "message_type", "topic"]
        rows = [
            ({"is_system": _flag(is_system_topic(topic)), "message_type": kind, "topic": topic}, row)
            for (topic, kind), row in list(self._stats.topic_in.items())
        ]
        yield f.counter("rocketmq_messages_in_total", _COUNTER_HELP, [(lb, r[0]) for lb, r in rows], in_keys)
        yield f.counter(
            "rocketmq_throughput_in_total", _COUNTER_HELP, [(lb, r[1]) for lb, r in rows], in_keys
        )
        yield f.histogram(
            "rocketmq_message_size",
            "Incoming messages size",
            MESSAGE_SIZE_BOUNDS,
            [(lb, r[3:], float(r[1] // r[0] * r[2] if r[0] else 0)) for lb, r in rows],
            in_keys,
        )
        out_keys = ["consumer_group", "is_system", "topic"]
        outs = [
            ({"consumer_group": group, "is_system": _flag(_is_system(topic, group)), "topic": topic}, row)
            for (group, topic), row in list(self._stats.group_out.items())
            if not is_retry_topic(topic)
        ]
        # Pulls' series have no is_retry; POP's have it (Apache records them so), hence rows of their own.
        for column, name in enumerate(("rocketmq_messages_out_total", "rocketmq_throughput_out_total")):
            out_rows: list[tuple[dict[str, str], float]] = [(lb, float(r[column])) for lb, r in outs]
            out_rows += metrics_services.pop_out_rows(self._stats, column)
            yield f.counter_rows(name, _COUNTER_HELP, out_rows)
        dead = [
            ({"consumer_group": group, "is_system": _flag(_is_system(topic, group)), "topic": topic}, count)
            for (group, topic), count in list(self._stats.dead_lettered.items())
        ]
        yield f.counter("rocketmq_send_to_dlq_messages_total", _COUNTER_HELP, dead, out_keys)

    def _connections(self, f: LabelledFamilies) -> Iterator[Metric]:
        producers: dict[tuple[str, str], int] = {}
        for members in self._producers.table().values():
            for member in members:
                key = (member.language.lower(), MQVersion.name_of(member.version).lower())
                producers[key] = producers.get(key, 0) + 1
        yield f.gauge(
            "rocketmq_producer_connections",
            _GAUGE_HELP,
            [
                ({"language": lang, "protocol_type": "remoting", "version": version}, count)
                for (lang, version), count in producers.items()
            ],
            ["language", "protocol_type", "version"],
        )
        consumers: dict[tuple[str, str, str, str], int] = {}
        for group, info in list(self._consumers.groups().items()):
            mode = _CONSUME_MODES.get(info.consume_type or "", "push")
            for member in list(info.channels.values()):
                slot = (group, mode, member.language.lower(), MQVersion.name_of(member.version).lower())
                consumers[slot] = consumers.get(slot, 0) + 1
        keys = ["consume_mode", "consumer_group", "is_system", "language", "protocol_type", "version"]
        yield f.gauge(
            "rocketmq_consumer_connections",
            _GAUGE_HELP,
            [
                (
                    {
                        "consume_mode": mode,
                        "consumer_group": group,
                        "is_system": _flag(is_system_resource(group)),
                        "language": lang,
                        "protocol_type": "remoting",
                        "version": version,
                    },
                    count,
                )
                for (group, mode, lang, version), count in consumers.items()
            ],
            keys,
        )

    def _consumer_lag(self, f: LabelledFamilies) -> Iterator[Metric]:
        """Per group and topic, from the committed offsets, the queues' ends and the groups' pull offsets."""
        store, pulls, now = self._store, self._stats.pull_offsets, self._clock.now_ms()
        lag_rows: list[tuple[dict[str, str], tuple[int, int, int, int, int]]] = []
        for (topic, group), queues in self._offsets.table().items():
            lag = inflight = ready = 0
            oldest_unacked = oldest_ready = -1
            for queue_id, committed in queues.items():
                end = store.get_max_offset(topic, queue_id)
                pulled = max(committed, pulls.get((group, topic, queue_id), committed))
                pulled = min(pulled, end)
                lag += max(0, end - committed)
                inflight += max(0, pulled - committed)
                ready += max(0, end - pulled)
                if end > committed:
                    stamp = store.get_store_time(topic, queue_id, committed)
                    if stamp >= 0 and (oldest_unacked < 0 or stamp < oldest_unacked):
                        oldest_unacked = stamp
                if end > pulled:
                    stamp = store.get_store_time(topic, queue_id, pulled)
                    if stamp >= 0 and (oldest_ready < 0 or stamp < oldest_ready):
                        oldest_ready = stamp
            labels = {
                "consumer_group": group,
                "is_retry": _flag(is_retry_topic(topic)),
                "is_system": _flag(_is_system(topic, group)),
                "topic": topic,
            }
            lag_latency = now - oldest_unacked if oldest_unacked >= 0 else 0
            queueing = now - oldest_ready if oldest_ready >= 0 else 0
            lag_rows.append((labels, (lag, inflight, ready, max(0, lag_latency), max(0, queueing))))
        keys = ["consumer_group", "is_retry", "is_system", "topic"]
        names = (
            "rocketmq_consumer_lag_messages",
            "rocketmq_consumer_inflight_messages",
            "rocketmq_consumer_ready_messages",
            "rocketmq_consumer_lag_latency_milliseconds",
            "rocketmq_consumer_queueing_latency_milliseconds",
        )
        for index, name in enumerate(names):
            yield f.gauge(name, _GAUGE_HELP, [(lb, v[index]) for lb, v in lag_rows], keys)

    def _storage(self, f: LabelledFamilies) -> Iterator[Metric]:
        store, keys = self._store, sorted(_STORE_LABELS)
        try:  # Apache: the used space of the disk holding the store
            usage = shutil.disk_usage(self._config.store_path_root_dir)
            used = [(_STORE_LABELS, float(usage.total - usage.free))]
        except OSError:
            used = []
        yield f.gauge("rocketmq_storage_size_bytes", _GAUGE_HELP, used, keys)
        flush_behind = max(0, store.max_physical_offset - store.flushed_physical_offset)
        yield f.gauge(
            "rocketmq_storage_flush_behind_bytes", _GAUGE_HELP, [(_STORE_LABELS, flush_behind)], keys
        )
        yield f.gauge(
            "rocketmq_storage_dispatch_behind_bytes",
            _GAUGE_HELP,
            [(_STORE_LABELS, store.dispatch_behind_bytes)],
            keys,
        )
        earliest = store.earliest_store_time()
        reserve = max(0, self._clock.now_ms() - earliest) if earliest > 0 else 0
        yield f.gauge(
            "rocketmq_storage_message_reserve_time_milliseconds",
            _GAUGE_HELP,
            [(_STORE_LABELS, reserve)],
            keys,
        )


def start_metrics(parts: BrokerParts) -> MetricsEndpoint | None:
    """The broker's ``/metrics`` when ``metricsExporterType=PROM``; ``None`` when metrics are off.

    OTLP_GRPC and LOG are Apache's too, but this broker has no OpenTelemetry SDK: it says so and exports
    nothing rather than pretend. A port that cannot be bound raises (``OSError``).
    """
    config = parts.config
    kind = MetricsExporterType.parse(config.metrics_exporter_type)
    if kind is MetricsExporterType.DISABLE:
        return None
    if kind is not MetricsExporterType.PROM:
        log.warning("metricsExporterType=%s is not supported (only PROM is): no metrics exported", kind.name)
        return None
    collector = BrokerMetrics(
        config=config,
        clock=parts.clock,
        stats=parts.stats,
        store=parts.storage.store,
        topics=parts.metadata.topics,
        groups=parts.metadata.groups,
        offsets=parts.metadata.offsets,
        consumers=parts.clients.consumers,
        producers=parts.clients.producers,
        send_flow_control=parts.services.send_flow_control,
        transactions=parts.storage.transactions.metrics,
        timer=parts.storage.timer,
        pop=parts.services.pop,
    )
    endpoint = MetricsEndpoint(collector)
    endpoint.start(config.metrics_prom_exporter_host, config.metrics_prom_exporter_port)
    return endpoint
