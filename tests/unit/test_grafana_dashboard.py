"""docs/grafana/rocketmq-overview.json imports into Grafana and asks only for series the project serves.

A dashboard that names a metric nobody exports shows "No data" without an error, so the names in its
queries are held to what the project's broker (metricsExporterType=PROM) and ``rmq exporter`` really
expose; tests/integration/test_prometheus.py runs the same queries against a real Prometheus.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.metrics_core import Metric

from admin.snapshot import ClusterSnapshot
from broker.testing import BrokerClient, running_broker
from cli.exporter_metrics import families
from rocketmq_wire import ResponseCode
from tests.installed_package import needs_work_tree

pytestmark = needs_work_tree("docs/grafana/")

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "rocketmq-overview.json"
#: Metric names in a PromQL expression: every one of the project's starts so, and no label or function does.
SERIES = re.compile(r"\b(rocketmq_[a-z0-9_]+)\b")
SERIES_SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}


def load() -> dict[str, Any]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return dashboard


def expressions(dashboard: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def series_names(found: list[Metric]) -> set[str]:
    """The names a scrape's series carry: a counter's ``_total``, a histogram's three."""
    return {family.name + suffix for family in found for suffix in SERIES_SUFFIXES.get(family.type, ("",))}


def test_dashboard_is_grafana_json_with_the_promised_panels() -> None:
    dashboard = load()
    assert dashboard["uid"] and dashboard["title"] and isinstance(dashboard["schemaVersion"], int)
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels), "panel ids must be unique"
    for panel in panels:
        assert set(panel["gridPos"]) == {"h", "w", "x", "y"}
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24  # Grafana's grid is 24 wide
        assert panel["datasource"]["uid"] == "${datasource}"
        assert [t["refId"] for t in panel["targets"]] == [chr(65 + i) for i in range(len(panel["targets"]))]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    queried = {name for expr in expressions(dashboard) for name in SERIES.findall(expr)}
    # Lag, in and out TPS from the brokers, and the exporter's group diff.
    assert {
        "rocketmq_consumer_lag_messages",
        "rocketmq_messages_in_total",
        "rocketmq_messages_out_total",
        "rocketmq_group_diff",
    } <= queried


async def test_every_series_the_dashboard_asks_for_is_served(tmp_path: Path) -> None:
    async with running_broker(
        tmp_path / "store",
        metrics_exporter_type="PROM",
        metrics_prom_exporter_host="127.0.0.1",
        metrics_prom_exporter_port=0,
    ) as broker:
        assert broker.metrics is not None
        # Families without series are left out of a scrape: a send and a committing pull fill the traffic
        # and lag families.
        async with BrokerClient(broker.address) as client:
            assert (await client.create_topic("DashboardTopic", queues=1)).code == ResponseCode.SUCCESS
            assert (await client.send("DashboardTopic", b"seen")).code == ResponseCode.SUCCESS
            pulled = await client.pull("DashboardGroup", "DashboardTopic", 0, 0, commit_offset=0)
            assert pulled.code == ResponseCode.SUCCESS
        served = series_names(list(broker.metrics.registry.collect()))
    nothing_read = ClusterSnapshot(taken_at=0.0, brokers=(), progress=(), failures={}, elapsed=0.0)
    served |= series_names(families(nothing_read))
    dashboard = load()
    queried = {name for expr in expressions(dashboard) for name in SERIES.findall(expr)}
    queried |= {
        name for v in dashboard["templating"]["list"] for name in SERIES.findall(v.get("definition", ""))
    }
    assert queried <= served, f"asked for but never served: {sorted(queried - served)}"
