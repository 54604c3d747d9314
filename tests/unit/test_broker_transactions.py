"""Transactional messages: half messages, commit, rollback, and the broker checking back with the producer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker, ManualClock
from broker.testing import BrokerClient, message_properties, running_broker
from broker.timer import TIMER_TOPIC
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.transaction import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
    TransactionType,
)
from rocketmq_wire.message import const, decode_messages, sysflag
from rocketmq_wire.message.ids import decode_offset_msg_id
from rocketmq_wire.transport import Connection

LIMIT_S = 5
GROUP = "TxGroup"


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def broker(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Broker]:
    async with running_broker(tmp_path / "store", clock=clock) as running:
        yield running


async def _send_half(client: BrokerClient, body: bytes, born: int, *, queue_id: int = 0) -> RemotingCommand:
    properties = message_properties("Tx", ["tx-key"], {"TRAN_MSG": "true", "PGROUP": GROUP})
    sent = await client.send(
        "Orders",
        body,
        queue_id=queue_id,
        properties=properties,
        sys_flag=sysflag.TRANSACTION_PREPARED_TYPE,
        group=GROUP,
        born_timestamp=born,
    )
    assert sent.code == ResponseCode.SUCCESS
    return sent


def _verdict(
    sent: RemotingCommand, kind: TransactionType, *, group: str = GROUP
) -> EndTransactionRequestHeader:
    fields = sent.fields()
    return EndTransactionRequestHeader(
        producer_group=group,
        tran_state_table_offset=int(fields["queueOffset"]),
        commit_log_offset=decode_offset_msg_id(fields["msgId"]).offset,
        commit_or_rollback=kind,
        from_transaction_check=False,
        msg_id=fields["transactionId"],
    )


async def test_commit_makes_the_half_message_visible(broker: Broker, clock: ManualClock) -> None:
    async with BrokerClient(broker.address) as producer, BrokerClient(broker.address) as consumer:
        await producer.create_topic("Orders", 2)
        sent = await _send_half(producer, b"pay", clock.now_ms(), queue_id=1)
        assert sent.fields()["queueId"] == "1"
        assert broker.store.get_max_offset("Orders", 1) == 0
        assert broker.store.get_max_offset("RMQ_SYS_TRANS_HALF_TOPIC", 0) == 1

        pending = asyncio.create_task(consumer.pull("c", "Orders", 1, 0, suspend_ms=600_000))
        await producer.oneway(RequestCode.END_TRANSACTION, _verdict(sent, TransactionType.COMMIT_TYPE))
        async with asyncio.timeout(LIMIT_S):
            answer = await pending
        [committed] = decode_messages(answer.body)
        assert committed.body == b"pay" and committed.topic == "Orders" and committed.queue_id == 1
        assert sysflag.transaction_type(committed.sys_flag) is sysflag.TransactionType.COMMIT
        assert committed.prepared_transaction_offset == decode_offset_msg_id(sent.fields()["msgId"]).offset
        assert committed.keys == ["tx-key"]
        assert broker.store.get_max_offset("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0) == 1


async def test_rollback_discards_and_bad_verdicts_are_refused(broker: Broker, clock: ManualClock) -> None:
    async with BrokerClient(broker.address) as producer:
        await producer.create_topic("Orders", 1)
        sent = await _send_half(producer, b"cancelled", clock.now_ms())
        wrong_group = await producer.request(
            RequestCode.END_TRANSACTION, _verdict(sent, TransactionType.COMMIT_TYPE, group="Other")
        )
        assert (
            wrong_group.code == ResponseCode.SYSTEM_ERROR and wrong_group.remark == "The producer group wrong"
        )
        header = _verdict(sent, TransactionType.ROLLBACK_TYPE)
        header.commit_log_offset = 7
        nowhere = await producer.request(RequestCode.END_TRANSACTION, header)
        assert nowhere.remark == "Find prepared transaction message failed"

        rolled_back = await producer.request(
            RequestCode.END_TRANSACTION, _verdict(sent, TransactionType.ROLLBACK_TYPE)
        )
        assert rolled_back.code == ResponseCode.SUCCESS
        assert broker.store.get_max_offset("Orders", 0) == 0
        assert broker.store.get_max_offset("RMQ_SYS_TRANS_OP_HALF_TOPIC", 0) == 1
        # a settled half message is not checked back
        round_ = await broker.transactions.check_once()
        assert round_.checked == 0 and round_.settled_until == 1


class CheckHandler:
    """A producer that answers each CHECK_TRANSACTION_STATE with a commit."""

    def __init__(self, client: BrokerClient) -> None:
        self.client = client
        self.checks: list[tuple[CheckTransactionStateRequestHeader, bytes]] = []
        self.asked = asyncio.Event()

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = request.read_header(CheckTransactionStateRequestHeader)
        self.checks.append((header, request.body))
        self.asked.set()
        verdict = EndTransactionRequestHeader(
            producer_group=GROUP,
            tran_state_table_offset=header.tran_state_table_offset,
            commit_log_offset=header.commit_log_offset,
            commit_or_rollback=TransactionType.COMMIT_TYPE,
            from_transaction_check=True,
            msg_id=header.msg_id,
            transaction_id=header.transaction_id,
        )
        await self.client.oneway(RequestCode.END_TRANSACTION, verdict)
        return None


async def test_undecided_half_message_is_checked_back_and_committed(
    broker: Broker, clock: ManualClock
) -> None:
    producer = BrokerClient(broker.address)
    check = CheckHandler(producer)
    producer.client.register(RequestCode.CHECK_TRANSACTION_STATE, check)
    try:
        async with BrokerClient(broker.address) as consumer:
            await producer.heartbeat("tx-producer", producer_groups=[GROUP])
            await producer.create_topic("Orders", 1)
            sent = await _send_half(producer, b"undecided", clock.now_ms())
            # too young to be checked
            assert (await broker.transactions.check_once()).checked == 0
            pending = asyncio.create_task(consumer.pull("c", "Orders", 0, 0, suspend_ms=600_000))
            clock.advance(60_000)  # the check round runs every 60 s; the message is older than 6 s by then
            async with asyncio.timeout(LIMIT_S):
                await check.asked.wait()
                answer = await pending
            [header_body] = check.checks
            header, body = header_body
            assert header.msg_id == sent.fields()["transactionId"]
            assert header.commit_log_offset != decode_offset_msg_id(sent.fields()["msgId"]).offset
            [asked_about] = decode_messages(body)
            assert asked_about.topic == "Orders" and asked_about.body == b"undecided"
            assert asked_about.properties["TRANSACTION_CHECK_TIMES"] == "1"
            assert asked_about.properties["WAIT"] == "false"  # Apache's renewed copy says so too
            [committed] = decode_messages(answer.body)
            assert committed.body == b"undecided"
    finally:
        await producer.close()


async def test_a_message_checked_too_often_is_given_up(tmp_path: Path) -> None:
    clock = ManualClock()
    async with (
        running_broker(tmp_path / "store", clock=clock, transaction_check_max=1) as broker,
        BrokerClient(broker.address) as producer,
    ):
        await producer.create_topic("Orders", 1)
        await _send_half(producer, b"forgotten", clock.now_ms())
        clock.advance(7000)
        first = await broker.transactions.check_once()  # nobody to ask, but it counts as a check
        assert first.checked == 1
        clock.advance(7000)
        second = await broker.transactions.check_once()
        assert second.discarded == 1 and second.checked == 0
        assert (await broker.transactions.check_once()).checked == 0
        assert broker.store.get_max_offset("Orders", 0) == 0


async def test_a_committed_timer_message_waits_for_its_time(broker: Broker, clock: ManualClock) -> None:
    """The half message is not a timer message; its commit is, as Apache's store hook makes it."""
    async with BrokerClient(broker.address) as producer:
        await producer.create_topic("Orders", 2)
        properties = message_properties(
            "Tx", [], {"TRAN_MSG": "true", "PGROUP": GROUP, const.TIMER_DELAY_SEC: "10"}
        )
        sent = await producer.send(
            "Orders",
            b"later",
            queue_id=1,
            properties=properties,
            sys_flag=sysflag.TRANSACTION_PREPARED_TYPE,
            group=GROUP,
            born_timestamp=clock.now_ms(),
        )
        assert sent.code == ResponseCode.SUCCESS
        assert broker.store.get_max_offset(TIMER_TOPIC, 0) == 0
        committed = await producer.request(
            RequestCode.END_TRANSACTION, _verdict(sent, TransactionType.COMMIT_TYPE)
        )
        assert committed.code == ResponseCode.SUCCESS
        assert broker.store.get_max_offset("Orders", 1) == 0
        assert broker.store.get_max_offset(TIMER_TOPIC, 0) == 1
        clock.advance(10_000)
        await broker.timer.deliver_due()
        assert broker.store.get_max_offset("Orders", 1) == 1
