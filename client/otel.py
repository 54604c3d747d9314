"""OpenTelemetry metrics and spans of a client, named as Apache's 5.x clients name theirs.

Imported only when OpenTelemetry is wanted (see ``client.telemetry``): this module is the one place the
project imports ``opentelemetry``, and the ``otel`` extra provides it.

Metrics (Apache's ``HistogramEnum``/``MetricLabels``): histograms in milliseconds with Apache's bucket
boundaries, attributes ``topic``, ``client_id``, ``consumer_group``, ``invocation_status``
(``success``/``failure``). Spans follow OpenTelemetry's messaging conventions (``messaging.system`` =
``rocketmq``; ``send``/``receive``/``process`` operations); the producer's span context travels in the
message's user properties under W3C's names (``traceparent``, ``tracestate``), as OpenTelemetry's own
RocketMQ instrumentation carries it, so a consumer's process span continues the producer's trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, SpanKind, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from client.observer import OtelOptions, ProcessScope, SendScope
from rocketmq_wire.message import Message
from rocketmq_wire.message.stored import MessageExt

#: Apache's instrumentation scope name for its message metrics.
METER_NAME = "org.apache.rocketmq.message"
TRACER_NAME = "org.apache.rocketmq.client"

SEND_COST_TIME = "rocketmq_send_cost_time"
DELIVERY_LATENCY = "rocketmq_delivery_latency"
AWAIT_TIME = "rocketmq_await_time"
PROCESS_TIME = "rocketmq_process_time"

#: Apache's bucket boundaries, in milliseconds.
SEND_COST_BUCKETS = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
DELIVERY_LATENCY_BUCKETS = (1.0, 5.0, 10.0, 20.0, 50.0, 200.0, 500.0)
AWAIT_TIME_BUCKETS = (1.0, 5.0, 20.0, 100.0, 1000.0, 5000.0, 10000.0)
PROCESS_TIME_BUCKETS = (1.0, 5.0, 10.0, 100.0, 1000.0, 10000.0, 60000.0)

TOPIC = "topic"
CLIENT_ID = "client_id"
CONSUMER_GROUP = "consumer_group"
INVOCATION_STATUS = "invocation_status"
SUCCESS = "success"
FAILURE = "failure"

#: Receipt times kept for ``rocketmq_await_time`` at most: messages received and never handed to a handler
#: (their queue was released) age out of the oldest end instead of accumulating.
MAX_ARRIVALS = 10_000

#: The message properties carrying the trace context (W3C Trace Context's header names).
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"

_PROPAGATOR = TraceContextTextMapPropagator()


def _histogram(meter: metrics.Meter, name: str, description: str, buckets: Sequence[float]) -> Any:
    return meter.create_histogram(
        name, unit="ms", description=description, explicit_bucket_boundaries_advisory=list(buckets)
    )


def _message_attributes(message: Message | MessageExt) -> dict[str, Any]:
    attributes: dict[str, Any] = {"messaging.message.body.size": len(message.body)}
    tags = message.tags
    if tags:
        attributes["messaging.rocketmq.message.tag"] = tags
    keys = message.keys
    if keys:
        attributes["messaging.rocketmq.message.keys"] = list(keys)
    return attributes


def message_context(message: MessageExt) -> Context | None:
    """The producer's span context a received message carries, if any."""
    parent = message.get_property(TRACEPARENT)
    if not parent:
        return None
    carrier = {TRACEPARENT: parent}
    state = message.get_property(TRACESTATE)
    if state:
        carrier[TRACESTATE] = state
    return _PROPAGATOR.extract(carrier)


class _SendScope:
    __slots__ = ("_attributes", "_began", "_observer", "_span")

    def __init__(self, observer: OtelObserver, span: trace.Span, attributes: dict[str, str]) -> None:
        self._observer = observer
        self._span = span
        self._attributes = attributes
        self._began = time.perf_counter()

    def end(self, ok: bool, msg_id: str | None = None) -> None:
        spent_ms = (time.perf_counter() - self._began) * 1000
        attributes = dict(self._attributes)
        attributes[CLIENT_ID] = self._observer.client_id()
        attributes[INVOCATION_STATUS] = SUCCESS if ok else FAILURE
        self._observer.send_cost_time.record(spent_ms, attributes)
        if msg_id:
            self._span.set_attribute("messaging.message.id", msg_id)
        if not ok:
            self._span.set_status(StatusCode.ERROR)
        self._span.end()


class _ProcessScope:
    __slots__ = ("_attributes", "_began", "_observer", "_span")

    def __init__(self, observer: OtelObserver, span: trace.Span, attributes: dict[str, str]) -> None:
        self._observer = observer
        self._span = span
        self._attributes = attributes
        self._began = time.perf_counter()

    def end(self, ok: bool, msg_id: str | None = None) -> None:
        spent_ms = (time.perf_counter() - self._began) * 1000
        attributes = dict(self._attributes)
        attributes[INVOCATION_STATUS] = SUCCESS if ok else FAILURE
        self._observer.process_time.record(spent_ms, attributes)
        if not ok:
            self._span.set_status(StatusCode.ERROR)
        self._span.end()


