"""Client metrics, spans and the statistics hook, against the project's NameServer and Broker in-process,
with OpenTelemetry's in-memory reader and exporter."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is not installed")

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from admin import Admin
from cli.local_cluster import LocalCluster, LocalClusterSettings
from client.telemetry import OtelOptions
from consumer import ConsumeFromWhere, ConsumeStatus, PullConsumer, PushConsumer
from producer import Message, MessageValidationError, Producer, ProducerConfig
from rocketmq_wire.message.stored import MessageExt

TOPIC = "OtelTopic"
GROUP = "OtelGroup"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
async def local(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(LocalClusterSettings(tmp_path / "store")) as cluster:
        async with Admin(cluster.namesrv_address) as admin:
            await admin.create_topic(TOPIC, cluster="DefaultCluster", read_queue_nums=1, write_queue_nums=1)

            async def routed() -> bool:
                try:
                    await admin.topic_route(TOPIC)
                except Exception:
                    return False
                return True

            await cluster.wait_for_route(routed)
        yield cluster


class Otel:
    def __init__(self) -> None:
        self.reader = InMemoryMetricReader()
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.options = OtelOptions(
            meter_provider=MeterProvider(metric_readers=[self.reader]), tracer_provider=tracer_provider
        )

    def histograms(self) -> dict[str, tuple[str, list[HistogramDataPoint]]]:
        data = self.reader.get_metrics_data()
        found: dict[str, tuple[str, list[HistogramDataPoint]]] = {}
        assert data is not None
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                assert scope.scope.name == "org.apache.rocketmq.message"
                for metric in scope.metrics:
                    found[metric.name] = (metric.unit or "", list(metric.data.data_points))  # type: ignore[arg-type]
        return found


async def test_producer_records_apache_send_metric_and_a_send_span(local: LocalCluster) -> None:
    otel = Otel()
    async with Producer("OtelPg", local.namesrv_address, otel=otel.options) as producer:
        results = [await producer.send(Message(TOPIC, b"m%d" % i, tags="T")) for i in range(3)]
        client_id = producer.client_id
    unit, points = otel.histograms()["rocketmq_send_cost_time"]
    assert unit == "ms"
    (point,) = points
    assert dict(point.attributes or {}) == {
        "topic": TOPIC,
        "client_id": client_id,
        "invocation_status": "success",
    }
    assert point.count == 3
    assert list(point.explicit_bounds) == [1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0]
    spans = [s for s in otel.spans.get_finished_spans() if s.name == f"send {TOPIC}"]
    assert len(spans) == 3
    assert {s.kind for s in spans} == {SpanKind.PRODUCER}
    attributes = dict(spans[0].attributes or {})
    assert attributes["messaging.system"] == "rocketmq"
    assert attributes["messaging.destination.name"] == TOPIC
    assert attributes["messaging.operation.type"] == "send"
    assert attributes["messaging.rocketmq.message.tag"] == "T"
    assert attributes["messaging.rocketmq.client_group"] == "OtelPg"
    assert [dict(s.attributes or {})["messaging.message.id"] for s in spans] == [r.msg_id for r in results]


async def test_a_failed_send_is_a_failure_and_an_error_span(local: LocalCluster) -> None:
    otel = Otel()
    config = ProducerConfig(max_message_size=16)
    async with Producer("OtelPgFail", local.namesrv_address, config=config, otel=otel.options) as producer:
        with pytest.raises(MessageValidationError):
            await producer.send(Message(TOPIC, b"x" * 64))
    (point,) = otel.histograms()["rocketmq_send_cost_time"][1]
    assert dict(point.attributes or {})["invocation_status"] == "failure"
    (span,) = otel.spans.get_finished_spans()
    assert not span.status.is_ok


async def test_consumer_process_span_joins_the_producer_trace(local: LocalCluster) -> None:
    producer_otel, consumer_otel = Otel(), Otel()
    async with Producer("OtelPg2", local.namesrv_address, otel=producer_otel.options) as producer:
        await producer.send(Message(TOPIC, b"traced"))
    (send_span,) = producer_otel.spans.get_finished_spans()
    seen: list[MessageExt] = []

    async def listener(messages: list[MessageExt], context: object) -> ConsumeStatus:
        seen.extend(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        GROUP,
        local.namesrv_address,
        consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        otel=consumer_otel.options,
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(listener)
    await consumer.start()
    try:
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.05)
        client_id = consumer.client_id
    finally:
        await consumer.shutdown()
    assert [m.body for m in seen] == [b"traced"]
    assert send_span.context is not None
    trace_id = send_span.context.trace_id
    carried = seen[0].get_property("traceparent") or ""
    assert carried.startswith(f"00-{trace_id:032x}-{send_span.context.span_id:016x}-")
    spans = {s.name: s for s in consumer_otel.spans.get_finished_spans()}
    process = spans[f"process {TOPIC}"]
    assert process.kind is SpanKind.CONSUMER
    assert process.context is not None and process.context.trace_id == trace_id
    assert process.parent is not None and process.parent.span_id == send_span.context.span_id
    assert dict(process.attributes or {})["messaging.consumer.group.name"] == GROUP
    assert dict(process.attributes or {})["messaging.rocketmq.client_group"] == GROUP
    receive = spans[f"receive {TOPIC}"]
    assert [link.context.trace_id for link in receive.links] == [trace_id]
    metrics = consumer_otel.histograms()
    expected = {"topic": TOPIC, "client_id": client_id, "consumer_group": GROUP}
    unit, (point,) = metrics["rocketmq_process_time"]
    assert unit == "ms" and point.count == 1
    assert dict(point.attributes or {}) == {**expected, "invocation_status": "success"}
    assert list(point.explicit_bounds) == [1.0, 5.0, 10.0, 100.0, 1000.0, 10000.0, 60000.0]
    unit, (point,) = metrics["rocketmq_delivery_latency"]
    assert unit == "ms" and point.count == 1 and dict(point.attributes or {}) == expected
    unit, (point,) = metrics["rocketmq_await_time"]
    assert unit == "ms" and point.count == 1 and dict(point.attributes or {}) == expected
    assert list(point.explicit_bounds) == [1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0]


async def test_stats_hook_figures_move_and_stay_per_producer(local: LocalCluster) -> None:
    first: list[dict[str, Any]] = []
    second: list[dict[str, Any]] = []
    config = ProducerConfig(max_message_size=64)
    a = Producer("StatsPgA", local.namesrv_address, config=config, stats_cb=first.append, otel=False)
    b = Producer("StatsPgB", local.namesrv_address, stats_cb=second.append, stats_interval_s=0.05, otel=False)
    async with a, b:
        for _ in range(3):
            await a.send(Message(TOPIC, b"12345"))
        with pytest.raises(MessageValidationError):
            await a.send(Message(TOPIC, b"x" * 100))
        await b.send(Message(TOPIC, b"1"))
        now = a.stats()
        assert now is not None
        assert (now["sent_ok"], now["sent_failed"], now["sent_bytes"]) == (3, 1, 15)
        assert now["send_latency"]["count"] == 4 and now["send_latency"]["max_ms"] > 0
        await asyncio.sleep(0.2)
        assert second, "the callback runs every stats_interval_s"
    assert first[-1]["sent_ok"] == 3 and first[-1]["client_id"] == a.client_id
    assert (second[-1]["sent_ok"], second[-1]["sent_failed"], second[-1]["sent_bytes"]) == (1, 0, 1)
    assert Producer("NoStats", local.namesrv_address, otel=False).stats() is None


async def test_consumer_stats_count_received_and_processed(local: LocalCluster) -> None:
    snapshots: list[dict[str, Any]] = []
    async with Producer("StatsPgC", local.namesrv_address, otel=False) as producer:
        for body in (b"ok", b"fail"):
            await producer.send(Message(TOPIC, body))
    handled: list[bytes] = []

    async def listener(messages: list[MessageExt], context: object) -> ConsumeStatus:
        handled.extend(m.body for m in messages)
        if messages[0].body == b"fail":
            return ConsumeStatus.RECONSUME_LATER
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "StatsCg",
        local.namesrv_address,
        consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        stats_cb=snapshots.append,
        otel=False,
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(listener)
    await consumer.start()
    try:
        for _ in range(200):
            now = consumer.stats()
            if len(handled) >= 2 and now is not None and now["lag"] == 0:
                break
            await asyncio.sleep(0.05)
    finally:
        await consumer.shutdown()
    assert now is not None
    assert now["received"] >= 2 and now["received_bytes"] >= 6
    assert now["processed_ok"] == 1 and now["processed_failed"] >= 1
    assert now["lag"] == 0, "both sends committed (the failed one by sending it to the retry topic)"
    assert snapshots and snapshots[-1]["processed_ok"] == 1


async def test_pull_consumer_records_received_messages(local: LocalCluster) -> None:
    otel = Otel()
    async with Producer("StatsPgD", local.namesrv_address, otel=False) as producer:
        await producer.send(Message(TOPIC, b"pulled"))
    consumer = PullConsumer(
        "PullStatsCg",
        local.namesrv_address,
        consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        stats_cb=lambda _: None,
        otel=otel.options,
    )
    consumer.subscribe(TOPIC)
    await consumer.start()
    try:
        got = await consumer.poll(5.0)
        now = consumer.stats()
    finally:
        await consumer.shutdown()
    assert [m.body for m in got] == [b"pulled"]
    assert now is not None and (now["received"], now["received_bytes"]) == (1, 6)
    unit, (point,) = otel.histograms()["rocketmq_delivery_latency"]
    assert unit == "ms" and point.count == 1
    assert dict(point.attributes or {})["consumer_group"] == "PullStatsCg"
    assert [s.name for s in otel.spans.get_finished_spans()] == [f"receive {TOPIC}"]


def test_clients_work_without_opentelemetry(tmp_path: Path) -> None:
    """With ``opentelemetry`` unimportable the clients import, send and keep statistics, and nothing
    imports any OpenTelemetry module."""
    script = textwrap.dedent(
        f"""
        import asyncio, sys
        from pathlib import Path

        class Blocker:
            def find_spec(self, name, path=None, target=None):
                if name == "opentelemetry" or name.startswith("opentelemetry."):
                    raise ModuleNotFoundError(name)
                return None

        sys.meta_path.insert(0, Blocker())
        from admin import Admin
        from cli.local_cluster import LocalCluster, LocalClusterSettings
        from client.telemetry import NO_OBSERVER, make_observer
        from consumer import PushConsumer, SimpleConsumer
        import consumer.lite_pull, admin, cli.main, spark_connector
        from producer import Message, Producer

        assert make_observer(role="p", client_id=str, stats=None, otel=None) is NO_OBSERVER

        async def main():
            async with LocalCluster(LocalClusterSettings(Path({str(tmp_path)!r}) / "s")) as cluster:
                async with Admin(cluster.namesrv_address) as admin:
                    await admin.create_topic("{TOPIC}", cluster="DefaultCluster")
                async with Producer("NoOtel", cluster.namesrv_address) as producer:
                    assert producer._observer is NO_OBSERVER
                    for _ in range(20):
                        try:
                            await producer.send(Message("{TOPIC}", b"x"))
                            break
                        except Exception:
                            await asyncio.sleep(0.1)
                    else:
                        raise SystemExit("no send got through")

        asyncio.run(main())
        loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
        assert not loaded, loaded
        print("OK")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("OK")


