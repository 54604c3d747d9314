"""A real Prometheus scrapes the project's broker, Apache 5.5.0's broker (``metricsExporterType=PROM``) and
``rmq exporter``; its HTTP API must then tell a dashboard the same story from each.

One cluster: the project's NameServer and broker in this process, one Apache 5.5.0 broker (the only JVM)
registered with that NameServer, and ``rmq exporter``'s serving code reading the cluster over the remoting
protocol. Each broker holds a topic of its own where one group is left with N unconsumed messages (a
consumer online, as Apache reports lag only for groups with one). Through ``/api/v1/query``:
``rocketmq_consumer_lag_messages`` is N on each broker, with the same label keys on both, and the exporter's
``rocketmq_group_diff`` is N for each topic; through ``/api/v1/label/__name__/values``: the project's broker
serves only Apache's metric names, and every Apache name it lacks is one docs/observability.md lists as
missing. Before Prometheus, each broker's ``/metrics`` is read directly: every family the project exports is
Apache's with the same type and label keys (:mod:`tests.integration.metric_shapes`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from admin import Admin
from broker.testing import BrokerClient
from cli.exporter_run import serve
from consumer.testing import LocalCluster
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import Connection, Handler
from tests.integration.apache import servers
from tests.integration.clusters.fixture import skip_or_fail
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.model import BROKER_NAME, CLUSTER_NAME, SECOND_BROKER_NAME
from tests.integration.clusters.probe import eventually, wait_for_broker
from tests.integration.clusters.processes import free_port
from tests.integration.clusters.providers import JAVA_REGISTER_S, provider_specs
from tests.integration.metric_shapes import KNOWN_MISSING, compare, scrape, shape
from tests.integration.prometheus_server import PrometheusServer, prometheus_unavailable, start_prometheus

pytestmark = [pytest.mark.integration]

log = logging.getLogger("tests.prometheus")

PROVIDER = "binaries-5.5.0"
GROUP = "PromLaggingGroup"
APACHE_TOPIC = "PromApacheTopic"
PROJECT_TOPIC = "PromProjectTopic"
QUEUES = 2
#: Messages the group leaves unconsumed on each broker.
LAGGING = 5
#: Seconds for figures to travel broker -> scrape -> query (scrapes every second; the exporter reads the
#: cluster every second too).
SETTLE_S = 20.0
JOBS = ("project-broker", "apache-broker", "exporter")
#: The Grafana dashboard docs/observability.md offers: its queries must find data here.
DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "rocketmq-overview.json"


async def leave_group_lagging(client: BrokerClient, topic: str) -> None:
    """On one broker: ``topic`` with :data:`LAGGING` messages, a producer and a consumer of :data:`GROUP`
    online (heartbeat), and the group's offset committed at 0 on every queue by a pull that reads them all
    (so the out counters and in-flight gauges are filled too)."""
    assert (await client.create_topic(topic, queues=QUEUES)).code == ResponseCode.SUCCESS
    beat = await client.heartbeat(
        "prom-test-client", producer_groups=["PromProducer"], consumer_groups={GROUP: {topic: "*"}}
    )
    assert beat.code == ResponseCode.SUCCESS, beat.remark
    for index in range(LAGGING):
        sent = await client.send(topic, b"lagging %d" % index, queue_id=index % QUEUES, group="PromProducer")
        assert sent.code == ResponseCode.SUCCESS, sent.remark
    for queue in range(QUEUES):
        pulled = await client.pull(GROUP, topic, queue, 0, commit_offset=0)
        assert pulled.code == ResponseCode.SUCCESS, pulled.remark


@contextlib.asynccontextmanager
async def exporter_serving(namesrv: str, port: int) -> AsyncIterator[None]:
    """``rmq exporter``'s serve loop (reading every second) on ``127.0.0.1:port``, cancelled on exit."""
    async with Admin(namesrv) as admin:
        task = asyncio.create_task(serve(admin, host="127.0.0.1", port=port, interval=1.0, concurrency=4))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def ignore_nudge(request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
    """NOTIFY_CONSUMER_IDS_CHANGED: a rebalance hint the test's stand-in consumer has no use for."""
    return None


#: What a broker may ask of the test's connections (anything else is logged as unsupported).
CLIENT_HANDLERS: dict[int, Handler] = {RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: ignore_nudge}

#: The suffixes Prometheus's storage adds to a histogram family's name, one series name each.
HISTOGRAM_SERIES = ("_bucket", "_count", "_sum")


def families(names: set[str]) -> set[str]:
    """Series names as the exposition's families: a histogram's three series count once, by its name."""
    return {
        next((name.removesuffix(s) for s in HISTOGRAM_SERIES if name.endswith(s)), name) for name in names
    }


def by_job(rows: list[tuple[dict[str, str], float]]) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for labels, value in rows:
        found.setdefault(labels["job"], []).append((labels, value))
    return found


async def ask(prometheus: PrometheusServer, promql: str) -> list[tuple[dict[str, str], float]]:
    return await asyncio.to_thread(prometheus.query, promql)


async def test_both_brokers_and_the_exporter_agree_directly_and_through_prometheus(tmp_path: Path) -> None:
    found = [spec for spec in provider_specs() if spec.id == PROVIDER]
    if not found or found[0].release is None:
        pytest.skip(f"{PROVIDER} is not among the selected providers")
    reason = found[0].unavailable()
    if reason is not None:
        skip_or_fail(reason)
    release = found[0].release
    # Without Prometheus the brokers' own endpoints are still compared; the rest is skipped at the end.
    no_prometheus = prometheus_unavailable()
    root = Path(tempfile.mkdtemp(prefix="rmq-prometheus-"))
    launch = Launch(root / "work", root / "logs")
    apache_metrics, exporter_port = free_port(), free_port()
    async with LocalCluster(
        tmp_path / "store",
        broker_cluster_name=CLUSTER_NAME,
        broker_name=SECOND_BROKER_NAME,
        metrics_exporter_type="PROM",
        metrics_prom_exporter_host="127.0.0.1",
        metrics_prom_exporter_port=0,
    ) as local:
        assert local.broker.metrics is not None
        targets = {
            "project-broker": f"127.0.0.1:{local.broker.metrics.port}",
            "apache-broker": f"127.0.0.1:{apache_metrics}",
            "exporter": f"127.0.0.1:{exporter_port}",
        }
        passed = False
        try:
            prometheus = None
            if no_prometheus is None:
                prometheus = await asyncio.to_thread(start_prometheus, launch, targets)
            started = time.monotonic()
            await asyncio.to_thread(
                servers.start_broker,
                launch,
                release,
                local.address,
                extra={
                    "metricsExporterType": "PROM",
                    "metricsPromExporterHost": "127.0.0.1",
                    "metricsPromExporterPort": str(apache_metrics),
                },
            )
            apache = await wait_for_broker(
                local.address, CLUSTER_NAME, BROKER_NAME, JAVA_REGISTER_S, launch.check_alive
            )
            log.info("Apache's broker registered %.1f s after its start", time.monotonic() - started)
            apache_address = apache.master_addr()
            assert apache_address is not None
            async with (
                BrokerClient(apache_address, CLIENT_HANDLERS) as on_apache,
                BrokerClient(local.broker.address, CLIENT_HANDLERS) as on_project,
            ):
                await leave_group_lagging(on_apache, APACHE_TOPIC)
                await leave_group_lagging(on_project, PROJECT_TOPIC)
                ours, apache_text = await asyncio.gather(
                    asyncio.to_thread(scrape, local.broker.metrics.port),
                    asyncio.to_thread(scrape, apache_metrics),
                )
                compare(shape(ours), shape(apache_text))
                if prometheus is not None:
                    started = time.monotonic()
                    async with exporter_serving(local.address, exporter_port):
                        await check_prometheus(prometheus)
                    log.info("Prometheus agreed %.1f s after the traffic", time.monotonic() - started)
            passed = True
        finally:
            leftovers = launch.stop(discard=True)
            if passed and not leftovers:
                shutil.rmtree(root, ignore_errors=True)
            else:
                log.warning("servers' logs kept in %s", root / "logs")
    assert not leftovers, f"processes survived: {leftovers}"
    if no_prometheus is not None:
        skip_or_fail(f"the brokers' endpoints agree, but nothing was asked of Prometheus: {no_prometheus}")


async def check_prometheus(prometheus: PrometheusServer) -> None:
    async def every_target_up() -> list[tuple[dict[str, str], float]]:
        return await ask(prometheus, "up")

    await eventually(
        every_target_up,
        lambda rows: {labels["job"] for labels, value in rows if value == 1} == set(JOBS),
        timeout_s=SETTLE_S,
        what="Prometheus scraping all three targets",
    )

    lag_query = f'rocketmq_consumer_lag_messages{{consumer_group="{GROUP}"}}'

    async def lag() -> list[tuple[dict[str, str], float]]:
        return await ask(prometheus, lag_query)

    lag_rows = by_job(
        await eventually(
            lag,
            lambda rows: (
                {job: [v for _, v in series] for job, series in by_job(rows).items()}
                == {"project-broker": [LAGGING], "apache-broker": [LAGGING]}
            ),
            timeout_s=SETTLE_S,
            what=f"a lag of {LAGGING} from each broker",
        )
    )
    [(apache_labels, _)] = lag_rows["apache-broker"]
    [(project_labels, _)] = lag_rows["project-broker"]
    assert apache_labels["topic"] == APACHE_TOPIC and project_labels["topic"] == PROJECT_TOPIC
    assert apache_labels["cluster"] == project_labels["cluster"] == CLUSTER_NAME
    assert set(apache_labels) == set(project_labels), (apache_labels, project_labels)

    diff_query = f'rocketmq_group_diff{{group="{GROUP}"}}'

    async def diff() -> list[tuple[dict[str, str], float]]:
        return await ask(prometheus, diff_query)

    diff_rows = await eventually(
        diff,
        lambda rows: (
            sorted((labels["topic"], value) for labels, value in rows)
            == [(APACHE_TOPIC, LAGGING), (PROJECT_TOPIC, LAGGING)]
        ),
        timeout_s=SETTLE_S,
        what=f"the exporter's group diff of {LAGGING} on each topic",
    )
    assert all(labels["countOfOnlineConsumers"] == "1" for labels, _ in diff_rows), diff_rows

    apache_names, project_names = (
        families(names)
        for names in await asyncio.gather(
            asyncio.to_thread(prometheus.names, "apache-broker"),
            asyncio.to_thread(prometheus.names, "project-broker"),
        )
    )
    log.info(
        "%d names from both brokers; from Apache's only: %s",
        len(apache_names & project_names),
        sorted(apache_names - project_names),
    )
    assert {"rocketmq_consumer_lag_messages", "rocketmq_messages_in_total"} <= apache_names & project_names
    assert project_names <= apache_names, f"not Apache's: {sorted(project_names - apache_names)}"
    assert apache_names - project_names <= KNOWN_MISSING, (
        f"Apache's names the project lacks, not documented as missing: "
        f"{sorted(apache_names - project_names - KNOWN_MISSING)}"
    )
    await check_dashboard(prometheus)


async def check_dashboard(prometheus: PrometheusServer) -> None:
    """Every panel of the dashboard shows data: one of its queries (all clusters chosen) has series."""
    panels = json.loads(DASHBOARD.read_text())["panels"]

    async def panels_without_data() -> list[str]:
        empty = []
        for panel in panels:
            answers = [
                await ask(prometheus, target["expr"].replace("$cluster", ".*")) for target in panel["targets"]
            ]
            if not any(answers):
                empty.append(panel["title"])
        return empty

    await eventually(panels_without_data, lambda empty: not empty, timeout_s=SETTLE_S, what="dashboard data")
