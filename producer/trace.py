"""The internal producer that carries trace records, as Java's ``AsyncTraceDispatcher`` has one of its own.

The dispatcher itself (queueing, batching, never in the traced call's way) is ``client.trace``; it only
needs a send function. What is producer-specific is how the carrier is set up: its group is the traced
group's under ``_INNER_TRACE_PRODUCER-``, its instance name Java's trace instance name (so it never shares a
client instance with the traced client), no namespace, no tracing of its own, and Java's 5 s send timeout.
``producer.producer.start_trace_dispatcher`` builds the carrier from these and starts a dispatcher on it.
"""

from __future__ import annotations

import dataclasses

from producer.config import ProducerConfig
from rocketmq_wire.trace import TRACE_GROUP_PREFIX, TRACE_INSTANCE_NAME

#: Java's trace send timeout.
TRACE_SEND_TIMEOUT_MS = 5000


def trace_group(traced_group: str) -> str:
    """The carrier's producer group: the traced group's (with its namespace separator made harmless)."""
    return TRACE_GROUP_PREFIX + traced_group.replace("%", "_")


def trace_instance_name(owner: object) -> str:
    """Java's trace instance name, made unique per carrier by the id of ``owner``, the traced client (which
    outlives its carrier, and has one at a time)."""
    return f"{TRACE_INSTANCE_NAME}_{id(owner)}"


def trace_producer_config(base: ProducerConfig | None, owner: object) -> ProducerConfig:
    """The carrier's settings: the traced client's connection settings (``base``), adjusted as above."""
    return dataclasses.replace(
        base or ProducerConfig(),
        namespace=None,
        send_timeout_ms=TRACE_SEND_TIMEOUT_MS,
        instance_name=trace_instance_name(owner),
        enable_msg_trace=False,
        trace_topic=None,
    )
