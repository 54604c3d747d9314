"""Fast failure: sends refused with SYSTEM_BUSY before anything is stored, as an Apache broker refuses them.

First the policy on its own (a fake store, a clock the test sets), then a broker on a temporary store,
flooded over one connection: whatever is answered SUCCESS is stored, nothing refused is.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import cast

import pytest

from broker import Broker
from broker.config import BrokerConfig, parse_properties
from broker.flow_control import SEND_REQUEST_CODES, SendFlowControl, cleaner_saw_it_late, ms_in_queue
from broker.store.commit_log import CommitLog
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.message import decode_messages
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt
from rocketmq_wire.transport import Connection

TIMEOUT_REMARK = re.compile(
    r"\[TIMEOUT_CLEAN_QUEUE\]broker busy, start flow control for a while, "
    r"period in queue: (\d+)ms, size of queue: (\d+)"
)
PCBUSY_REMARK = re.compile(
    r"\[PCBUSY_CLEAN_QUEUE\]broker busy, start flow control for a while, "
    r"period in queue: (\d+)ms, size of queue: (\d+)"
)
REJECT_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
OVERLOAD_REMARK = "[OVERLOAD]system busy, start flow control for a while"
TOPIC = "Flood"
QUEUES = 4


# -- the policy alone ----------------------------------------------------------------------------------------


class FakeStore:
    def __init__(self) -> None:
        self.busy = False
        self.busy_within_ms: float | None = None  # a request waiting longer than this waited through a stall
        self.asked: list[float] = []

    def is_os_page_cache_busy(self) -> bool:
        return self.busy

    def was_os_page_cache_busy_within(self, window_ms: float) -> bool:
        self.asked.append(window_ms)
        return self.busy or (self.busy_within_ms is not None and window_ms > self.busy_within_ms)


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeConn:
    remote_address = "10.0.0.1:5555"


CONN = cast(Connection, FakeConn())


def send_request(opaque: int = 1) -> RemotingCommand:
    return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, opaque=opaque)


def gate(**settings: object) -> tuple[SendFlowControl, FakeStore, FakeTime, BrokerConfig]:
    config = BrokerConfig(**settings)  # type: ignore[arg-type]
    store, clock = FakeStore(), FakeTime()
    return SendFlowControl(config, store, now=clock), store, clock, config


def test_the_four_send_codes_share_the_gate() -> None:
    assert set(SEND_REQUEST_CODES) == {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.CONSUMER_SEND_MSG_BACK,
    }


def test_a_send_that_waited_too_long_is_refused_with_apaches_remark() -> None:
    flow, _store, clock, _config = gate(wait_time_mills_in_send_queue=200)
    first, second, third = (send_request(n) for n in (1, 2, 3))
    for request in (first, second, third):
        assert flow.on_arrival(request, CONN, clock.now) is None
    assert flow.queued == 3
    clock.now += 0.1999
    assert flow.on_start(first, CONN, 100.0) is None  # 199.9 ms: in time
    clock.now += 0.0001
    answer = flow.on_start(second, CONN, 100.0)
    assert answer is not None and answer.code == ResponseCode.SYSTEM_BUSY and answer.opaque == 2
    assert answer.remark == (
        "[TIMEOUT_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 200ms, "
        "size of queue: 1"
    )
    flow.on_cancel(third, CONN, 100.0)
    assert flow.queued == 0 and flow.head_wait_ms() == 0
    assert flow.refused == {"TIMEOUT_CLEAN_QUEUE": 1}


def test_a_send_started_within_its_millisecond_is_never_timed_out() -> None:
    flow, _store, clock, _config = gate(wait_time_mills_in_send_queue=0)
    assert flow.on_arrival(send_request(), CONN, clock.now) is None
    clock.now += 0.0009
    assert flow.on_start(send_request(), CONN, 100.0) is None
    arrived = clock.now = 100.0051
    assert flow.on_arrival(send_request(), CONN, arrived) is None
    clock.now = 100.0101  # waited 5 ms, and the cleaner's round at 100.010 found it queued
    assert flow.on_start(send_request(), CONN, arrived) is not None


@pytest.mark.parametrize(
    ("arrived_ms", "started_ms", "limit_ms", "refused"),
    [
        (100_000, 100_000, 0, False),  # started in the millisecond it arrived
        (100_001, 100_009, 1, False),  # waited 8 ms, but no round of the cleaner fell in the wait
        (100_001, 100_010, 1, True),  # the round at 100,010 ms saw it waiting 9 ms >= 1
        (100_005, 100_012, 6, False),  # at the round it had waited 5 ms < 6; it started before the next
        (100_004, 100_010, 6, True),  # exactly 6 ms at the round
        (100_000, 100_199, 200, False),
        (100_000, 100_200, 200, True),
        (100_000, 100_500, 200, True),
    ],
)
def test_the_cleaner_refuses_only_what_one_of_its_rounds_finds_waiting_too_long(
    arrived_ms: int, started_ms: int, limit_ms: int, refused: bool
) -> None:
    # clock readings half-way through their millisecond
    assert cleaner_saw_it_late((arrived_ms + 0.5) / 1000, (started_ms + 0.5) / 1000, limit_ms) is refused


def test_a_refusal_reports_the_wait_on_a_millisecond_clock_never_below_the_limit() -> None:
    # Arrived at the end of 100,009 ms, looked at the start of 100,010 ms, just after the cleaner's round:
    # 0.02 ms of real time, but Apache's clocks read 100,009 and 100,010, a wait of 1 ms >= the 1 ms limit.
    flow, _store, clock, _config = gate(wait_time_mills_in_send_queue=1)
    arrived = clock.now = 100.00999
    assert flow.on_arrival(send_request(), CONN, arrived) is None
    clock.now = 100.01001
    answer = flow.on_start(send_request(), CONN, arrived)
    assert answer is not None and answer.code == ResponseCode.SYSTEM_BUSY
    assert "period in queue: 1ms, size of queue: 0" in (answer.remark or "")
    assert ms_in_queue(100.00999, 100.01001) == 1 and ms_in_queue(100.0101, 100.0109) == 0


def test_queued_through_a_busy_page_cache_is_pcbusy_before_timeout() -> None:
    flow, store, clock, _config = gate(wait_time_mills_in_send_queue=200)
    store.busy_within_ms = 120.0  # the last slow append ended 120 ms ago
    for opaque in (1, 2):
        flow.on_arrival(send_request(opaque), CONN, clock.now)
    clock.now += 0.5
    answer = flow.on_start(send_request(1), CONN, 100.0)
    assert answer is not None and answer.code == ResponseCode.SYSTEM_BUSY
    assert answer.remark == (
        "[PCBUSY_CLEAN_QUEUE]broker busy, start flow control for a while, period in queue: 500ms, "
        "size of queue: 1"
    )
    assert store.asked == [pytest.approx(500.0)]
    # Arrived after the slow append ended (waited 100 ms < 120 ms): not refused.
    flow.on_arrival(send_request(3), CONN, clock.now)
    clock.now += 0.1
    assert flow.on_start(send_request(3), CONN, clock.now - 0.1) is None


def test_busy_page_cache_refuses_on_arrival_whatever_the_fast_failure_flag() -> None:
    for enabled in (True, False):
        flow, store, clock, _config = gate(broker_fast_failure_enable=enabled)
        store.busy = True
        answer = flow.on_arrival(send_request(4), CONN, clock.now)
        assert answer is not None and answer.code == ResponseCode.SYSTEM_BUSY and answer.opaque == 4
        assert answer.remark == REJECT_REMARK
        assert flow.queued == 0


def test_a_full_queue_refuses_on_arrival() -> None:
    flow, _store, clock, config = gate(send_thread_pool_queue_capacity=2)
    assert flow.on_arrival(send_request(1), CONN, clock.now) is None
    clock.now += 0.25
    assert flow.on_arrival(send_request(2), CONN, clock.now) is None
    answer = flow.on_arrival(send_request(3), CONN, clock.now)
    assert answer is not None and answer.remark == OVERLOAD_REMARK
    assert flow.queued == 2
    clock.now += 0.25
    assert flow.head_wait_ms() == 500
    config.send_thread_pool_queue_capacity = 3  # read on every request
    assert flow.on_arrival(send_request(4), CONN, clock.now) is None
    flow.on_cancel(send_request(1), CONN, 100.0)
    assert flow.head_wait_ms() == 250  # the oldest left arrived at 100.25
    assert flow.refused == {"OVERLOAD": 1}


def test_disabled_fast_failure_processes_whatever_waited() -> None:
    flow, store, clock, config = gate(broker_fast_failure_enable=False, wait_time_mills_in_send_queue=1)
    store.busy_within_ms = 0.0
    flow.on_arrival(send_request(), CONN, clock.now)
    clock.now += 10
    assert flow.on_start(send_request(), CONN, 100.0) is None
    assert flow.queued == 0
    config.broker_fast_failure_enable = True
    flow.on_arrival(send_request(), CONN, clock.now)
    clock.now += 10
    assert flow.on_start(send_request(), CONN, clock.now - 10) is not None


# -- a running broker --------------------------------------------------------------------------------------


async def flood(client: BrokerClient, prefix: str, count: int) -> list[tuple[bytes, RemotingCommand]]:
    """``count`` pipelined SEND_MESSAGE_V2 on the client's one connection, spread over the queues."""
    bodies = [f"{prefix}-{i}".encode() for i in range(count)]
    answers = await asyncio.gather(
        *(client.send(TOPIC, body, queue_id=i % QUEUES) for i, body in enumerate(bodies))
    )
    return list(zip(bodies, answers, strict=True))


