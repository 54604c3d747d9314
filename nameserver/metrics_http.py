"""Serving a server's Prometheus exposition over HTTP, shared by the NameServer and the broker.

Apache's servers export through OpenTelemetry's Prometheus exporter when ``metricsExporterType=PROM``; the
project serves the same text with ``prometheus_client``. Each server owns a :class:`MetricsEndpoint` with a
registry of its own (never the library's global one), so two servers in one process each export only their
own figures. The figures are read at scrape time by a collector, so serving costs nothing between scrapes.

It lives in ``nameserver/`` because both servers may import it there (the broker may import the NameServer,
not the other way round) and it is no part of the protocol.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

log = logging.getLogger("metrics.http")

#: The label OpenTelemetry's exporter adds to every series: the name of the meter that made it.
SCOPE_LABEL = "otel_scope_name"


class MetricsExporterType(enum.Enum):
    """Apache's ``metricsExporterType`` values; only ``PROM`` (and ``DISABLE``, the default) are served."""

    DISABLE = 0
    OTLP_GRPC = 1
    PROM = 2
    LOG = 3

    @classmethod
    def parse(cls, value: str | int) -> MetricsExporterType:
        """Apache takes the name or the ordinal; anything else is refused, as its enum lookup would be."""
        text = str(value).strip()
        try:
            return cls(int(text)) if text.isdigit() else cls[text.upper()]
        except (KeyError, ValueError):
            names = ", ".join(kind.name for kind in cls)
            raise ValueError(f"metricsExporterType {text!r} is not one of {names}") from None


class LabelledFamilies:
    """Builds metric families whose series all carry the server's common labels, in Apache's order.

    OpenTelemetry's exporter sorts a series' labels by name; the common labels (``cluster``, ``node_id``,
    ``node_type``, ``otel_scope_name``) are merged with each series' own before sorting.
    """

    def __init__(self, common: Mapping[str, str]) -> None:
        self._common = dict(common)

    def _keys(self, own: Sequence[str]) -> list[str]:
        return sorted({*self._common, *own})

    def _values(self, keys: Sequence[str], own: Mapping[str, str]) -> list[str]:
        merged = {**self._common, **own}
        return [merged[key] for key in keys]

    def gauge(
        self, name: str, help_text: str, series: Iterable[tuple[Mapping[str, str], float]], own: Sequence[str]
    ) -> GaugeMetricFamily:
        keys = self._keys(own)
        family = GaugeMetricFamily(name, help_text, labels=keys)
        for labels, value in series:
            family.add_metric(self._values(keys, labels), value)
        return family

    def counter(
        self, name: str, help_text: str, series: Iterable[tuple[Mapping[str, str], float]], own: Sequence[str]
    ) -> CounterMetricFamily:
        """``name`` as Apache spells it, ending in ``_total``; the library adds the suffix back on output."""
        keys = self._keys(own)
        family = CounterMetricFamily(name.removesuffix("_total"), help_text, labels=keys)
        for labels, value in series:
            family.add_metric(self._values(keys, labels), value)
        return family

    def counter_rows(
        self, name: str, help_text: str, series: Iterable[tuple[Mapping[str, str], float]]
    ) -> CounterMetricFamily:
        """A counter whose series need not share their label keys, as an OpenTelemetry instrument's
        needn't (Apache's ``rocketmq_messages_out_total`` has ``is_retry`` on POP's series only)."""
        family = CounterMetricFamily(name.removesuffix("_total"), help_text)
        for labels, value in series:
            merged = {**self._common, **labels}
            ordered = {key: merged[key] for key in sorted(merged)}
            family.samples.append(Sample(family.name + "_total", ordered, value, None))
        return family

    def histogram(
        self,
        name: str,
        help_text: str,
        bounds: Sequence[float],
        series: Iterable[tuple[Mapping[str, str], Sequence[int], float]],
        own: Sequence[str],
    ) -> HistogramMetricFamily:
        """``series``: labels, the count in each bucket (``len(bounds) + 1`` of them, the last past every
        bound, not cumulative) and the sum of the observations."""
        keys = self._keys(own)
        family = HistogramMetricFamily(name, help_text, labels=keys)
        for labels, counts, total in series:
            running = 0
            buckets: list[tuple[str, float]] = []
            for bound, count in zip([*map(float, bounds), float("inf")], counts, strict=True):
                running += count
                buckets.append(("+Inf" if bound == float("inf") else repr(bound), running))
            family.add_metric(self._values(keys, labels), buckets, total)
        return family


def with_series(families: Iterable[Metric]) -> Iterator[Metric]:
    """The families that have a series: OpenTelemetry's exporter writes no HELP/TYPE for an empty one (no
    producer connected: no ``rocketmq_producer_connections`` at all), so neither does this."""
    return (family for family in families if family.samples)


def target_info() -> GaugeMetricFamily:
    """OpenTelemetry's ``target_info 1``: Apache's exposition always carries it (with no labels)."""
    family = GaugeMetricFamily("target_info", "Target metadata")
    family.add_metric([], 1)
    return family


class MetricsEndpoint:
    """One server's ``/metrics`` on ``host:port``, served from a daemon thread."""

    def __init__(self, collector: Collector) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(collector)
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the one asked for, or the system's choice for 0); 0 when not serving."""
        return self._server.server_port if self._server is not None else 0

    def start(self, host: str, port: int) -> None:
        """Bind and serve; raises ``OSError`` when the port cannot be had (the server must not start
        pretending to export)."""
        self._server, self._thread = start_http_server(port, host or "0.0.0.0", registry=self.registry)
        log.info("metrics served on http://%s:%d/metrics", host or "0.0.0.0", self.port)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def collect(self) -> list[Metric]:
        """What a scrape would read now (for tests and in-process readers)."""
        return list(self.registry.collect())
