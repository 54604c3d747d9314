"""Apache 5.5.0's broker metrics as a dashboard depends on them: each family's type and label keys.

``tests/integration/test_prometheus.py`` holds the project's broker to an Apache 5.5.0 broker
(``metricsExporterType=PROM``) scraped after the same traffic: every family the project exports must be
Apache's, with the same type and label keys; Apache's families the project lacks must be the ones
docs/observability.md lists as missing (:data:`KNOWN_MISSING`).
"""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families

#: Apache's families this broker does not export, each for a reason given in docs/observability.md: none
#: left that the suite's traffic brings out (the RocksDB store's families need a RocksDB store, which neither
#: runs). ``test_broker_metrics_names`` drives the traffic that brings out the timer, POP, transaction and
#: creation families on both brokers; ``test_prometheus`` compares what a consumer online adds.
KNOWN_MISSING: frozenset[str] = frozenset()

Shape = dict[str, tuple[str, frozenset[str]]]


def shape(text: str) -> Shape:
    """Per family (as the TYPE line names it): its type and the label keys of its series (``le`` aside)."""
    found: Shape = {}
    for family in text_string_to_metric_families(text):
        keys = frozenset(key for sample in family.samples for key in sample.labels if key != "le")
        name = family.name + "_total" if family.type == "counter" else family.name
        found[name] = (family.type, keys)
    return found


def scrape(port: int) -> str:
    """The text of ``/metrics`` on a loopback port (blocking)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text: str = answer.read().decode()
        return text


def compare(ours: Shape, apache: Shape) -> None:
    """Fails unless ``ours`` is Apache's shape less :data:`KNOWN_MISSING` (both scraped after the same
    traffic, with a consumer and a producer online on each)."""
    only_ours = set(ours) - set(apache)
    assert not only_ours, f"names Apache 5.5.0 does not export: {sorted(only_ours)}"
    for name in set(ours) & set(apache):
        assert ours[name] == apache[name], f"{name}: ours {ours[name]}, Apache's {apache[name]}"
    missing = set(apache) - set(ours)
    assert missing <= KNOWN_MISSING, (
        f"Apache's families not exported and not documented: {sorted(missing - KNOWN_MISSING)}"
    )
