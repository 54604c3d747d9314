"""The blocking facade, and two producers in one process not sharing state.

The fake cluster runs on the test's event loop, so blocking calls are made from worker threads
(``asyncio.to_thread``), exactly as non-async code would call them.
"""

from __future__ import annotations

import asyncio
import random
import threading
from typing import Any

import pytest

from producer import (
    BlockingProducer,
    BlockingTransactionProducer,
    LocalTransactionState,
    Message,
    MessageExt,
    ProducerError,
    ProducerStateError,
    SendStatus,
)
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.message import decode_unique_id
from tests.unit.producer_fakes import Cluster

TOPIC = "BlockingTopic"


async def test_blocking_producer_sends_from_several_threads() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC, queues=4)
        producer = BlockingProducer("BlockingGroup", cluster.namesrv, rng=random.Random(1))

        def work() -> list[str]:
            with producer:
                results: list[str] = []
                lock = threading.Lock()

                def sender(n: int) -> None:
                    for i in range(10):
                        result = producer.send(Message(TOPIC, b"%d-%d" % (n, i)))
                        assert result.status is SendStatus.SEND_OK
                        with lock:
                            results.append(result.msg_id)

                threads = [threading.Thread(target=sender, args=(n,)) for n in range(4)]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join()
                producer.send_oneway(Message(TOPIC, b"oneway"))
                batch = producer.send_batch([Message(TOPIC, b"b1"), Message(TOPIC, b"b2")])
                results.extend(batch.msg_id.split(","))
                assert len(producer.fetch_publish_queues(TOPIC)) == 4
                return results

        ids = await asyncio.to_thread(work)
        await cluster.brokers["broker-a"].wait_for(RequestCode.UNREGISTER_CLIENT, 2)
        bodies = {m.body for m in cluster.brokers["broker-a"].stored}
    assert len(set(ids)) == 42
    assert b"oneway" in bodies and b"3-9" in bodies


async def test_blocking_producer_errors_surface_in_the_caller() -> None:
    async with Cluster() as cluster:
        producer = BlockingProducer("BlockingGroup", cluster.namesrv)
        with pytest.raises(ProducerStateError):
            producer.send(Message(TOPIC, b"x"))

        def work() -> None:
            with producer:
                producer.send(Message("NoSuchTopic", b"x"))

        with pytest.raises(ProducerError):
            await asyncio.to_thread(work)
        producer.shutdown()  # idempotent


async def test_blocking_transaction_runs_the_executor_in_the_calling_thread() -> None:
    seen: list[int] = []

    def execute(message: Message, transaction_id: str, arg: Any) -> LocalTransactionState:
        seen.append(threading.get_ident())
        return LocalTransactionState.COMMIT_MESSAGE

    def checker(message: MessageExt) -> LocalTransactionState:
        return LocalTransactionState.COMMIT_MESSAGE

    async with Cluster() as cluster:
        cluster.route(TOPIC)
        producer = BlockingTransactionProducer(
            "TxBlocking", cluster.namesrv, checker=checker, executor=execute
        )

        def work() -> tuple[int, Any]:
            with producer:
                return threading.get_ident(), producer.send_in_transaction(Message(TOPIC, b"tx"), "arg")

        caller, result = await asyncio.to_thread(work)
        (end,) = cluster.brokers["broker-a"].of(RequestCode.END_TRANSACTION)
    assert seen == [caller]
    assert result.local_state is LocalTransactionState.COMMIT_MESSAGE
    assert end.fields["commitOrRollback"] == "8"


async def test_two_producers_in_one_process_share_nothing() -> None:
    async with Cluster(("broker-a", "broker-b")) as cluster:
        cluster.route(TOPIC, queues={"broker-a": 2})
        async with cluster.producer("GroupOne") as one, cluster.producer("GroupTwo") as two:
            first_one = await one.send(Message(TOPIC, b"1"))
            first_two = await two.send(Message(TOPIC, b"2"))
            # a route change reaches only the producer that asks for it
            cluster.route(TOPIC, queues={"broker-b": 2})
            await one._route_table().refresh(TOPIC)
            one_queues = {q.broker_name for q in await one.fetch_publish_queues(TOPIC)}
            two_queues = {q.broker_name for q in await two.fetch_publish_queues(TOPIC)}
            assert one._instance is not two._instance
            await one.shutdown()
            after = await two.send(Message(TOPIC, b"still works"))
    assert one.client_id != two.client_id
    assert decode_unique_id(first_one.msg_id).process_hash != decode_unique_id(first_two.msg_id).process_hash
    assert decode_unique_id(first_one.msg_id).counter == decode_unique_id(first_two.msg_id).counter == 0
    assert one_queues == {"broker-b"}
    assert two_queues == {"broker-a"}
    assert after.status is SendStatus.SEND_OK