def stored(broker: Broker) -> dict[tuple[int, int], bytes]:
    """Every message of the topic, read back queue by queue, offset by offset."""
    found: dict[tuple[int, int], bytes] = {}
    store = broker.store
    for queue_id in range(QUEUES):
        offset, end = store.get_min_offset(TOPIC, queue_id), store.get_max_offset(TOPIC, queue_id)
        while offset < end:
            result = store.get_messages(TOPIC, queue_id, offset, 32)
            messages = decode_messages(result.body)
            assert messages, f"nothing readable at {TOPIC}/{queue_id} offset {offset}"
            for message in messages:
                found[(queue_id, message.queue_offset)] = message.body
            offset = messages[-1].queue_offset + 1
    return found


def assert_store_holds_exactly_the_successes(
    broker: Broker, answered: Iterable[tuple[bytes, RemotingCommand]]
) -> int:
    """Each SUCCESS is stored where its answer says; nothing else is. Returns the number of successes."""
    in_store = stored(broker)
    successes = 0
    for body, answer in answered:
        if answer.code == ResponseCode.SUCCESS:
            fields = answer.fields()
            assert in_store[(int(fields["queueId"]), int(fields["queueOffset"]))] == body
            successes += 1
        else:
            assert answer.code == ResponseCode.SYSTEM_BUSY
    assert len(in_store) == successes
    return successes


