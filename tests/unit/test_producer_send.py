"""Producer sends against the fake cluster: the request on the wire, the result, queue choice, limits."""

from __future__ import annotations

import asyncio
import os
import time
import zlib
from collections.abc import Sequence
from typing import Any

import pytest

from producer import (
    Message,
    MessageQueue,
    MessageTooLargeError,
    MessageValidationError,
    Producer,
    ProducerConfig,
    ProducerStateError,
    SendStatus,
    select_by_hash,
)
from producer.selectors import hash_index, java_hash_code
from rocketmq_wire.codes import RequestCode, ResponseCode, SerializeType
from rocketmq_wire.message import decode_batch, decode_offset_msg_id, decode_properties, decode_unique_id
from tests.unit.producer_fakes import Cluster

TOPIC = "TopicTest"


async def test_send_puts_java_header_fields_and_returns_the_brokers_answer() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer("GroupA") as producer:
            before = time.time_ns() // 1_000_000
            result = await producer.send(
                Message(TOPIC, b"hello", tags="TagA", keys=["k1", "k2"], properties={"color": "blue"})
            )
        (received,) = cluster.brokers["broker-a"].sends()
    fields = received.fields
    assert received.cmd.code == RequestCode.SEND_MESSAGE_V2
    assert received.cmd.body == b"hello"
    assert {k: fields[k] for k in "abcdfhjkmn"} == {
        "a": "GroupA",
        "b": TOPIC,
        "c": "TBW102",
        "d": "4",
        "f": "0",
        "h": "0",
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }
    assert before <= int(fields["g"]) <= time.time_ns() // 1_000_000
    assert "l" not in fields
    properties = decode_properties(fields["i"])
    assert properties == {
        "color": "blue",
        "KEYS": "k1 k2",
        "UNIQ_KEY": result.msg_id,
        "WAIT": "true",
        "TAGS": "TagA",
    }
    assert not fields["i"].endswith("\x02"), "a 4.9.x producer leaves no trailing separator"
    assert result.status is SendStatus.SEND_OK
    assert result.message_queue == MessageQueue(TOPIC, "broker-a", int(fields["e"]))
    assert result.queue_offset == 0
    assert result.region_id == "DefaultRegion"
    assert decode_offset_msg_id(result.offset_msg_id or "").offset == 0
    assert decode_unique_id(result.msg_id).pid == os.getpid() & 0xFFFF


async def test_round_robin_visits_every_queue_in_turn() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=3)
        async with cluster.producer() as producer:
            results = [await producer.send(Message(TOPIC, b"x")) for _ in range(12)]
    queues = [(r.message_queue.broker_name, r.message_queue.queue_id) for r in results]
    order = sorted(set(queues))
    assert len(order) == 6
    start = order.index(queues[0])
    assert queues == [order[(start + i) % 6] for i in range(12)]


async def test_sharding_key_picks_the_java_hash_queue_every_time() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=4)
        async with cluster.producer() as producer:
            queues = await producer.fetch_publish_queues(TOPIC)
            results = [await producer.send(Message(TOPIC, b"o"), sharding_key="order-42") for _ in range(5)]
    expected = queues[hash_index("order-42", len(queues))]
    assert {r.message_queue for r in results} == {expected}


def test_java_hash_code_matches_java() -> None:
    # "order-42".hashCode() and friends, as Java computes them (signed 32-bit)
    assert java_hash_code("") == 0
    assert java_hash_code("a") == 97
    assert java_hash_code("polygenelubricants") == -(1 << 31)
    assert java_hash_code(-7) == -7
    assert java_hash_code(True) == 1231
    assert java_hash_code(1 << 40) == (1 << 8)
    assert hash_index("polygenelubricants", 3) == (1 << 31) % 3
    with pytest.raises(TypeError):
        java_hash_code(1.5)


async def test_selector_gets_the_queues_and_its_choice_is_used() -> None:
    seen: list[Sequence[MessageQueue]] = []

    def last_queue(queues: Sequence[MessageQueue], message: Message, arg: Any) -> MessageQueue:
        seen.append(list(queues))
        assert arg == "my-arg"
        return queues[-1]

    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues=2)
        async with cluster.producer() as producer:
            result = await producer.send(Message(TOPIC, b"s"), selector=last_queue, arg="my-arg")
            explicit = await producer.send(Message(TOPIC, b"q"), queue=MessageQueue(TOPIC, "broker-a", 1))
    assert len(seen[0]) == 4
    assert result.message_queue == seen[0][-1]
    assert explicit.message_queue == MessageQueue(TOPIC, "broker-a", 1)
    assert select_by_hash(seen[0], Message(TOPIC, b""), "k") == seen[0][hash_index("k", 4)]


async def test_body_of_4_kib_is_compressed_and_flagged_one_byte_less_is_not() -> None:
    big, small = b"abc" * 1365 + b"d", b"abc" * 1365
    assert (len(big), len(small)) == (4096, 4095)
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            await producer.send(Message(TOPIC, big))
            await producer.send(Message(TOPIC, small))
        compressed, plain = cluster.brokers["broker-a"].sends()
    assert compressed.fields["f"] == str(0x301)
    assert zlib.decompress(compressed.cmd.body) == big
    assert compressed.cmd.body == zlib.compress(big, 5)
    assert plain.fields["f"] == "0"
    assert plain.cmd.body == small


async def test_compression_threshold_is_configurable() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer(config=ProducerConfig(compress_over=10)) as producer:
            await producer.send(Message(TOPIC, b"0123456789"))
        (received,) = cluster.brokers["broker-a"].sends()
    assert received.fields["f"] == str(0x301)


