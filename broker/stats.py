"""Counters behind GET_BROKER_RUNTIME_INFO (``mqadmin brokerStatus``).

Apache reports message totals as three snapshots of one running counter -- now, at this morning's midnight
and at yesterday's -- so "messages today" is the difference. The same is kept here, plus plain totals since
start; the rate fields Apache computes from sliding windows are derived from these totals.
"""

from __future__ import annotations

import time

from broker.clock import Clock
from broker.histogram import HistogramTable
from broker.rpc_latency import RpcLatency
from rocketmq_wire.message import const
from rocketmq_wire.message.stored import MessageExt

_DAY_MS = 86_400_000

#: Apache's buckets for ``rocketmq_message_size``: 1 KiB, 4 KiB, 512 KiB, 1, 2 and 4 MiB.
MESSAGE_SIZE_BOUNDS = (1024, 4096, 512 * 1024, 1024 * 1024, 2 * 1024 * 1024, 4 * 1024 * 1024)

#: Apache's buckets for the creation times of topics and subscription groups (ms): 10 ms to 5 s.
CREATE_TIME_BOUNDS = (10, 100, 1000, 3000, 5000)

_DELAY_PROPERTIES = (
    "__STARTDELIVERTIME",
    const.DELAY,
    const.TIMER_DELIVER_MS,
    const.TIMER_DELAY_SEC,
    const.TIMER_DELAY_MS,
)


def message_type(message: MessageExt) -> str:
    """Apache's ``message_type`` label of a send, judged from its properties in Apache's order."""
    properties = message.properties
    if properties.get(const.TRAN_MSG) == "true":
        return "transaction"
    if const.SHARDING_KEY in properties:
        return "fifo"
    if any(name in properties for name in _DELAY_PROPERTIES):
        return "delay"
    return "normal"


def _local_midnight_ms(now_ms: int) -> int:
    local = time.localtime(now_ms / 1000)
    midnight = time.mktime((local.tm_year, local.tm_mon, local.tm_mday, 0, 0, 0, 0, 0, -1))
    return int(midnight * 1000)


