"""The NameServer's Prometheus exposition (the project's own: Apache 5.5's NameServer exports none).

It follows the broker's conventions (docs/observability.md) so one dashboard reads both: the same common
labels, with ``node_type="namesrv"``, and figures read from the route tables at scrape time.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from prometheus_client.metrics_core import Metric

from nameserver.config import NamesrvConfig
from nameserver.metrics_http import (
    SCOPE_LABEL,
    LabelledFamilies,
    MetricsEndpoint,
    MetricsExporterType,
    target_info,
    with_series,
)
from nameserver.route_table import RouteInfoManager

log = logging.getLogger("nameserver.metrics")

NAMESRV_METER = "namesrv-meter"
_HELP = "default view for gauge."


class NamesrvMetrics:
    """A collector over one NameServer's route tables."""

    def __init__(self, routes: RouteInfoManager, node_id: str) -> None:
        self._routes = routes
        self._node_id = node_id

    def collect(self) -> Iterator[Metric]:
        families = LabelledFamilies(
            {"node_id": self._node_id, "node_type": "namesrv", SCOPE_LABEL: NAMESRV_METER}
        )
        yield from with_series(self._gauges(families))
        yield target_info()

    def _gauges(self, families: LabelledFamilies) -> Iterator[Metric]:
        routes = self._routes
        live: dict[str, int] = {name: 0 for name in routes.cluster_addr_table}
        for info in list(routes.broker_live_table):
            live[info.cluster_name] = live.get(info.cluster_name, 0) + 1
        yield families.gauge(
            "rocketmq_brokers",
            _HELP,
            [({"cluster": name}, count) for name, count in live.items()],
            ["cluster"],
        )
        yield families.gauge("rocketmq_topic_number", _HELP, [({}, len(routes.topic_queue_table))], [])


def start_metrics(config: NamesrvConfig, routes: RouteInfoManager, node_id: str) -> MetricsEndpoint | None:
    """The NameServer's ``/metrics`` when ``metricsExporterType=PROM``, else ``None``; raises ``OSError``
    when the port cannot be bound."""
    kind = MetricsExporterType.parse(config.metrics_exporter_type)
    if kind is MetricsExporterType.DISABLE:
        return None
    if kind is not MetricsExporterType.PROM:
        log.warning("metricsExporterType=%s is not supported (only PROM is): no metrics exported", kind.name)
        return None
    endpoint = MetricsEndpoint(NamesrvMetrics(routes, node_id))
    endpoint.start(config.metrics_prom_exporter_host, config.metrics_prom_exporter_port)
    return endpoint