async def test_body_over_the_limit_is_refused_before_sending() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            with pytest.raises(MessageTooLargeError) as caught:
                await producer.send(Message(TOPIC, b"x" * (4 * 1024 * 1024 + 1)))
            with pytest.raises(MessageValidationError, match="empty"):
                await producer.send(Message(TOPIC, b""))
        async with cluster.producer(config=ProducerConfig(max_message_size=100)) as small:
            await small.send(Message(TOPIC, b"x" * 100))
            with pytest.raises(MessageTooLargeError):
                await small.send(Message(TOPIC, b"x" * 101))
        assert len(cluster.brokers["broker-a"].sends()) == 1
        assert cluster.namesrvs[0].route_requests(TOPIC) == 1
    assert caught.value.limit == 4 * 1024 * 1024
    assert "4194305" in str(caught.value)


@pytest.mark.parametrize("topic", ["", "has space", "TBW102", "SCHEDULE_TOPIC_XXXX", "x" * 128])
async def test_bad_topics_are_refused(topic: str) -> None:
    async with Cluster() as cluster, cluster.producer() as producer:
        with pytest.raises(MessageValidationError):
            await producer.send(Message(topic, b"x"))


def test_bad_group_is_refused() -> None:
    with pytest.raises(MessageValidationError):
        Producer("DEFAULT_PRODUCER", "127.0.0.1:9876")
    with pytest.raises(MessageValidationError):
        Producer("bad group", "127.0.0.1:9876")
    with pytest.raises(ValueError, match="NameServer"):
        Producer("GoodGroup", " ; ")


async def test_send_before_start_and_after_shutdown_is_refused() -> None:
    async with Cluster() as cluster:
        producer = cluster.producer()
        with pytest.raises(ProducerStateError):
            await producer.send(Message(TOPIC, b"x"))
        await producer.start()
        with pytest.raises(ProducerStateError):
            await producer.start()
        await producer.shutdown()
        await producer.shutdown()
        with pytest.raises(ProducerStateError):
            await producer.send(Message(TOPIC, b"x"))


async def test_oneway_sets_the_flag_and_waits_for_nothing() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            await producer.send_oneway(Message(TOPIC, b"fire"))
            (received,) = await cluster.brokers["broker-a"].wait_for(RequestCode.SEND_MESSAGE_V2)
    assert received.cmd.is_oneway
    assert received.cmd.body == b"fire"


async def test_many_sends_in_flight_share_one_connection() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC, queues=8)
        broker = cluster.brokers["broker-a"]
        async with cluster.producer() as producer:
            results = await asyncio.gather(*(producer.send(Message(TOPIC, b"p%d" % i)) for i in range(200)))
            send_conns = {id(r.conn) for r in broker.sends()}
    assert len({r.msg_id for r in results}) == 200
    assert len({r.cmd.opaque for r in broker.sends()}) == 200
    assert len(send_conns) == 1
    assert sorted(m.body for m in broker.stored) == sorted(b"p%d" % i for i in range(200))


async def test_delay_level_and_wait_flag_become_properties() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            await producer.send(Message(TOPIC, b"d", delay_level=3, wait_store_msg_ok=False))
        (received,) = cluster.brokers["broker-a"].sends()
    properties = decode_properties(received.fields["i"])
    assert properties["DELAY"] == "3"
    assert properties["WAIT"] == "false"


async def test_not_stored_ok_status_is_reported_not_retried_by_default() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC)
        for broker in cluster.brokers.values():
            broker.status_code = ResponseCode.FLUSH_DISK_TIMEOUT
        async with cluster.producer() as producer:
            result = await producer.send(Message(TOPIC, b"x"))
        assert len(cluster.all_sends()) == 1
        async with cluster.producer(
            config=ProducerConfig(retry_another_broker_when_not_store_ok=True)
        ) as retrying:
            again = await retrying.send(Message(TOPIC, b"y"))
        sends = cluster.all_sends()[1:]
    assert result.status is SendStatus.FLUSH_DISK_TIMEOUT
    assert again.status is SendStatus.FLUSH_DISK_TIMEOUT
    assert len(sends) == 3
    assert sends[0].fields["n"] != sends[1].fields["n"]
    assert len({r.fields["i"] for r in sends}) == 1, "retries resend the same message (same unique id)"


async def test_rocketmq_serialization_on_request() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer(serialize_type=SerializeType.ROCKETMQ) as producer:
            result = await producer.send(Message(TOPIC, b"bin", tags="T"))
        (route_request,) = cluster.namesrvs[0].of(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        (received,) = cluster.brokers["broker-a"].sends()
    assert route_request.cmd.serialize_type is SerializeType.ROCKETMQ
    assert received.cmd.serialize_type is SerializeType.ROCKETMQ
    assert received.fields["b"] == TOPIC
    assert decode_properties(received.fields["i"])["UNIQ_KEY"] == result.msg_id


async def test_string_body_and_string_keys_are_taken_whole() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            await producer.send(Message(TOPIC, "héllo", keys="order-1"))  # type: ignore[arg-type]
            await producer.send_batch([Message(TOPIC, "b", keys="bk")])  # type: ignore[arg-type]
        first, batch = cluster.brokers["broker-a"].sends()
    assert first.cmd.body == "héllo".encode()
    assert decode_properties(first.fields["i"])["KEYS"] == "order-1"
    assert decode_batch(batch.cmd.body)[0].properties["KEYS"] == "bk"
    # Like Java's setKeys(String), a space-separated string is several keys.
    assert Message(TOPIC, b"", keys="k1 k2").keys == ["k1", "k2"]  # type: ignore[arg-type]