class BrokerStats:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self.boot_timestamp = clock.now_ms()
        self.put_times_total = 0
        self.put_size_total = 0
        self.put_failed_times = 0
        self.put_messages_total = 0
        self.get_found_total = 0
        self.get_miss_total = 0
        self.get_messages_total = 0
        self._day_start = _local_midnight_ms(self.boot_timestamp)
        self.put_today_morning = 0
        self.get_today_morning = 0
        self.put_yesterday_morning = 0
        self.get_yesterday_morning = 0
        #: Per (topic, message type): [messages, bytes, puts, then a count per MESSAGE_SIZE_BOUNDS bucket and
        #: one past them], what the metrics exporter reads at scrape time (one dict lookup per send).
        self.topic_in: dict[tuple[str, str], list[int]] = {}
        #: Per (group, topic): [messages, bytes] handed to consumers.
        self.group_out: dict[tuple[str, str], list[int]] = {}
        #: Per (group, popped topic, from its POP retry topic): [messages, bytes] handed out by POP_MESSAGE.
        self.pop_out: dict[tuple[str, str, bool], list[int]] = {}
        #: Per (group, topic, queue): the offset the group's last pull ended at (Apache's pull offsets).
        self.pull_offsets: dict[tuple[str, str, int], int] = {}
        #: Per (group, topic): messages sent to the group's dead-letter queue.
        self.dead_lettered: dict[tuple[str, str], int] = {}
        #: UPDATE_AND_CREATE_TOPIC's time (ms) per (invocation status, is_system flag).
        self.topic_create: HistogramTable[tuple[str, str]] = HistogramTable(CREATE_TIME_BOUNDS)
        #: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP's time (ms) per (invocation status,).
        self.group_create: HistogramTable[tuple[str]] = HistogramTable(CREATE_TIME_BOUNDS)
        #: Every answer's time, filled only while metrics are exported (the handlers are wrapped then).
        self.rpc_latency = RpcLatency()

    def _roll(self) -> None:
        now = self._clock.now_ms()
        if now - self._day_start < _DAY_MS:
            return
        days = (now - self._day_start) // _DAY_MS
        if days == 1:
            self.put_yesterday_morning, self.get_yesterday_morning = (
                self.put_today_morning,
                self.get_today_morning,
            )
        else:
            self.put_yesterday_morning, self.get_yesterday_morning = (
                self.put_messages_total,
                self.get_messages_total,
            )
        self.put_today_morning, self.get_today_morning = self.put_messages_total, self.get_messages_total
        self._day_start = _local_midnight_ms(now)

    def put(self, messages: int, size: int) -> None:
        self._roll()
        self.put_times_total += 1
        self.put_size_total += size
        self.put_messages_total += messages

    def sent(self, topic: str, message_type: str, messages: int, size: int) -> None:
        """A producer's send stored ``messages`` in ``size`` bytes (Apache counts each send's average size
        once in its size histogram)."""
        row = self.topic_in.get((topic, message_type))
        if row is None:
            row = self.topic_in[(topic, message_type)] = [0] * (4 + len(MESSAGE_SIZE_BOUNDS))
        row[0] += messages
        row[1] += size
        row[2] += 1
        average = size // messages if messages else 0
        bucket = 0
        for bound in MESSAGE_SIZE_BOUNDS:
            if average <= bound:
                break
            bucket += 1
        row[3 + bucket] += 1

    def pulled(
        self, group: str, topic: str, queue_id: int, next_offset: int, messages: int, size: int
    ) -> None:
        """A group's pull from a queue returned ``messages`` and goes on at ``next_offset``."""
        self.pull_offsets[(group, topic, queue_id)] = next_offset
        if messages:
            row = self.group_out.get((group, topic))
            if row is None:
                row = self.group_out[(group, topic)] = [0, 0]
            row[0] += messages
            row[1] += size

    def popped(self, group: str, topic: str, retry: bool, messages: int, size: int) -> None:
        """A POP of ``topic`` by ``group`` handed out ``messages`` (from the POP retry topic: ``retry``)."""
        row = self.pop_out.get((group, topic, retry))
        if row is None:
            row = self.pop_out[(group, topic, retry)] = [0, 0]
        row[0] += messages
        row[1] += size

    def to_dlq(self, group: str, topic: str) -> None:
        """A message of ``topic`` went to ``group``'s dead-letter queue (counted when chosen, as Apache)."""
        key = (group, topic)
        self.dead_lettered[key] = self.dead_lettered.get(key, 0) + 1

    def put_failed(self) -> None:
        self.put_failed_times += 1

    def got(self, messages: int) -> None:
        self._roll()
        if messages:
            self.get_found_total += 1
            self.get_messages_total += messages
        else:
            self.get_miss_total += 1

    def snapshot(self) -> dict[str, int]:
        """The message-count snapshots, under the names brokerStatus prints."""
        self._roll()
        return {
            "msgPutTotalTodayNow": self.put_messages_total,
            "msgGetTotalTodayNow": self.get_messages_total,
            "msgPutTotalTodayMorning": self.put_today_morning,
            "msgGetTotalTodayMorning": self.get_today_morning,
            "msgPutTotalYesterdayMorning": self.put_yesterday_morning,
            "msgGetTotalYesterdayMorning": self.get_yesterday_morning,
        }

    def per_second(self, total: int) -> float:
        """A total spread over the time since start (the stand-in for Apache's windowed rates)."""
        elapsed = max(1, self._clock.now_ms() - self.boot_timestamp) / 1000
        return total / elapsed

    def runtime(self) -> str:
        """Apache's ``[ 0 days, 0 hours, 0 minutes, 26 seconds ]``."""
        seconds = max(0, (self._clock.now_ms() - self.boot_timestamp) // 1000)
        days, seconds = divmod(seconds, 86_400)
        hours, seconds = divmod(seconds, 3600)
        minutes, seconds = divmod(seconds, 60)
        return f"[ {days} days, {hours} hours, {minutes} minutes, {seconds} seconds ]"
