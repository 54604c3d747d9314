"""Sending the consumer's requests to brokers and reading their answers (the I/O half of ``commands``).

Every call names the broker address it goes to; working out *which* broker (master, suggested slave, the
one that stored a message) is the caller's business. Failures come back as :class:`BrokerError` (the broker
said no) or the transport's ``RemotingError`` (it could not be asked).
"""

from __future__ import annotations

import logging

from client.rpc import ClientRpc
from consumer import commands, pop_requests
from consumer.errors import BrokerError, ConsumerError, OffsetNotFoundError
from consumer.fetch import PullResult, parse_pull_response
from consumer.pop_requests import PopResult, PopSpec
from rocketmq_wire.bodies.consumer import GetConsumerListByGroupResponseBody
from rocketmq_wire.bodies.heartbeat import SubscriptionData
from rocketmq_wire.bodies.lock import LockBatchResponseBody
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.pop import MessageQueueAssignment
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.offset import (
    GetMaxOffsetResponseHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetResponseHeader,
)
from rocketmq_wire.message import MessageExt
from rocketmq_wire.pop_extra import ExtraInfo

logger = logging.getLogger("consumer.broker_api")


def _expect_success(response: RemotingCommand, addr: str) -> RemotingCommand:
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError(response.code, response.remark, addr)
    return response


