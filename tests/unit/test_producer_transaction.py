"""Transactional sends: half message, verdict, and the broker's check-back."""

from __future__ import annotations

import asyncio
import logging
import random
import threading
from typing import Any

import pytest

from producer import (
    LocalTransactionState,
    Message,
    MessageExt,
    ProducerConfig,
    ProducerError,
    SendStatus,
    TransactionProducer,
)
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.message import decode_properties
from tests.unit.producer_fakes import Cluster, FakeBroker, Received

TOPIC = "TxTopic"
GROUP = "TxGroup"


def never_checked(message: MessageExt) -> LocalTransactionState:
    raise AssertionError("no check expected")


def tx_producer(cluster: Cluster, checker: Any = never_checked, **kwargs: Any) -> TransactionProducer:
    kwargs.setdefault("rng", random.Random(7))
    return TransactionProducer(GROUP, cluster.namesrv, checker=checker, **kwargs)


async def end_of(broker: FakeBroker, count: int = 1) -> list[Received]:
    return await broker.wait_for(RequestCode.END_TRANSACTION, count)


@pytest.mark.parametrize(
    ("state", "verdict"),
    [
        (LocalTransactionState.COMMIT_MESSAGE, "8"),
        (LocalTransactionState.ROLLBACK_MESSAGE, "12"),
        (LocalTransactionState.UNKNOWN, "0"),
    ],
)
async def test_half_message_then_verdict(state: LocalTransactionState, verdict: str) -> None:
    calls: list[tuple[bytes, str, Any]] = []

    def execute(message: Message, transaction_id: str, arg: Any) -> LocalTransactionState:
        calls.append((message.body, transaction_id, arg))
        return state

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with tx_producer(cluster, executor=execute) as producer:
            result = await producer.send_in_transaction(Message(TOPIC, b"tx body", tags="Tx"), "the-arg")
            (end,) = await end_of(broker)
        (half,) = broker.sends()
        stored = broker.stored[0]
    properties = decode_properties(half.fields["i"])
    assert half.fields["f"] == "4", "TRANSACTION_PREPARED_TYPE"
    assert (properties["TRAN_MSG"], properties["PGROUP"]) == ("true", GROUP)
    assert calls == [(b"tx body", result.msg_id, "the-arg")]
    assert end.cmd.is_oneway
    assert end.fields == {
        "producerGroup": GROUP,
        "tranStateTableOffset": str(stored.queue_offset),
        "commitLogOffset": str(stored.commit_log_offset),
        "commitOrRollback": verdict,
        "fromTransactionCheck": "false",
        "msgId": result.msg_id,
        "bname": "broker-a",
    }
    assert end.cmd.remark is None
    assert result.local_state is state
    assert result.transaction_id == result.msg_id == properties["UNIQ_KEY"]


async def test_async_executor_and_delay_dropped() -> None:
    async def execute(message: Message, transaction_id: str, arg: Any) -> LocalTransactionState:
        await asyncio.sleep(0)
        return LocalTransactionState.COMMIT_MESSAGE

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with tx_producer(cluster) as producer:
            result = await producer.send_in_transaction(Message(TOPIC, b"x", delay_level=3), executor=execute)
            (end,) = await end_of(broker)
        (half,) = broker.sends()
    assert "DELAY" not in decode_properties(half.fields["i"])
    assert end.fields["commitOrRollback"] == "8"
    assert result.local_state is LocalTransactionState.COMMIT_MESSAGE


async def test_failing_executor_leaves_the_state_unknown_with_a_remark() -> None:
    def execute(message: Message, transaction_id: str, arg: Any) -> LocalTransactionState:
        raise RuntimeError("database down")

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with tx_producer(cluster, executor=execute) as producer:
            result = await producer.send_in_transaction(Message(TOPIC, b"x"))
            (end,) = await end_of(broker)
    assert end.fields["commitOrRollback"] == "0"
    assert "database down" in (end.cmd.remark or "")
    assert result.local_state is LocalTransactionState.UNKNOWN