async def test_push_consumer_in_pop_mode_and_the_simple_consumer_count_receipts() -> None:
    from consumer import ConsumerConfig, SimpleConsumer
    from rocketmq_wire.bodies.pop import MessageRequestMode
    from tests.unit.pop_fakes import FakePopCluster

    otel = Otel()
    async with FakePopCluster() as cluster:
        cluster.topic("PopTopic", queues=1)
        cluster.broker.modes["PopTopic"] = MessageRequestMode.POP
        cluster.broker.add_messages("PopTopic", 0, [b"p0", b"p1"])
        done = asyncio.Event()
        handled: list[bytes] = []

        async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
            handled.extend(m.body for m in messages)
            if len(handled) >= 2:
                done.set()
            return ConsumeStatus.CONSUME_SUCCESS

        consumer = PushConsumer(
            "PopGroup",
            cluster.namesrv.address,
            consume_from="FIRST_OFFSET",
            client_rebalance=False,
            config=ConsumerConfig(pop_invisible_time_ms=5_000, rebalance_interval_ms=500),
            stats_cb=lambda _: None,
            otel=otel.options,
        )
        consumer.subscribe("PopTopic")
        consumer.register_listener(handle)
        await consumer.start()
        try:
            await asyncio.wait_for(done.wait(), 10)
            for _ in range(100):
                now = consumer.stats()
                if now is not None and now["processed_ok"] >= 2:
                    break
                await asyncio.sleep(0.02)
        finally:
            await consumer.shutdown()
        assert now is not None and now["received"] == 2 and now["processed_ok"] == 2
        names = [s.name for s in otel.spans.get_finished_spans()]
        assert names.count("process PopTopic") == 2 and "receive PopTopic" in names
        assert otel.histograms()["rocketmq_await_time"][1][0].count == 2

        cluster.broker.add_messages("PopTopic", 0, [b"s0"])
        simple = SimpleConsumer(
            "SimpleGroup",
            cluster.namesrv.address,
            consume_from="FIRST_OFFSET",
            stats_cb=lambda _: None,
            otel=False,
        )
        simple.subscribe("PopTopic")
        await simple.start()
        try:
            got: list[MessageExt] = []
            for _ in range(20):
                got += await simple.receive(16, await_duration=0.2)
                if got:
                    break
            figures = simple.stats()
        finally:
            await simple.close()
        assert got and figures is not None and figures["received"] == len(got)