def refusals(
    answered: Iterable[tuple[bytes, RemotingCommand]], pattern: re.Pattern[str]
) -> list[re.Match[str]]:
    matches = []
    for _body, answer in answered:
        if answer.code == ResponseCode.SYSTEM_BUSY:
            match = pattern.fullmatch(answer.remark or "")
            assert match is not None, answer.remark
            matches.append(match)
    return matches


async def update_config(client: BrokerClient, text: str) -> None:
    answer = await client.request(RequestCode.UPDATE_BROKER_CONFIG, body=text.encode())
    assert answer.code == ResponseCode.SUCCESS


async def broker_config(client: BrokerClient) -> dict[str, str]:
    answer = await client.request(RequestCode.GET_BROKER_CONFIG)
    return parse_properties(answer.body.decode())


async def test_flood_with_one_ms_in_queue_refuses_sends_and_stores_only_successes(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store", wait_time_mills_in_send_queue=1) as broker:
        async with BrokerClient(broker.address) as client:
            assert (await client.create_topic(TOPIC, QUEUES)).code == ResponseCode.SUCCESS
            answered = await flood(client, "one-ms", 500)
        timed_out = refusals(answered, TIMEOUT_REMARK)
        assert timed_out, "a flood of 500 on one event loop must keep some sends waiting over 1 ms"
        for match in timed_out:
            assert int(match[1]) >= 1 and int(match[2]) < 500
        assert_store_holds_exactly_the_successes(broker, answered)
        assert broker.send_flow_control.queued == 0
        assert broker.send_flow_control.refused["TIMEOUT_CLEAN_QUEUE"] == len(timed_out)


async def test_flood_without_fast_failure_is_all_stored(tmp_path: Path) -> None:
    async with running_broker(
        tmp_path / "store", wait_time_mills_in_send_queue=1, broker_fast_failure_enable=False
    ) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, QUEUES)
            answered = await flood(client, "no-ff", 500)
        assert [answer.code for _, answer in answered] == [ResponseCode.SUCCESS] * 500
        assert assert_store_holds_exactly_the_successes(broker, answered) == 500


