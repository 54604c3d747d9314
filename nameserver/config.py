"""The NameServer's settings, under the names Apache's ``NamesrvConfig`` gives them.

Operators and ``mqadmin updateNamesrvConfig`` address settings by their Java names, and
GET_NAMESRV_CONFIG answers with ``name=value`` lines, so each field knows its Java name and the text form
is Java's ``Properties`` layout.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping

from rocketmq_wire.transport.server import (
    DEFAULT_MAX_BUFFERED,
    DEFAULT_MAX_BUFFERED_PER_CONNECTION,
    RemotingLimits,
)

#: How long a broker stays routable without re-registering (``BROKER_CHANNEL_EXPIRED_TIME``).
BROKER_CHANNEL_EXPIRED_MS = 120_000

#: Settings Apache 5.x refuses to change remotely (they name files).
PATH_SETTINGS = frozenset({"kvConfigPath", "configStorePath"})


def _java_name(attr: str) -> str:
    head, *rest = attr.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


@dataclasses.dataclass(kw_only=True)
class NamesrvConfig:
    """Behaviour switches with Apache's defaults, plus where KV config is kept.

    ``kv_config_path`` of ``None`` keeps KV config in memory only (Apache always writes
    ``~/namesrv/kvConfig.json``; a development server should not touch the home directory unasked).
    """

    kv_config_path: str | None = None
    config_store_path: str | None = None
    product_env_name: str = "center"
    cluster_test: bool = False
    #: Add ``orderTopicConf`` (from the ORDER_TOPIC_CONFIG namespace) to routes; off in Apache by default.
    order_message_enable: bool = False
    #: Send the ORDER_TOPIC_CONFIG namespace back in REGISTER_BROKER answers (always so in 4.x).
    return_order_topic_config_to_broker: bool = True
    #: How often brokers that stopped registering are looked for.
    scan_not_active_broker_interval: int = 5000
    #: 5.x: let a slave stand in for a missing master in routes.
    support_acting_master: bool = False
    #: 5.x: answer GET_ALL_TOPIC_LIST_FROM_NAMESERVER (otherwise SYSTEM_ERROR "disable").
    enable_all_topic_list: bool = True
    #: 5.x: answer the per-cluster and unit topic lists (otherwise SYSTEM_ERROR "disable").
    enable_topic_list: bool = True
    #: 5.x: a full registration also removes the broker's topics it no longer lists.
    delete_topic_with_broker_registration: bool = False
    #: Prometheus metrics (nameserver/metrics.py), under the broker's setting names: Apache 5.5's NameServer
    #: exports none, so these are the project's. ``PROM`` serves ``/metrics``; ``DISABLE`` (default) not.
    metrics_exporter_type: str = "DISABLE"
    metrics_prom_exporter_port: int = 5557
    metrics_prom_exporter_host: str = ""
    #: Apache's ``NettyServerConfig`` (part of a NameServer's configuration there too): a connection that
    #: neither reads nor writes for this long is closed; 0 or less: never.
    server_channel_max_idle_time_seconds: int = 120
    #: This project's own, no Apache equivalent: unsent bytes (answers a peer has not read) past which its
    #: connection is no longer read until they drain below half; 0 or less: no bound.
    server_channel_max_buffered_bytes: int = DEFAULT_MAX_BUFFERED_PER_CONNECTION
    #: This project's own: the same over all connections together; 0 or less: no bound.
    server_max_buffered_bytes: int = DEFAULT_MAX_BUFFERED

    def remoting_limits(self) -> RemotingLimits:
        """What the NameServer's remoting server is built with."""
        return RemotingLimits(
            idle_timeout=float(self.server_channel_max_idle_time_seconds),
            max_buffered_per_connection=self.server_channel_max_buffered_bytes,
            max_buffered=self.server_max_buffered_bytes,
        )

    def items(self) -> Iterator[tuple[str, object]]:
        """``(javaName, value)`` for every setting, in declared order."""
        for field in dataclasses.fields(self):
            yield _java_name(field.name), getattr(self, field.name)

    def to_properties_text(self) -> str:
        """The ``name=value`` lines GET_NAMESRV_CONFIG answers with (``null`` values written as empty)."""
        lines = []
        for name, value in self.items():
            if isinstance(value, bool):
                text = "true" if value else "false"
            else:
                text = "" if value is None else str(value)
            lines.append(f"{name}={text}\n")
        return "".join(lines)

    def update(self, properties: Mapping[str, str]) -> list[str]:
        """Apply the known settings among ``properties``; returns the Java names that changed.

        Unknown names are ignored and unparsable numbers keep the old value, as Java's reflective update
        does; the names applied are returned so the caller can log them.
        """
        by_java = {_java_name(f.name): f for f in dataclasses.fields(self)}
        applied = []
        for name, text in properties.items():
            field = by_java.get(name)
            if field is None:
                continue
            current = getattr(self, field.name)
            value: object
            if isinstance(current, bool):
                value = text.strip().lower() == "true"
            elif isinstance(current, int):
                try:
                    value = int(text.strip())
                except ValueError:
                    continue
            else:
                value = text
            setattr(self, field.name, value)
            applied.append(name)
        return applied


_BLANK = " \t\f"


def parse_properties(text: str) -> dict[str, str]:
    """Java ``Properties.load`` for the small texts config updates are: ``key=value``, ``key: value`` or
    ``key value`` lines, ``#``/``!`` comments, backslash continuations and escapes."""
    result: dict[str, str] = {}
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].lstrip(_BLANK)
        index += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line):
            line = line[:-1]
            if index >= len(lines):
                break
            line += lines[index].lstrip(_BLANK)
            index += 1
        key, value = _split_entry(line)
        result[_unescape(key)] = _unescape(value)
    return result


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _split_entry(line: str) -> tuple[str, str]:
    index = 0
    while index < len(line):
        ch = line[index]
        if ch == "\\":
            index += 2
            continue
        if ch in "=:":
            return line[:index], line[index + 1 :].lstrip(_BLANK)
        if ch in _BLANK:
            rest = line[index:].lstrip(_BLANK)
            if rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(_BLANK)
            return line[:index], rest
        index += 1
    return line, ""


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out = []
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\\" and index + 1 < len(text):
            nxt = text[index + 1]
            if nxt == "u" and index + 6 <= len(text):
                try:
                    out.append(chr(int(text[index + 2 : index + 6], 16)))
                    index += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            index += 2
            continue
        out.append(ch)
        index += 1
    return "".join(out)
