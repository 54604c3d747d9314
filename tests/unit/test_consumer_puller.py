"""One pull end to end against a scripted broker on loopback: the LITE_PULL_MESSAGE fallback for brokers
that do not know the code, the broker a pull answer suggests, and no offset commits asked of a slave."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import cast

import pytest

from client.rpc import ClientRpc
from consumer import commands
from consumer.broker_api import BrokerApi
from consumer.client import ConsumerClient
from consumer.config import ConsumerConfig
from consumer.fetch import PullStatus
from consumer.puller import Puller
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.message import sysflag
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer

QUEUE = MessageQueue(topic="T", broker_name="broker-a", queue_id=0)


class ScriptedBroker:
    """Answers PULL_MESSAGE with "nothing new", suggesting ``suggest`` as the broker to use next; knows
    LITE_PULL_MESSAGE only when told to."""

    def __init__(self, *, lite: bool, suggest: int = 0) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.requests: list[RemotingCommand] = []
        self.suggest = suggest
        self.server.register(RequestCode.PULL_MESSAGE, self._pull)
        if lite:
            self.server.register(RequestCode.LITE_PULL_MESSAGE, self._pull)

    async def _pull(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.requests.append(request)
        header = PullMessageResponseHeader(
            suggest_which_broker_id=self.suggest, next_begin_offset=7, min_offset=0, max_offset=7
        )
        return request.make_response(ResponseCode.PULL_NOT_FOUND, "OFFSET_OVERFLOW_ONE", header)


class StubClient:
    """The two things a puller asks of its client: where to pull from, and the broker API."""

    def __init__(self, api: BrokerApi, addrs: dict[int, str]) -> None:
        self.api = api
        self.addrs = addrs
        self.asked: list[int] = []

    async def pull_address(self, queue: MessageQueue, suggested: int) -> tuple[str, int]:
        self.asked.append(suggested)
        broker_id = suggested if suggested in self.addrs else 0
        return self.addrs[broker_id], broker_id


@pytest.fixture
async def api() -> AsyncIterator[BrokerApi]:
    async with RemotingClient() as client:
        config = ConsumerConfig()
        yield BrokerApi(ClientRpc(client, config.client_settings()), timeout_ms=3000, version=config.version)


def spec(*, lite: bool, commit: bool = False) -> commands.PullSpec:
    return commands.PullSpec(
        group="G",
        max_nums=32,
        sys_flag=sysflag.build_pull_sys_flag(
            commit_offset=commit, suspend=True, subscription=True, lite_pull=lite
        ),
        commit_offset=5 if commit else 0,
        suspend_timeout_ms=20_000,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
        lite=lite,
    )


async def test_lite_pulls_fall_back_to_pull_message_once_per_broker(api: BrokerApi) -> None:
    old = ScriptedBroker(lite=False)
    await old.server.start()
    try:
        puller = Puller(cast(ConsumerClient, StubClient(api, {0: old.server.address})))
        first = await puller.pull(QUEUE, 3, spec(lite=True), None, 5000)
        second = await puller.pull(QUEUE, 7, spec(lite=True), None, 5000)
    finally:
        await old.server.close()
    assert (first.status, first.next_begin_offset) == (PullStatus.NO_NEW_MSG, 7)
    assert second.status is PullStatus.NO_NEW_MSG
    # the refused LITE_PULL_MESSAGE never reached a handler; both answered pulls were PULL_MESSAGE
    assert [r.code for r in old.requests] == [RequestCode.PULL_MESSAGE, RequestCode.PULL_MESSAGE]
    assert [r.read_header(PullMessageRequestHeader).queue_offset for r in old.requests] == [3, 7]


async def test_a_broker_that_knows_lite_pulls_gets_them(api: BrokerApi) -> None:
    new = ScriptedBroker(lite=True)
    await new.server.start()
    try:
        puller = Puller(cast(ConsumerClient, StubClient(api, {0: new.server.address})))
        await puller.pull(QUEUE, 0, spec(lite=True), None, 5000)
    finally:
        await new.server.close()
    assert [r.code for r in new.requests] == [RequestCode.LITE_PULL_MESSAGE]


async def test_the_suggested_broker_is_used_next_and_a_slave_is_not_asked_to_commit(api: BrokerApi) -> None:
    master = ScriptedBroker(lite=False, suggest=1)
    slave = ScriptedBroker(lite=False, suggest=0)
    await master.server.start()
    await slave.server.start()
    try:
        stub = StubClient(api, {0: master.server.address, 1: slave.server.address})
        puller = Puller(cast(ConsumerClient, stub))
        await puller.pull(QUEUE, 0, spec(lite=False, commit=True), None, 5000)
        await puller.pull(QUEUE, 7, spec(lite=False, commit=True), None, 5000)
        await puller.pull(QUEUE, 7, spec(lite=False, commit=True), None, 5000)
    finally:
        await master.server.close()
        await slave.server.close()
    assert stub.asked == [0, 1, 0], "the master sent us to broker 1, which sent us back"
    [to_master_first, to_master_again] = master.requests
    [to_slave] = slave.requests
    for request in (to_master_first, to_master_again):
        assert sysflag.has_commit_offset(request.read_header(PullMessageRequestHeader).sys_flag or 0)
    assert not sysflag.has_commit_offset(to_slave.read_header(PullMessageRequestHeader).sys_flag or 0)
