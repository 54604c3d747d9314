"""One reading of a whole cluster, the data ``rmq exporter`` and ``rmq top`` both render.

The cost is per broker, not per topic or group: each master answers two requests (its runtime statistics
and GET_BROKER_CONSUME_STATS, every group's progress on every queue at once), so a cluster of thousands of
topics and hundreds of groups is read in a handful of round trips. Brokers are asked concurrently, at most
``concurrency`` at a time, so a large cluster does not open a burst of requests against every broker.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

from admin.admin import Admin
from admin.errors import AdminError
from admin.models import BrokerAddress
from admin.stats import GROUP_GET_NUMS, TOPIC_PUT_NUMS
from admin.topics import user_topics
from rocketmq_wire.bodies.stats import ConsumeStats

logger = logging.getLogger("admin.snapshot")

#: Brokers asked at the same time.
DEFAULT_CONCURRENCY = 8


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerReading:
    """One master's runtime statistics (``rmq broker-stats``), as the broker wrote them."""

    cluster: str
    broker_name: str
    addr: str
    runtime: dict[str, str]

    def rate(self, key: str, window: int = 0) -> float:
        """One of the ``"10s 60s 600s"`` rates a broker reports (``putTps``, ``getTransferedTps``...); an
        absent or unreadable value is 0, as for a broker that has not collected it yet."""
        parts = self.runtime.get(key, "").split()
        try:
            return float(parts[window])
        except (IndexError, ValueError):
            return 0.0

    def number(self, key: str) -> float:
        try:
            return float(self.runtime.get(key, ""))
        except ValueError:
            return 0.0


@dataclasses.dataclass(frozen=True, slots=True)
class GroupTopicProgress:
    """A consumer group on one topic of one broker, summed over the topic's queues there."""

    cluster: str
    broker_name: str
    group: str
    topic: str
    broker_offset: int
    consumer_offset: int
    consume_tps: float
    #: Store time (ms) of the last message the group consumed on any queue; 0 when unknown.
    last_timestamp: int

    @property
    def diff(self) -> int:
        return max(0, self.broker_offset - self.consumer_offset)


@dataclasses.dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    """Every master's statistics and every group's progress, read at ``taken_at`` (epoch seconds)."""

    taken_at: float
    brokers: tuple[BrokerReading, ...]
    progress: tuple[GroupTopicProgress, ...]
    #: Brokers that did not answer, with the reason (the snapshot holds what the others said).
    failures: dict[str, str]
    #: Seconds the reading took.
    elapsed: float
    #: group -> (online consumers, message model such as CLUSTERING; "" when nobody is online).
    members: dict[str, tuple[int, str]] = dataclasses.field(default_factory=dict)
    #: (cluster, broker, topic) -> messages put per second over the last minute (TOPIC_PUT_NUMS); only
    #: items the broker has collected (a topic nothing was sent to since the broker started is absent).
    topic_put_tps: dict[tuple[str, str, str], float] = dataclasses.field(default_factory=dict)
    #: (cluster, broker, topic, group) -> messages got per second over the last minute (GROUP_GET_NUMS).
    group_get_tps: dict[tuple[str, str, str, str], float] = dataclasses.field(default_factory=dict)

    def topic_offsets(self) -> dict[tuple[str, str, str], int]:
        """(cluster, broker, topic) -> the largest broker offset any group saw: the producer offset."""
        found: dict[tuple[str, str, str], int] = {}
        for p in self.progress:
            key = (p.cluster, p.broker_name, p.topic)
            found[key] = max(found.get(key, 0), p.broker_offset)
        return found

    def group_diffs(self) -> dict[tuple[str, str], int]:
        """(group, topic) -> messages not consumed yet, over every broker."""
        found: dict[tuple[str, str], int] = {}
        for p in self.progress:
            found[(p.group, p.topic)] = found.get((p.group, p.topic), 0) + p.diff
        return found


def _progress_of(broker: BrokerAddress, group: str, stats: ConsumeStats) -> list[GroupTopicProgress]:
    per_topic: dict[str, list[int]] = {}
    for queue, wrapper in stats.offset_table.items():
        sums = per_topic.setdefault(queue.topic, [0, 0, 0])
        sums[0] += wrapper.broker_offset
        sums[1] += max(0, wrapper.consumer_offset)
        sums[2] = max(sums[2], wrapper.last_timestamp)
    share = stats.consume_tps / len(per_topic) if per_topic else 0.0
    return [
        GroupTopicProgress(
            cluster=broker.cluster,
            broker_name=broker.broker_name,
            group=group,
            topic=topic,
            broker_offset=sums[0],
            consumer_offset=sums[1],
            consume_tps=share,
            last_timestamp=sums[2],
        )
        for topic, sums in per_topic.items()
    ]


