"""Offset bookkeeping: the memory table, broadcasting's local file, clustering's broker store, and where a
new queue starts (committed offset, else ``consume_from``)."""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker
from broker.testing import BrokerClient, running_broker
from client.rpc import ClientRpc
from consumer.broker_api import BrokerApi
from consumer.config import ConsumerConfig
from consumer.errors import ConsumerError
from consumer.offset_store import LocalFileOffsetStore, ReadOffsetType, RemoteBrokerOffsetStore
from consumer.positioning import compute_pull_offset, consume_from_where, timestamp_ms
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.transport import RemotingClient

Q0 = MessageQueue(topic="T", broker_name="broker-a", queue_id=0)
Q1 = MessageQueue(topic="T", broker_name="broker-a", queue_id=1)


def test_memory_updates_can_be_increase_only_and_frozen(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(tmp_path, "client", "G")
    store.update(Q0, 10, increase_only=True)
    store.update(Q0, 5, increase_only=True)
    assert store.snapshot() == {Q0: 10}
    store.update(Q0, 5, increase_only=False)
    assert store.snapshot() == {Q0: 5}
    store.update_and_freeze(Q0, 100)
    store.update(Q0, 7, increase_only=False)
    assert store.snapshot() == {Q0: 100}, "a frozen queue ignores late handler updates"
    store.remove(Q0)
    store.update(Q0, 7, increase_only=False)
    assert store.snapshot() == {Q0: 7}, "removing unfreezes"


async def test_local_file_round_trip_keeps_a_backup(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(tmp_path, "10.0.0.1@1", "Broadcasters")
    store.update(Q0, 3, increase_only=False)
    store.update(Q1, 8, increase_only=False)
    await store.persist_all([Q0, Q1])
    assert store.path == tmp_path / "10.0.0.1@1" / "Broadcasters" / "offsets.json"
    store.update(Q0, 4, increase_only=False)
    await store.persist_all([Q0, Q1])
    backup = store.path.with_name("offsets.json.bak")
    assert backup.exists()

    again = LocalFileOffsetStore(tmp_path, "10.0.0.1@1", "Broadcasters")
    await again.load()
    assert again.snapshot() == {Q0: 4, Q1: 8}
    assert await again.read(Q1, ReadOffsetType.STORE) == 8
    assert await again.read(MessageQueue(topic="T", broker_name="x", queue_id=0), ReadOffsetType.STORE) == -1

    store.path.write_text("")  # a crash mid-write: the backup answers
    restored = LocalFileOffsetStore(tmp_path, "10.0.0.1@1", "Broadcasters")
    await restored.load()
    assert restored.snapshot() == {Q0: 3, Q1: 8}


async def test_local_file_is_in_javas_format(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(tmp_path, "c", "G")
    # what Java's LocalFileOffsetStore writes (fastjson, pretty-printed with tabs)
    store.path.parent.mkdir(parents=True)
    store.path.write_text(
        '{\n\t"offsetTable":{{\n\t\t\t"brokerName":"broker-a",\n\t\t\t"queueId":1,\n\t\t\t"topic":"T"\n'
        "\t\t}:12\n\t}\n}"
    )
    await store.load()
    assert store.snapshot() == {Q1: 12}
    await store.persist_all([Q1])
    assert (
        store.path.read_bytes() == b'{"offsetTable":{{"brokerName":"broker-a","queueId":1,"topic":"T"}:12}}'
    )


async def test_persisting_only_writes_the_queues_still_owned(tmp_path: Path) -> None:
    store = LocalFileOffsetStore(tmp_path, "c", "G")
    store.update(Q0, 1, increase_only=False)
    store.update(Q1, 2, increase_only=False)
    await store.persist_all([Q1])
    again = LocalFileOffsetStore(tmp_path, "c", "G")
    await again.load()
    assert again.snapshot() == {Q1: 2}


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    async with running_broker(tmp_path / "store") as running:
        async with BrokerClient(running.address) as client:
            await client.create_topic("T", 2)
            for i in range(5):
                await client.send("T", f"m{i}".encode(), queue_id=0)
        yield running


@pytest.fixture
async def api() -> AsyncIterator[BrokerApi]:
    async with RemotingClient() as client:
        config = ConsumerConfig()
        yield BrokerApi(ClientRpc(client, config.client_settings()), timeout_ms=3000, version=config.version)


async def test_broker_store_commits_and_reads_back(broker: Broker, api: BrokerApi) -> None:
    async def locate(queue: MessageQueue) -> str:
        return broker.address

    store = RemoteBrokerOffsetStore(api, "Readers", locate)
    assert await store.read(Q1, ReadOffsetType.STORE) == 0, "Java's brokers answer 0 for a fresh queue"
    store.update(Q0, 3, increase_only=True)
    await store.persist(Q0)
    assert broker.consumer_offsets.query_offset("Readers", "T", 0) == 3
    store.update(Q0, 4, increase_only=True)
    store.update(Q1, 1, increase_only=True)
    await store.persist_all([Q0], oneway=False)
    assert broker.consumer_offsets.query_offset("Readers", "T", 0) == 4
    assert store.snapshot() == {Q0: 4}, "queues no longer owned are forgotten"

    fresh = RemoteBrokerOffsetStore(api, "Readers", locate)
    assert await fresh.read(Q0, ReadOffsetType.MEMORY) == -1
    assert await fresh.read(Q0, ReadOffsetType.MEMORY_THEN_STORE) == 4
    assert await fresh.read(Q0, ReadOffsetType.MEMORY) == 4, "a store read fills memory"

    strict = RemoteBrokerOffsetStore(api, "Newcomers", locate, strict_not_found=True)
    assert await strict.read(Q0, ReadOffsetType.STORE) == -1, "setZeroIfNotFound=false: no offset"


async def test_an_unreachable_broker_is_an_error_not_a_missing_offset(api: BrokerApi) -> None:
    async def nowhere(queue: MessageQueue) -> str:
        return "127.0.0.1:1"

    with pytest.raises(ConsumerError, match="could not read the offset"):
        await RemoteBrokerOffsetStore(api, "G", nowhere).read(Q0, ReadOffsetType.STORE)


class _Offsets(LocalFileOffsetStore):
    def __init__(self, tmp_path: Path, committed: int) -> None:
        super().__init__(tmp_path, "c", "G")
        self.committed = committed

    async def read(self, queue: MessageQueue, how: ReadOffsetType) -> int:
        assert how is ReadOffsetType.STORE
        return self.committed


async def _start(
    tmp_path: Path, topic: str, committed: int, where: ConsumeFromWhere, asked: list[str]
) -> int:
    async def max_offset(queue: MessageQueue) -> int:
        asked.append("max")
        return 50

    async def search_offset(queue: MessageQueue, timestamp: int) -> int:
        asked.append(f"search {timestamp}")
        return 20

    return await compute_pull_offset(
        MessageQueue(topic=topic, broker_name="b", queue_id=0),
        offsets=_Offsets(tmp_path, committed),
        consume_from=where,
        timestamp=1234,
        max_offset=max_offset,
        search_offset=search_offset,
    )


@pytest.mark.parametrize(
    ("topic", "committed", "where", "expected", "questions"),
    [
        ("T", 7, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, 7, []),
        ("T", 7, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 7, []),
        ("T", -1, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, 50, ["max"]),
        ("%RETRY%G", -1, ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, 0, []),
        ("T", -1, ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, 0, []),
        ("T", -1, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 20, ["search 1234"]),
        ("%RETRY%G", -1, ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, 50, ["max"]),
        ("T", -1, ConsumeFromWhere.CONSUME_FROM_MAX_OFFSET, 50, ["max"]),
    ],
)
async def test_where_a_new_queue_starts(
    tmp_path: Path, topic: str, committed: int, where: ConsumeFromWhere, expected: int, questions: list[str]
) -> None:
    asked: list[str] = []
    assert await _start(tmp_path, topic, committed, where, asked) == expected
    assert asked == questions


def test_consume_from_names_and_times() -> None:
    assert consume_from_where("first_offset") is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET
    assert consume_from_where("CONSUME_FROM_TIMESTAMP") is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP
    with pytest.raises(ValueError, match="LAST_OFFSET"):
        consume_from_where("middle")
    assert timestamp_ms(1_700_000_000_123) == 1_700_000_000_123
    assert timestamp_ms("1700000000123") == 1_700_000_000_123
    assert timestamp_ms(None, now_ms=10_000_000) == 10_000_000 - 30 * 60 * 1000
    local = dt.datetime(2024, 5, 6, 7, 8, 9)
    assert timestamp_ms("20240506070809") == int(local.timestamp() * 1000)
    assert timestamp_ms("2024-05-06T07:08:09+00:00") == 1714979289000
    with pytest.raises(ValueError, match="not a time"):
        timestamp_ms("yesterday")


class _PausingApi:
    """A broker API whose first commit waits until released: a periodic commit round caught mid-way."""

    def __init__(self) -> None:
        self.sent: list[tuple[MessageQueue, int]] = []
        self.first_sent = asyncio.Event()
        self.release = asyncio.Event()

    async def update_offset(
        self, addr: str, group: str, queue: MessageQueue, offset: int, *, oneway: bool
    ) -> None:
        self.sent.append((queue, offset))
        if len(self.sent) == 1:
            self.first_sent.set()
            await self.release.wait()


async def test_a_commit_round_sends_what_memory_holds_when_it_reaches_each_queue() -> None:
    """A queue moved by the broker while a round is under way (its corrected offset frozen and committed, or
    the queue dropped) is not sent the offset the round started with: that would undo the correction."""
    api = _PausingApi()

    async def locate(queue: MessageQueue) -> str:
        return "broker-a:10911"

    store = RemoteBrokerOffsetStore(api, "G", locate)  # type: ignore[arg-type]
    q2 = MessageQueue(topic="T", broker_name="broker-a", queue_id=2)
    for queue in (Q0, Q1, q2):
        store.update(queue, 2, increase_only=False)
    round_ = asyncio.create_task(store.persist_all([Q0, Q1, q2]))
    await api.first_sent.wait()
    store.update_and_freeze(Q1, 0)  # the broker said "continue at 0"
    store.remove(q2)  # given up by a rebalance
    api.release.set()
    await round_
    assert api.sent == [(Q0, 2), (Q1, 0)]