class BrokerApi:
    """The broker requests of one consumer, over its own client (``rpc`` signs and stamps them)."""

    def __init__(self, rpc: ClientRpc, *, timeout_ms: float, version: int) -> None:
        self._rpc = rpc
        self._timeout_ms = timeout_ms
        self.version = version

    async def _call(
        self, addr: str, cmd: RemotingCommand, timeout_ms: float | None = None
    ) -> RemotingCommand:
        return await self._rpc.invoke(addr, cmd, self._timeout_ms if timeout_ms is None else timeout_ms)

    # -- pulling -------------------------------------------------------------------------------------------

    async def pull(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> PullResult:
        """One pull (built by :func:`commands.pull_request`); the body is left for the caller to decode."""
        return parse_pull_response(await self._call(addr, cmd, timeout_ms), addr)

    # -- POP ---------------------------------------------------------------------------------------------

    async def pop(self, addr: str, spec: PopSpec, *, now_ms: int, shown_topic: str) -> PopResult:
        """One POP_MESSAGE; the messages come back under ``shown_topic``, each with its receipt handle."""
        cmd = pop_requests.pop_request(spec, now_ms)
        response = await self._call(addr, cmd, pop_requests.pop_timeout_ms(spec, self._timeout_ms))
        return pop_requests.parse_pop_response(
            response, broker_name=spec.broker_name, topic=shown_topic, order=spec.order, addr=addr
        )

    async def ack(self, addr: str, handle: ExtraInfo, *, group: str, topic: str) -> None:
        """ACK_MESSAGE; :class:`BrokerError` when the broker did not take it (Java's ``NO_EXIST``)."""
        cmd = pop_requests.ack_request(handle, group=group, topic=topic)
        _expect_success(await self._call(addr, cmd), addr)

    async def batch_ack(self, addr: str, handles: list[ExtraInfo], *, group: str, topic: str) -> None:
        """BATCH_ACK_MESSAGE for messages popped from the broker at ``addr``."""
        cmd = pop_requests.batch_ack_request(handles, group=group, topic=topic)
        _expect_success(await self._call(addr, cmd), addr)

    async def change_invisible_time(
        self, addr: str, handle: ExtraInfo, *, group: str, topic: str, invisible_time_ms: int
    ) -> ExtraInfo:
        """CHANGE_MESSAGE_INVISIBLETIME; returns the message's new receipt handle."""
        cmd, header = pop_requests.change_invisible_request(
            handle, group=group, topic=topic, invisible_time_ms=invisible_time_ms
        )
        response = await self._call(addr, cmd)
        return pop_requests.parse_change_response(response, header, broker_name=handle.broker_name, addr=addr)

    async def query_assignment(
        self, addr: str, topic: str, *, group: str, client_id: str, strategy_name: str, message_model: str
    ) -> list[MessageQueueAssignment]:
        """QUERY_ASSIGNMENT: this member's queues of ``topic`` and their modes, as the broker decides."""
        cmd = pop_requests.query_assignment_request(
            topic, group=group, client_id=client_id, strategy_name=strategy_name, message_model=message_model
        )
        return pop_requests.parse_assignment_response(await self._call(addr, cmd), addr)

    # -- offsets -------------------------------------------------------------------------------------------

    async def query_offset(
        self, addr: str, group: str, queue: MessageQueue, *, zero_if_not_found: bool | None = None
    ) -> int:
        """The group's committed offset on ``queue``; :class:`OffsetNotFoundError` when it has none."""
        cmd = commands.query_offset_request(group, queue, zero_if_not_found=zero_if_not_found)
        response = await self._call(addr, cmd)
        if response.code == ResponseCode.QUERY_NOT_FOUND:
            raise OffsetNotFoundError(f"group {group} has no offset on {queue}: {response.remark or ''}")
        _expect_success(response, addr)
        return response.read_header(QueryConsumerOffsetResponseHeader).offset or 0

    async def update_offset(
        self, addr: str, group: str, queue: MessageQueue, offset: int, *, oneway: bool
    ) -> None:
        """Commit ``offset``; oneway (Java's periodic way) or waiting for the broker to confirm."""
        cmd = commands.update_offset_request(group, queue, offset)
        if oneway:
            await self._rpc.invoke_oneway(addr, cmd, self._timeout_ms)
            return
        _expect_success(await self._call(addr, cmd), addr)

    async def min_offset(self, addr: str, queue: MessageQueue) -> int:
        response = _expect_success(await self._call(addr, commands.min_offset_request(queue)), addr)
        return response.read_header(GetMinOffsetResponseHeader).offset or 0

    async def max_offset(self, addr: str, queue: MessageQueue) -> int:
        cmd = commands.max_offset_request(queue, self.version)
        response = _expect_success(await self._call(addr, cmd), addr)
        return response.read_header(GetMaxOffsetResponseHeader).offset or 0

    async def search_offset(self, addr: str, queue: MessageQueue, timestamp_ms: int) -> int:
        cmd = commands.search_offset_request(queue, timestamp_ms)
        response = _expect_success(await self._call(addr, cmd), addr)
        return response.read_header(SearchOffsetResponseHeader).offset or 0

    # -- the group -----------------------------------------------------------------------------------------

    async def consumer_ids(self, addr: str, group: str) -> list[str]:
        """The client ids of the group's members as ``addr`` knows them."""
        response = _expect_success(await self._call(addr, commands.consumer_list_request(group)), addr)
        try:
            return GetConsumerListByGroupResponseBody.from_json(response.body).consumer_id_list
        except CodecError as exc:
            raise ConsumerError(f"broker {addr} sent an unreadable consumer list: {exc}") from exc

    async def check_client_config(
        self, addr: str, group: str, client_id: str, subscription: SubscriptionData
    ) -> None:
        """CHECK_CLIENT_CONFIG: returns when broker ``addr`` can serve ``subscription`` for ``group``, raises
        :class:`BrokerError` with its answer when it cannot (``consumer.filters`` words that for the user)."""
        cmd = commands.check_client_request(group, client_id, subscription)
        _expect_success(await self._call(addr, cmd), addr)

    async def lock(
        self, addr: str, group: str, client_id: str, queues: list[MessageQueue]
    ) -> list[MessageQueue]:
        """The queues of ``queues`` this client now holds the lock of on broker ``addr``."""
        cmd = commands.lock_batch_request(group, client_id, queues, self.version)
        response = _expect_success(await self._call(addr, cmd), addr)
        try:
            return LockBatchResponseBody.from_json(response.body).lock_ok_mq_set
        except CodecError as exc:
            raise ConsumerError(f"broker {addr} sent an unreadable lock answer: {exc}") from exc

    async def unlock(
        self, addr: str, group: str, client_id: str, queues: list[MessageQueue], *, oneway: bool
    ) -> None:
        cmd = commands.unlock_batch_request(group, client_id, queues, self.version)
        if oneway:
            await self._rpc.invoke_oneway(addr, cmd, self._timeout_ms)
            return
        _expect_success(await self._call(addr, cmd), addr)

    async def send_back(
        self,
        addr: str,
        message: MessageExt,
        *,
        group: str,
        delay_level: int,
        max_reconsume_times: int,
        broker_name: str | None,
    ) -> None:
        """CONSUMER_SEND_MSG_BACK; raises when the broker did not take the message."""
        cmd = commands.send_back_request(
            message,
            group=group,
            delay_level=delay_level,
            max_reconsume_times=max_reconsume_times,
            broker_name=broker_name,
        )
        _expect_success(await self._call(addr, cmd), addr)