async def _read_broker(admin: Admin, broker: BrokerAddress) -> tuple[BrokerReading, list[GroupTopicProgress]]:
    runtime = await admin.broker_runtime_stats(broker.addr)
    consume = await admin.broker_consume_stats(broker.addr)
    progress: list[GroupTopicProgress] = []
    for entry in consume.consume_stats_list:
        for group, stats_list in entry.items():
            for stats in stats_list:
                progress.extend(_progress_of(broker, group, stats))
    return BrokerReading(broker.cluster, broker.broker_name, broker.addr, runtime), progress


async def _minute_tps(admin: Admin, gate: asyncio.Semaphore, addr: str, name: str, key: str) -> float | None:
    async with gate:
        try:
            return (await admin.view_broker_stats(addr, name, key)).stats_minute.tps
        except (AdminError, OSError, TimeoutError):
            return None  # not collected on that broker (nothing put or got yet): no sample


async def _rates(
    admin: Admin, gate: asyncio.Semaphore, masters: list[BrokerAddress], progress: list[GroupTopicProgress]
) -> tuple[dict[tuple[str, str, str], float], dict[tuple[str, str, str, str], float]]:
    topic_keys: list[tuple[BrokerAddress, str]] = []
    for broker in masters:
        async with gate:
            try:
                topic_keys.extend((broker, t) for t in await user_topics(admin.rpc, broker.addr))
            except (AdminError, OSError, TimeoutError) as exc:
                logger.warning("topics of %s not read: %s", broker.addr, exc)
    by_name = {b.broker_name: b for b in masters}
    put = await asyncio.gather(*(_minute_tps(admin, gate, b.addr, TOPIC_PUT_NUMS, t) for b, t in topic_keys))
    got = await asyncio.gather(
        *(
            _minute_tps(admin, gate, by_name[p.broker_name].addr, GROUP_GET_NUMS, f"{p.topic}@{p.group}")
            for p in progress
        )
    )
    topic_tps = {
        (b.cluster, b.broker_name, t): tps
        for (b, t), tps in zip(topic_keys, put, strict=True)
        if tps is not None
    }
    group_tps = {
        (p.cluster, p.broker_name, p.topic, p.group): tps
        for p, tps in zip(progress, got, strict=True)
        if tps is not None
    }
    return topic_tps, group_tps


async def read_snapshot(
    admin: Admin, *, concurrency: int = DEFAULT_CONCURRENCY, rates: bool = True
) -> ClusterSnapshot:
    """Read every master of every cluster the NameServers know; a broker that fails is named in
    ``failures`` rather than failing the whole reading (a scrape should show the brokers that answer).

    ``rates`` adds the per-topic and per-group rates of the brokers' statistics items: one request per
    topic and per group/topic pair, the costly part on a large cluster (``rmq top`` skips it and derives
    its topic rates from offsets)."""
    started = time.monotonic()
    masters = [b for b in await admin.brokers() if b.is_master]
    gate = asyncio.Semaphore(max(1, concurrency))

    async def guarded(broker: BrokerAddress) -> tuple[BrokerReading, list[GroupTopicProgress]] | str:
        async with gate:
            try:
                return await _read_broker(admin, broker)
            except (AdminError, OSError, TimeoutError) as exc:
                logger.warning("broker %s (%s) not read: %s", broker.broker_name, broker.addr, exc)
                return str(exc) or type(exc).__name__

    answers = await asyncio.gather(*(guarded(b) for b in masters))
    groups = sorted({p.group for a in answers if not isinstance(a, str) for p in a[1]})

    async def members_of(group: str) -> tuple[int, str]:
        async with gate:
            try:
                found = await admin.consumer_connections(group)
            except (AdminError, OSError, TimeoutError):
                return 0, ""
            return len(found.connections), found.message_model or ""

    counted = await asyncio.gather(*(members_of(g) for g in groups))
    answered = [b for b, a in zip(masters, answers, strict=True) if not isinstance(a, str)]
    all_progress = [p for a in answers if not isinstance(a, str) for p in a[1]]
    topic_tps, group_tps = await _rates(admin, gate, answered, all_progress) if rates else ({}, {})
    brokers: list[BrokerReading] = []
    progress: list[GroupTopicProgress] = []
    failures: dict[str, str] = {}
    for broker, answer in zip(masters, answers, strict=True):
        if isinstance(answer, str):
            failures[broker.addr] = answer
        else:
            brokers.append(answer[0])
            progress.extend(answer[1])
    return ClusterSnapshot(
        taken_at=time.time(),
        brokers=tuple(brokers),
        progress=tuple(progress),
        failures=failures,
        elapsed=time.monotonic() - started,
        members=dict(zip(groups, counted, strict=True)),
        topic_put_tps=topic_tps,
        group_get_tps=group_tps,
    )
