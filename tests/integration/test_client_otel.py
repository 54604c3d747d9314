"""OpenTelemetry across one cluster of each kind: the trace context a producer writes into a message
survives the broker (Apache's and the project's), and the push consumer's process span continues the
producer's trace."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (opentelemetry-sdk) is not installed")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from client.telemetry import OtelOptions
from consumer import ConsumeFromWhere, ConsumeStatus, PushConsumer
from producer import Message, Producer
from rocketmq_wire.message import MessageExt
from tests.integration.clusters.fixture import representative_setups
from tests.integration.clusters.model import Cluster, unique_name

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("scenario_budget")]

SETUPS = representative_setups()


def _tracing() -> tuple[OtelOptions, InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    return OtelOptions(tracer_provider=provider), spans


@pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)
async def test_process_span_continues_the_producers_trace(cluster: Cluster) -> None:
    topic, group = unique_name("OtelTrace"), unique_name("OtelCg")
    sending, sent_spans = _tracing()
    async with Producer(unique_name("OtelPg"), cluster.namesrv, otel=sending) as producer:
        result = await producer.send(Message(topic, b"traced"))
    (send_span,) = sent_spans.get_finished_spans()
    assert send_span.context is not None
    consuming, consumed_spans = _tracing()
    seen: list[MessageExt] = []

    async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
        seen.extend(messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        group, cluster.namesrv, consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, otel=consuming
    )
    consumer.subscribe(topic)
    consumer.register_listener(handle)
    await consumer.start()
    try:
        async with asyncio.timeout(30):
            while not seen:
                await asyncio.sleep(0.05)
    finally:
        await consumer.shutdown()
    assert [m.client_msg_id for m in seen] == [result.msg_id]
    carried = seen[0].get_property("traceparent") or ""
    assert carried.startswith(f"00-{send_span.context.trace_id:032x}-{send_span.context.span_id:016x}-")
    (process,) = [s for s in consumed_spans.get_finished_spans() if s.name == f"process {topic}"]
    assert process.context is not None and process.context.trace_id == send_span.context.trace_id
    assert process.parent is not None and process.parent.span_id == send_span.context.span_id
