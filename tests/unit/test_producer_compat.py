"""``producer.compat``: the official Python client's producer API on this producer."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from producer import compat
from producer.compat import (
    Message,
    MessageProperty,
    Producer,
    ProducerSendSyncFailed,
    ProducerStartFailed,
    ReceivedMessage,
    SendResult,
    SendStatus,
    TransactionMQProducer,
    TransactionStatus,
)
from producer.selectors import hash_index
from rocketmq_wire import acl
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.message import decode_properties
from tests.unit.producer_fakes import Cluster

TOPIC = "CompatTopic"


def test_api_surface_matches_the_official_client() -> None:
    assert list(inspect.signature(Producer).parameters) == [
        "group_id",
        "orderly",
        "timeout",
        "compress_level",
        "max_message_size",
    ]
    assert list(inspect.signature(TransactionMQProducer).parameters) == [
        "group_id",
        "checker_callback",
        "user_args",
        "timeout",
        "compress_level",
        "max_message_size",
    ]
    for name in (
        "set_group",
        "set_name_server_address",
        "set_name_server_domain",
        "set_session_credentials",
        "set_timeout",
        "set_compress_level",
        "set_max_message_size",
        "start",
        "shutdown",
        "send_sync",
        "send_oneway",
        "send_orderly_with_sharding_key",
    ):
        assert callable(getattr(Producer, name)), name
    assert list(inspect.signature(TransactionMQProducer.send_message_in_transaction).parameters) == [
        "self",
        "message",
        "local_execute",
        "user_args",
    ]
    assert SendResult._fields == ("status", "msg_id", "offset")
    assert [s.value for s in SendStatus] == [0, 1, 2, 3]
    assert [s.name for s in TransactionStatus] == ["COMMIT", "ROLLBACK", "UNKNOWN"]
    for name in ("set_keys", "set_tags", "set_body", "set_property", "set_delay_time_level"):
        assert callable(getattr(Message, name)), name
    assert set(compat.__all__) <= set(dir(compat))


def make_message(body: str = "message body") -> Message:
    msg = Message(TOPIC)
    msg.set_keys("XXX YYY")
    msg.set_tags("TagX")
    msg.set_property("property", "test")
    msg.set_body(body)
    return msg


async def test_send_sync_oneway_and_orderly_like_the_official_examples() -> None:
    async with Cluster(("broker-a", "broker-b"), secret_key="secret") as cluster:
        cluster.route(TOPIC, queues=2)

        def script() -> tuple[Any, Any, list[Any]]:
            producer = Producer("CompatGroup", timeout=5000)
            producer.set_name_server_address(cluster.namesrv)
            producer.set_session_credentials("ak", "secret", "ALIYUN")
            producer.start()
            try:
                sync = producer.send_sync(make_message())
                delayed = make_message("later")
                delayed.set_delay_time_level(2)
                producer.send_oneway(delayed)
                orderly = [
                    producer.send_orderly_with_sharding_key(make_message(), "orderId") for _ in range(3)
                ]
            finally:
                producer.shutdown()
            return sync, delayed, orderly

        sync, _, orderly = await asyncio.to_thread(script)
        sends = cluster.all_sends()
        brokers = cluster.brokers.values()
    assert isinstance(sync, SendResult)
    assert sync.status == SendStatus.OK and sync.status == 0
    first = decode_properties(sends[0].fields["i"])
    assert first["UNIQ_KEY"] == sync.msg_id
    assert (first["KEYS"], first["TAGS"], first["property"]) == ("XXX YYY", "TagX", "test")
    assert sends[0].cmd.body == b"message body"
    assert sync.offset == 0
    assert decode_properties(sends[1].fields["i"])["DELAY"] == "2"
    assert sends[1].cmd.is_oneway
    queues = sorted({(r.fields["n"], r.fields["e"]) for r in sends[2:]})
    expected = sorted((b, str(q)) for b in ("broker-a", "broker-b") for q in range(2))[
        hash_index("orderId", 4)
    ]
    assert queues == [expected]
    start = orderly[0].offset
    assert [r.offset for r in orderly] == [start, start + 1, start + 2]
    assert all(acl.verify(r.cmd, "secret") for r in sends)
    assert all(b.bad_signatures == 0 for b in brokers)


async def test_send_errors_are_the_official_exception_types() -> None:
    async with Cluster() as cluster:

        def script() -> None:
            producer = Producer("CompatGroup")
            with pytest.raises(ProducerStartFailed):
                producer.start()
            with pytest.raises(ProducerSendSyncFailed):
                producer.send_sync(make_message())
            producer.set_name_server_address(cluster.namesrv)
            with producer:
                with pytest.raises(ProducerSendSyncFailed):
                    producer.send_sync(make_message())  # no route for the topic
            with pytest.raises(compat.ProducerException):
                producer.set_name_server_domain("http://jmenv.tbsite.net:8080/rocketmq/nsaddr")

        await asyncio.to_thread(script)


async def test_transaction_producer_like_the_official_example() -> None:
    checks: list[ReceivedMessage] = []

    def check_callback(msg: ReceivedMessage) -> TransactionStatus:
        checks.append(msg)
        return TransactionStatus.COMMIT

    locals_seen: list[tuple[ReceivedMessage, Any]] = []

    def local_execute(msg: ReceivedMessage, user_args: Any) -> TransactionStatus:
        locals_seen.append((msg, user_args))
        return TransactionStatus.UNKNOWN

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        producer = TransactionMQProducer("CompatTx", check_callback)
        producer.set_name_server_address(cluster.namesrv)
        await asyncio.to_thread(producer.start)
        try:
            result = await asyncio.to_thread(
                producer.send_message_in_transaction, make_message("tx"), local_execute, {"order": 1}
            )
            await broker.wait_for(RequestCode.HEART_BEAT)
            native = producer._native
            assert native is not None
            await broker.check_transaction(native.client_id, broker.stored[0])
            _, answer = await broker.wait_for(RequestCode.END_TRANSACTION, 2)
        finally:
            await asyncio.to_thread(producer.shutdown)
    msg, args = locals_seen[0]
    assert args == {"order": 1}
    assert msg.id == result.msg_id
    assert msg.body == b"tx"
    assert msg.tags == b"TagX"
    assert msg.get_property("property") == b"test"
    assert msg[MessageProperty.KEYS] == b"XXX YYY"
    assert str(msg) == "tx" and bytes(msg) == b"tx"
    assert result.status == SendStatus.OK
    assert checks[0].id == result.msg_id
    assert checks[0].topic == TOPIC
    assert answer.fields["commitOrRollback"] == "8"
    assert answer.fields["fromTransactionCheck"] == "true"