async def test_wait_in_queue_is_updated_live(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store", wait_time_mills_in_send_queue=60_000) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, QUEUES)
            patient = await flood(client, "patient", 300)
            assert all(answer.code == ResponseCode.SUCCESS for _, answer in patient)

            await update_config(client, "waitTimeMillsInSendQueue=1\n")
            assert (await broker_config(client))["waitTimeMillsInSendQueue"] == "1"
            hurried = await flood(client, "hurried", 500)
            assert refusals(hurried, TIMEOUT_REMARK)

            await update_config(client, "waitTimeMillsInSendQueue=60000\n")
            patient_again = await flood(client, "patient-again", 300)
            assert all(answer.code == ResponseCode.SUCCESS for _, answer in patient_again)
        assert assert_store_holds_exactly_the_successes(broker, patient + hurried + patient_again) >= 600


async def test_sends_queued_behind_a_slow_append_are_refused_pcbusy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = CommitLog.append

    def slow_once(self: CommitLog, build: Callable[[int], bytes]) -> tuple[int, bytes]:
        offset, data = original(self, build)
        if b"SLOW" in data:
            time.sleep(0.12)  # the page cache stalls while the lock is held; the event loop stalls with it
        return offset, data

    monkeypatch.setattr(CommitLog, "append", slow_once)
    async with running_broker(
        tmp_path / "store", os_page_cache_busy_time_out_mills=50, wait_time_mills_in_send_queue=60_000
    ) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, QUEUES)
            bodies = [b"before-%d" % i for i in range(5)] + [b"SLOW"] + [b"behind-%d" % i for i in range(30)]
            answers = await asyncio.gather(*(client.send(TOPIC, body, queue_id=0) for body in bodies))
            answered = list(zip(bodies, answers, strict=True))
            by_body = dict(answered)
            assert by_body[b"SLOW"].code == ResponseCode.SUCCESS
            busy = refusals(answered, PCBUSY_REMARK)
            assert busy, "sends queued behind the stalled append must be answered PCBUSY_CLEAN_QUEUE"
            assert all(int(match[1]) >= 100 for match in busy)  # they waited through the 120 ms stall
            sizes = [int(match[2]) for match in busy]
            assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
            refused_bodies = {body for body, answer in answered if answer.code != ResponseCode.SUCCESS}
            assert refused_bodies <= {body for body in bodies if body.startswith(b"behind-")}
            assert broker.store.slow_append_ended_at > 0 and not broker.store.is_os_page_cache_busy()

            later = await client.send(TOPIC, b"after", queue_id=0)  # arrived after the stall: stored
            assert later.code == ResponseCode.SUCCESS
        assert_store_holds_exactly_the_successes(broker, [*answered, (b"after", later)])


def message_for(topic: str, body: bytes) -> MessageExt:
    return MessageExt(
        topic=topic,
        body=body,
        queue_id=0,
        properties_string=encode_properties({"WAIT": "true"}),
        born_host="127.0.0.1:40000",
        born_timestamp=1_700_000_000_000,
    )


