"""Transactional messages on one set-up of each kind: commit, rollback, and a verdict given when the broker
asks.

Every broker is configured to check half messages older than 1 s every second (``transactionTimeOut`` and
``transactionCheckInterval`` in :mod:`tests.integration.clusters.configs`), so a check-back comes within
seconds instead of Apache's default minute.
"""

from __future__ import annotations

import asyncio

import pytest

from producer import LocalTransactionState, Message, SendStatus, TransactionProducer
from rocketmq_wire import SerializeType
from rocketmq_wire.message import MessageExt
from tests.integration.clusters.fixture import on_representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic

#: Transactions on the servers' kinds and lines (4.9 and 5.x, ours, both in one cluster); the other
#: set-ups add only other NameServer pairings, which the compatibility matrix meets.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("scenario_budget"),
    on_representative_setups(),
]

SERIALIZATIONS = [SerializeType.JSON, SerializeType.ROCKETMQ]


class Verdicts:
    """Local transactions by message key: what the executor says at once, and what the checker says later
    (recording each check, which is what the check-back scenario waits for)."""

    def __init__(
        self, now: dict[str, LocalTransactionState], later: dict[str, LocalTransactionState]
    ) -> None:
        self.now = now
        self.later = later
        self.checked: list[MessageExt] = []
        self.checked_event = asyncio.Event()

    def execute(self, message: Message, transaction_id: str, arg: object) -> LocalTransactionState:
        return self.now[message.keys[0]]

    async def check(self, message: MessageExt) -> LocalTransactionState:
        self.checked.append(message)
        self.checked_event.set()
        return self.later.get(message.keys[0], LocalTransactionState.ROLLBACK_MESSAGE)


@pytest.mark.parametrize("serialize_type", SERIALIZATIONS, ids=lambda s: s.name)
async def test_commit_and_rollback(cluster: Cluster, serialize_type: SerializeType) -> None:
    topic = unique_name("Tx")
    commit, rollback = LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE
    verdicts = Verdicts(
        now={"rolled-back": rollback, "committed": commit},
        later={"rolled-back": rollback, "committed": commit},
    )
    async with TransactionProducer(
        unique_name("txg"),
        cluster.namesrv,
        checker=verdicts.check,
        executor=verdicts.execute,
        serialize_type=serialize_type,
    ) as producer:
        dropped = await producer.send_in_transaction(Message(topic, b"never visible", keys=["rolled-back"]))
        kept = await producer.send_in_transaction(Message(topic, b"visible", tags="tx", keys=["committed"]))
    assert (dropped.status, dropped.local_state) == (SendStatus.SEND_OK, rollback)
    assert (kept.status, kept.local_state) == (SendStatus.SEND_OK, commit)
    # The rollback's verdict went first on the same connection: once the commit shows, it has been decided.
    [stored] = await read_topic(cluster.namesrv, topic, 1)
    assert (stored.body, stored.tags, stored.keys) == (b"visible", "tx", ["committed"])
    assert stored.unique_id == kept.transaction_id
    assert stored.topic == topic, "the committed message is stored under its own topic, not the half topic"


async def test_unknown_state_is_settled_by_a_check_back(cluster: Cluster) -> None:
    topic = unique_name("TxCheck")
    verdicts = Verdicts(
        now={"ask-me-later": LocalTransactionState.UNKNOWN},
        later={"ask-me-later": LocalTransactionState.COMMIT_MESSAGE},
    )
    async with TransactionProducer(
        unique_name("txg"), cluster.namesrv, checker=verdicts.check, executor=verdicts.execute
    ) as producer:
        result = await producer.send_in_transaction(Message(topic, b"decided later", keys=["ask-me-later"]))
        assert result.local_state is LocalTransactionState.UNKNOWN
        # The producer must stay up: the broker asks over the producer's own connection.
        async with asyncio.timeout(20):
            await verdicts.checked_event.wait()
        [stored] = await read_topic(cluster.namesrv, topic, 1, timeout_s=20)
    assert stored.body == b"decided later"
    assert stored.unique_id == result.transaction_id
    [asked, *_] = verdicts.checked
    assert asked.unique_id == result.transaction_id
    assert asked.body == b"decided later" and asked.keys == ["ask-me-later"]