async def test_half_message_not_stored_ok_is_rolled_back_without_running_the_executor() -> None:
    def execute(message: Message, transaction_id: str, arg: Any) -> LocalTransactionState:
        raise AssertionError("must not run")

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        broker.status_code = ResponseCode.FLUSH_SLAVE_TIMEOUT
        async with tx_producer(cluster, executor=execute) as producer:
            result = await producer.send_in_transaction(Message(TOPIC, b"x"))
            (end,) = await end_of(broker)
    assert result.status is SendStatus.FLUSH_SLAVE_TIMEOUT
    assert result.local_state is LocalTransactionState.ROLLBACK_MESSAGE
    assert end.fields["commitOrRollback"] == "12"


async def test_no_executor_is_an_error() -> None:
    async with Cluster() as cluster, tx_producer(cluster) as producer:
        with pytest.raises(ProducerError, match="executor"):
            await producer.send_in_transaction(Message(TOPIC, b"x"))


async def test_5x_end_transaction_names_the_topic_and_transaction_id() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        config = ProducerConfig(version=479)
        async with tx_producer(cluster, config=config) as producer:
            result = await producer.send_in_transaction(
                Message(TOPIC, b"x"), executor=lambda m, t, a: LocalTransactionState.COMMIT_MESSAGE
            )
            (end,) = await end_of(broker)
    assert end.fields["topic"] == TOPIC
    assert "transactionId" not in end.fields, "the fake broker's response carries none"
    assert result.status is SendStatus.SEND_OK


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_check_back_calls_the_checker_and_answers_on_the_same_connection(asynchronous: bool) -> None:
    checked: list[MessageExt] = []
    threads: list[int] = []

    def sync_checker(message: MessageExt) -> LocalTransactionState:
        checked.append(message)
        threads.append(threading.get_ident())
        return LocalTransactionState.ROLLBACK_MESSAGE

    async def async_checker(message: MessageExt) -> LocalTransactionState:
        return sync_checker(message)

    checker = async_checker if asynchronous else sync_checker
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with tx_producer(cluster, checker=checker) as producer:
            result = await producer.send_in_transaction(
                Message(TOPIC, b"pending", keys=["k"]), executor=lambda m, t, a: LocalTransactionState.UNKNOWN
            )
            await broker.wait_for(RequestCode.HEART_BEAT)
            await broker.check_transaction(producer.client_id, broker.stored[0], transaction_id="tx-7")
            first_end, check_end = await end_of(broker, 2)
    stored = broker.stored[0]
    assert checked[0].unique_id == result.msg_id
    assert checked[0].topic == TOPIC
    assert checked[0].body == b"pending"
    assert check_end.conn is broker.client_connections[producer.client_id]
    assert check_end.fields == {
        "producerGroup": GROUP,
        "tranStateTableOffset": str(stored.queue_offset),
        "commitLogOffset": str(stored.commit_log_offset),
        "commitOrRollback": "12",
        "fromTransactionCheck": "true",
        "msgId": result.msg_id,
        "transactionId": "tx-7",
    }
    assert first_end.fields["fromTransactionCheck"] == "false"
    if not asynchronous:
        assert threads[0] != threading.get_ident(), "plain checkers run in a worker thread"


async def test_failing_checker_answers_unknown() -> None:
    def checker(message: MessageExt) -> LocalTransactionState:
        raise ValueError("cannot tell")

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with tx_producer(cluster, checker=checker) as producer:
            await producer.send_in_transaction(
                Message(TOPIC, b"x"), executor=lambda m, t, a: LocalTransactionState.UNKNOWN
            )
            await broker.wait_for(RequestCode.HEART_BEAT)
            await broker.check_transaction(producer.client_id, broker.stored[0])
            _, answer = await end_of(broker, 2)
    assert answer.fields["commitOrRollback"] == "0"
    assert "cannot tell" in (answer.cmd.remark or "")


async def test_check_for_another_group_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="producer.transaction")
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with tx_producer(cluster) as producer:
            await producer.send_in_transaction(
                Message(TOPIC, b"x"), executor=lambda m, t, a: LocalTransactionState.UNKNOWN
            )
            await broker.wait_for(RequestCode.HEART_BEAT)
            foreign = broker.stored[0]
            foreign.properties = foreign.properties.replace(f"PGROUP\x01{GROUP}", "PGROUP\x01SomeoneElse")
            await broker.check_transaction(producer.client_id, foreign)
            # a heartbeat round trip after the check proves the check was read and passed over
            assert await producer.send_heartbeats() == 1
        assert len(broker.of(RequestCode.END_TRANSACTION)) == 1
    assert "group SomeoneElse" in caplog.text