async def test_send_arriving_during_a_slow_off_loop_append_is_rejected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = CommitLog.append
    release = threading.Event()
    loop_thread = threading.current_thread()

    def held_off_loop(self: CommitLog, build: Callable[[int], bytes]) -> tuple[int, bytes]:
        if threading.current_thread() is not loop_thread:
            release.wait(10)
        return original(self, build)

    monkeypatch.setattr(CommitLog, "append", held_off_loop)
    async with running_broker(tmp_path / "store", os_page_cache_busy_time_out_mills=50) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, QUEUES)
            held = asyncio.ensure_future(
                asyncio.to_thread(broker.store.put_message, message_for(TOPIC, b"held"))
            )
            try:
                async with asyncio.timeout(5):
                    while not broker.store.is_os_page_cache_busy():
                        await asyncio.sleep(0.01)
                rejected = await client.send(TOPIC, b"rejected", queue_id=1)
            finally:
                release.set()
            assert (await held).ok
            assert rejected.code == ResponseCode.SYSTEM_BUSY and rejected.remark == REJECT_REMARK
            accepted = await client.send(TOPIC, b"accepted", queue_id=1)
            assert accepted.code == ResponseCode.SUCCESS
        assert sorted(stored(broker).values()) == [b"accepted", b"held"]
        assert broker.send_flow_control.refused == {"REJECTREQUEST": 1}


async def test_full_send_queue_is_overload(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store", wait_time_mills_in_send_queue=60_000) as broker:
        async with BrokerClient(broker.address) as client:
            await client.create_topic(TOPIC, QUEUES)
            await update_config(client, "sendThreadPoolQueueCapacity=3\n")
            answered = await flood(client, "overload", 50)
            info = await client.request(RequestCode.GET_BROKER_RUNTIME_INFO)
        overloaded = [answer for _, answer in answered if answer.code == ResponseCode.SYSTEM_BUSY]
        assert all(answer.remark == OVERLOAD_REMARK for answer in overloaded)
        # Whatever chunks the 50 frames arrive in, at most 3 wait at a time: most are turned away at once.
        assert len(overloaded) >= 50 - 2 * 3
        assert_store_holds_exactly_the_successes(broker, answered)
        table = KVTable.from_json(info.body).table
        assert table["sendThreadPoolQueueCapacity"] == "3"
        assert table["sendThreadPoolQueueSize"] == "0"


async def test_broker_config_shows_and_updates_the_fast_failure_keys(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store") as broker:
        async with BrokerClient(broker.address) as client:
            settings = await broker_config(client)
            assert settings["brokerFastFailureEnable"] == "true"
            # Apache's default is 200 ms; brokers started for tests allow 1 s (broker.testing).
            assert BrokerConfig().wait_time_mills_in_send_queue == 200
            assert settings["waitTimeMillsInSendQueue"] == "1000"
            assert settings["sendThreadPoolQueueCapacity"] == "10000"
            assert settings["osPageCacheBusyTimeOutMills"] == "1000"
            assert broker.store.config.os_page_cache_busy_timeout_ms == 1000
            await update_config(client, "osPageCacheBusyTimeOutMills=70\nbrokerFastFailureEnable=false\n")
            settings = await broker_config(client)
            assert settings["osPageCacheBusyTimeOutMills"] == "70"
            assert settings["brokerFastFailureEnable"] == "false"
            assert broker.store.config.os_page_cache_busy_timeout_ms == 70
            assert broker.config.broker_fast_failure_enable is False


def test_fast_failure_keys_are_read_from_broker_conf() -> None:
    config = BrokerConfig.from_properties(
        "brokerFastFailureEnable=false\n"
        "waitTimeMillsInSendQueue=5\n"
        "sendThreadPoolQueueCapacity=7\n"
        "osPageCacheBusyTimeOutMills=70\n"
    )
    assert config.broker_fast_failure_enable is False
    assert config.wait_time_mills_in_send_queue == 5
    assert config.send_thread_pool_queue_capacity == 7
    assert config.os_page_cache_busy_time_out_mills == 70
    assert config.store_config().os_page_cache_busy_timeout_ms == 70
    defaults = BrokerConfig()
    assert (
        defaults.broker_fast_failure_enable,
        defaults.wait_time_mills_in_send_queue,
        defaults.send_thread_pool_queue_capacity,
        defaults.store_config().os_page_cache_busy_timeout_ms,
    ) == (True, 200, 10_000, 1000)
