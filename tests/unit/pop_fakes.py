"""A fake 5.x broker that serves POP the way Apache's does, closely enough to test a POP consumer.

It keeps, per group, where each queue's popping has got to; hides what it hands out for the pop's invisible
time; takes ACK_MESSAGE, BATCH_ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME; and, like Apache's revive
service, moves a message whose invisible time ran out unacknowledged to the group's POP retry topic with its
reconsume times one higher, where the next pop finds it first. Answers carry a 5.x version.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time

from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.pop import (
    BatchAckMessageRequestBody,
    MessageQueueAssignment,
    MessageRequestMode,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
)
from rocketmq_wire.codes import MQVersion, RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_wire.message import MessageExt, encode_stored_message
from rocketmq_wire.pop_extra import ExtraInfo, build_offset_info, pop_retry_topic, real_topic
from rocketmq_wire.transport import Connection
from tests.unit.consumer_fakes import BROKER_NAME, FakeBroker, FakeCluster

V5 = MQVersion.value_of("V5_3_3")
#: Longest a fake long poll holds a request (tests ask for less).
MAX_HOLD_S = 2.0


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclasses.dataclass
class InFlight:
    message: MessageExt
    pop_time: int
    visible_at: int


class FakePopBroker(FakeBroker):
    """:class:`FakeBroker` plus POP. ``acks`` records (topic, queue id, offset) of every ack that took."""

    def __init__(self, version: int = V5, *, invisible_scale: float = 1.0) -> None:
        super().__init__()
        self.answer_version = version
        #: Invisible times asked for are applied scaled by this (tests need not wait 10 s).
        self.invisible_scale = invisible_scale
        #: Topic -> the mode QUERY_ASSIGNMENT answers (POP: queue -1 of this broker; PULL: every queue).
        self.modes: dict[str, MessageRequestMode] = {}
        self.assignment_queries: list[QueryAssignmentRequestBody] = []
        self.changes: list[ChangeInvisibleTimeRequestHeader] = []
        self.next_pop: dict[tuple[str, str, int], int] = {}
        self.in_flight: dict[tuple[str, str, int, int], InFlight] = {}
        self.acks: list[tuple[str, int, int]] = []
        self.batch_acks = 0
        self.pop_headers: list[PopMessageRequestHeader] = []
        self.register(RequestCode.POP_MESSAGE, self._pop)
        self.register(RequestCode.ACK_MESSAGE, self._ack)
        self.register(RequestCode.BATCH_ACK_MESSAGE, self._batch_ack)
        self.register(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, self._change)
        self.register(RequestCode.QUERY_ASSIGNMENT, self._query_assignment)

    def queue_ids(self, topic: str) -> list[int]:
        return sorted(q for t, q in self.messages if t == topic)

    def _revive(self, group: str) -> None:
        now = _now_ms()
        for key, entry in list(self.in_flight.items()):
            if key[0] != group or entry.visible_at > now:
                continue
            del self.in_flight[key]
            original = entry.message
            retry = (
                pop_retry_topic(original.topic, group)
                if not original.topic.startswith("%RETRY%")
                else original.topic
            )
            stored = self.messages.setdefault((retry, 0), [])
            stored.append(
                dataclasses.replace(
                    original,
                    topic=retry,
                    queue_id=0,
                    queue_offset=len(stored),
                    reconsume_times=original.reconsume_times + 1,
                )
            )

    def _take(self, header: PopMessageRequestHeader) -> list[MessageExt]:
        group, topic = header.consumer_group or "", header.topic or ""
        self._revive(group)
        wanted = header.max_msg_nums or 32
        queues = [(pop_retry_topic(topic, group), 0)]
        queue_id = -1 if header.queue_id is None else header.queue_id
        queues += [(topic, q) for q in ([queue_id] if queue_id != -1 else self.queue_ids(topic))]
        found: list[MessageExt] = []
        for name, queue_id in queues:
            stored = self.messages.get((name, queue_id), [])
            key = (group, name, queue_id)
            if key not in self.next_pop:
                self.next_pop[key] = 0 if header.init_mode == 0 or name != topic else len(stored)
            while self.next_pop[key] < len(stored) and len(found) < wanted:
                found.append(stored[self.next_pop[key]])
                self.next_pop[key] += 1
        return found

    async def _pop(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = request.read_header(PopMessageRequestHeader)
        self.pop_headers.append(header)
        await self._notify()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + min((header.poll_time or 0) / 1000, MAX_HOLD_S)
        found = self._take(header)
        while not found and loop.time() < deadline:
            await asyncio.sleep(0.02)
            found = self._take(header)
        pop_time = _now_ms()
        invisible = header.invisible_time or 0
        answer = PopMessageResponseHeader(
            rest_num=0, pop_time=pop_time, invisible_time=invisible, revive_qid=0
        )
        if not found:
            return request.make_response(ResponseCode.POLLING_TIMEOUT, "no new message", answer)
        per_queue: dict[tuple[str, int], list[int]] = {}
        for message in found:
            per_queue.setdefault((message.topic, message.queue_id), []).append(message.queue_offset)
            key = (header.consumer_group or "", message.topic, message.queue_id, message.queue_offset)
            self.in_flight[key] = InFlight(
                message, pop_time, pop_time + round(invisible * self.invisible_scale)
            )
        answer.start_offset_info = build_offset_info((t, q, offs[0]) for (t, q), offs in per_queue.items())
        answer.msg_offset_info = build_offset_info((t, q, offs) for (t, q), offs in per_queue.items())
        body = b"".join(encode_stored_message(m) for m in found)
        return request.make_response(ResponseCode.SUCCESS, None, answer, body)

    def _acked(self, group: str, topic: str, queue_id: int, offset: int, pop_time: int) -> None:
        """Apache's way: an ack of a handle whose checkpoint is gone is taken, and changes nothing."""
        entry = self.in_flight.get((group, topic, queue_id, offset))
        if entry is not None and entry.pop_time == pop_time:
            del self.in_flight[(group, topic, queue_id, offset)]
            self.acks.append((topic, queue_id, offset))

    async def _ack(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = request.read_header(AckMessageRequestHeader)
        topic, queue_id, offset = header.topic or "", header.queue_id or 0, header.offset or 0
        if offset >= len(self.messages.get((topic, queue_id), [])):
            return request.make_response(ResponseCode.NO_MESSAGE, "offset out of the queue")
        handle = ExtraInfo.parse(header.extra_info or "")
        self._acked(header.consumer_group or "", topic, queue_id, offset, handle.pop_time)
        await self._notify()
        return request.make_response()

    async def _batch_ack(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        body = BatchAckMessageRequestBody.from_json(request.body)
        self.batch_acks += 1
        for ack in body.acks or []:
            group = ack.consumer_group or ""
            topic = real_topic(ack.topic or "", group, ack.retry or "0")
            for offset in ack.acked_offsets():
                self._acked(group, topic, ack.queue_id, offset, ack.pop_time)
        await self._notify()
        return request.make_response()

    async def _change(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = request.read_header(ChangeInvisibleTimeRequestHeader)
        self.changes.append(header)
        key = (header.consumer_group or "", header.topic or "", header.queue_id or 0, header.offset or 0)
        entry = self.in_flight.get(key)
        handle = ExtraInfo.parse(header.extra_info or "")
        if entry is None or entry.pop_time != handle.pop_time:
            return request.make_response(ResponseCode.NO_MESSAGE, "no such checkpoint")
        entry.pop_time = _now_ms()
        entry.visible_at = entry.pop_time + round((header.invisible_time or 0) * self.invisible_scale)
        answer = ChangeInvisibleTimeResponseHeader(
            invisible_time=header.invisible_time, pop_time=entry.pop_time, revive_qid=0
        )
        await self._notify()
        return request.make_response(header=answer)

    async def _query_assignment(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        body = QueryAssignmentRequestBody.from_json(request.body)
        self.assignment_queries.append(body)
        await self._notify()
        topic = body.topic or ""
        mode = self.modes.get(topic, MessageRequestMode.PULL)
        queue_ids = [-1] if mode == MessageRequestMode.POP else self.queue_ids(topic)
        assigned = [
            MessageQueueAssignment(message_queue=MessageQueue(topic, BROKER_NAME, q), mode=mode)
            for q in queue_ids
        ]
        answer = QueryAssignmentResponseBody(message_queue_assignments=assigned)
        return request.make_response(body=answer.to_json())


class FakePopCluster(FakeCluster):
    """A FakeNameServer and a :class:`FakePopBroker`."""

    def __init__(self, version: int = V5, *, invisible_scale: float = 1.0) -> None:
        super().__init__()
        self.broker: FakePopBroker = FakePopBroker(version, invisible_scale=invisible_scale)