class OtelObserver:
    """Records one client's metrics and spans through the given (or global) providers."""

    def __init__(
        self, *, role: str, client_id: Callable[[], str], options: OtelOptions, group: str = ""
    ) -> None:
        self.role = role
        self.group = group
        self.client_id = client_id
        meter = metrics.get_meter(METER_NAME, meter_provider=options.meter_provider)
        self.tracer = trace.get_tracer(TRACER_NAME, tracer_provider=options.tracer_provider)
        self.send_cost_time = _histogram(
            meter, SEND_COST_TIME, "Time a send call took, to the broker's answer", SEND_COST_BUCKETS
        )
        self.delivery_latency = _histogram(
            meter,
            DELIVERY_LATENCY,
            "Time from the broker storing a message to the client receiving it",
            DELIVERY_LATENCY_BUCKETS,
        )
        self.await_time = _histogram(
            meter, AWAIT_TIME, "Time a received message waited for the handler", AWAIT_TIME_BUCKETS
        )
        self.process_time = _histogram(
            meter, PROCESS_TIME, "Time the handler took on a message", PROCESS_TIME_BUCKETS
        )
        # Receipt time by message object (its id, queue and offset, so a reused id cannot match); the
        # message objects themselves are not kept.
        self._arrivals: dict[tuple[int, int, int], float] = {}

    def start_send(self, topic: str, messages: Sequence[Message]) -> SendScope:
        attributes: dict[str, Any] = {
            "messaging.system": "rocketmq",
            "messaging.operation.name": "send",
            "messaging.operation.type": "send",
            "messaging.destination.name": topic,
            "messaging.client.id": self.client_id(),
            "messaging.rocketmq.client_group": self.group,
        }
        if len(messages) == 1:
            attributes.update(_message_attributes(messages[0]))
        else:
            attributes["messaging.batch.message_count"] = len(messages)
        span = self.tracer.start_span(f"send {topic}", kind=SpanKind.PRODUCER, attributes=attributes)
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        for message in messages:
            message.properties.update(carrier)
        return _SendScope(self, span, {TOPIC: topic})

    def received(self, group: str, messages: Sequence[MessageExt]) -> None:
        if not messages:
            return
        now_ms = time.time() * 1000
        client_id = self.client_id()
        topic = messages[0].topic
        attributes = {TOPIC: topic, CLIENT_ID: client_id, CONSUMER_GROUP: group}
        arrived = time.monotonic()
        arrivals = self._arrivals
        for message in messages:
            if message.store_timestamp:
                self.delivery_latency.record(max(0.0, now_ms - message.store_timestamp), attributes)
            arrivals[(id(message), message.queue_id, message.queue_offset)] = arrived
        while len(arrivals) > MAX_ARRIVALS:
            del arrivals[next(iter(arrivals))]
        links = [Link(c) for c in _span_contexts(messages)]
        span = self.tracer.start_span(
            f"receive {topic}",
            kind=SpanKind.CONSUMER,
            links=links,
            attributes={
                "messaging.system": "rocketmq",
                "messaging.operation.name": "receive",
                "messaging.operation.type": "receive",
                "messaging.destination.name": topic,
                "messaging.consumer.group.name": group,
                "messaging.rocketmq.client_group": group,
                "messaging.client.id": client_id,
                "messaging.batch.message_count": len(messages),
            },
        )
        span.end()

    def start_process(self, group: str, messages: Sequence[MessageExt]) -> ProcessScope:
        topic = messages[0].topic if messages else ""
        client_id = self.client_id()
        attributes: dict[str, Any] = {
            "messaging.system": "rocketmq",
            "messaging.operation.name": "process",
            "messaging.operation.type": "process",
            "messaging.destination.name": topic,
            "messaging.consumer.group.name": group,
            "messaging.rocketmq.client_group": group,
            "messaging.client.id": client_id,
        }
        parent: Context | None = None
        links: list[Link] = []
        if len(messages) == 1:
            message = messages[0]
            attributes.update(_message_attributes(message))
            attributes["messaging.message.id"] = message.client_msg_id or message.msg_id
            attributes["messaging.rocketmq.message.reconsume_times"] = message.reconsume_times
            parent = message_context(message)
        else:
            attributes["messaging.batch.message_count"] = len(messages)
            links = [Link(c) for c in _span_contexts(messages)]
        now = time.monotonic()
        await_attributes = {TOPIC: topic, CLIENT_ID: client_id, CONSUMER_GROUP: group}
        for message in messages:
            arrived = self._arrivals.pop((id(message), message.queue_id, message.queue_offset), None)
            if arrived is not None:
                self.await_time.record((now - arrived) * 1000, await_attributes)
        span = self.tracer.start_span(
            f"process {topic}", context=parent, kind=SpanKind.CONSUMER, links=links, attributes=attributes
        )
        return _ProcessScope(self, span, {TOPIC: topic, CLIENT_ID: client_id, CONSUMER_GROUP: group})


def _span_contexts(messages: Sequence[MessageExt]) -> list[trace.SpanContext]:
    found = []
    for message in messages:
        context = message_context(message)
        if context is None:
            continue
        span_context = trace.get_current_span(context).get_span_context()
        if span_context.is_valid:
            found.append(span_context)
    return found
