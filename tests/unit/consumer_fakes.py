"""An in-test NameServer and Broker for consumer tests, on the project's RemotingServer.

They answer just enough of the protocol for a push or lite pull consumer to join a group and read a topic
(routes; heartbeat, group members, offsets, pulls held briefly when there is nothing new, send-back, locks,
unregister), record every request, and -- what the project's broker does not do yet -- ask a client
directly over its own connection, as a broker relays GET_CONSUMER_RUNNING_INFO, CONSUME_MESSAGE_DIRECTLY
and NOTIFY_CONSUMER_IDS_CHANGED. Everything binds 127.0.0.1 on an ephemeral port.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import Any, Self

from rocketmq_wire.bodies.consumer import CheckClientRequestBody, GetConsumerListByGroupResponseBody
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.bodies.lock import LockBatchRequestBody, LockBatchResponseBody
from rocketmq_wire.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.consumer import (
    ConsumerSendMsgBackRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
)
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader
from rocketmq_wire.headers.offset import (
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.message import MessageExt, encode_properties, encode_stored_message
from rocketmq_wire.message import const as props
from rocketmq_wire.transport import Connection, RemotingServer

BROKER_NAME = "broker-a"
#: How long a pull that finds nothing is held before "no new message" (kept short: tests end quickly).
HOLD_S = 0.3


def stored_message(topic: str, queue_id: int, offset: int, body: bytes, *, tags: str = "TagA") -> MessageExt:
    """A message as the fake broker stores it (unique id, tags, a commit-log offset of its own)."""
    properties = {props.UNIQ_KEY: f"7F00000100002A9F0000000000{queue_id:02d}{offset:04d}", props.TAGS: tags}
    return MessageExt(
        topic=topic,
        body=body,
        properties_string=encode_properties(properties),
        queue_id=queue_id,
        queue_offset=offset,
        commit_log_offset=1000 * queue_id + offset,
        born_timestamp=1_700_000_000_000,
        born_host="127.0.0.1:50000",
        store_timestamp=1_700_000_000_001,
        store_host="127.0.0.1:10911",
    )


class FakeNameServer:
    """Answers GET_ROUTEINFO_BY_TOPIC; unknown topics get TOPIC_NOT_EXIST like Apache's."""

    def __init__(self) -> None:
        self.routes: dict[str, TopicRouteData] = {}
        self.server = RemotingServer("127.0.0.1", 0)
        self.server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self._route)

    @property
    def address(self) -> str:
        return self.server.address

    def set_route(self, topic: str, broker_addr: str, queues: int) -> None:
        self.routes[topic] = TopicRouteData(
            queue_datas=[
                QueueData(broker_name=BROKER_NAME, read_queue_nums=queues, write_queue_nums=queues, perm=6)
            ],
            broker_datas=[
                BrokerData(cluster="DefaultCluster", broker_name=BROKER_NAME, broker_addrs={0: broker_addr})
            ],
        )

    async def _route(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        topic = request.read_header(GetRouteInfoRequestHeader).topic or ""
        route = self.routes.get(topic)
        if route is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"No topic route info for {topic}")
        return request.make_response(body=route.to_json())


@dataclasses.dataclass
class SentBack:
    """A CONSUMER_SEND_MSG_BACK as received."""

    header: ConsumerSendMsgBackRequestHeader
    at: float


class FakeBroker:
    """A broker master holding messages in memory per (topic, queue id), offsets per (group, topic, queue)."""

    def __init__(self) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.messages: dict[tuple[str, int], list[MessageExt]] = {}
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.offset_updates: list[UpdateConsumerOffsetRequestHeader] = []
        self.sent_back: list[SentBack] = []
        #: (topic, queue id, offset) of every pull received.
        self.pulls: list[tuple[str, int, int]] = []
        #: The header of every pull received.
        self.pull_headers: list[PullMessageRequestHeader] = []
        self.client_connections: dict[str, Connection] = {}
        #: Every heartbeat received, in order.
        self.heartbeats: list[HeartbeatData] = []
        #: Group members as GET_CONSUMER_LIST_BY_GROUP lists them; ``None``: whoever heartbeated.
        self.members: list[str] | None = None
        #: GET_CONSUMER_RUNNING_INFO / CONSUME_MESSAGE_DIRECTLY are relayed to the client they name.
        self.relay = True
        #: Every CHECK_CLIENT_CONFIG body received, and the answer (code, remark) to a non-tag subscription
        #: in one: ``None`` accepts it, as an Apache broker with ``enablePropertyFilter=true``.
        self.filter_checks: list[CheckClientRequestBody] = []
        self.filter_answer: tuple[int, str] | None = None
        self._changed = asyncio.Condition()
        self._handlers = {
            RequestCode.HEART_BEAT: self._heartbeat,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self._members,
            RequestCode.QUERY_CONSUMER_OFFSET: self._query_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self._update_offset,
            RequestCode.GET_MAX_OFFSET: self._max_offset,
            RequestCode.GET_MIN_OFFSET: self._min_offset,
            RequestCode.PULL_MESSAGE: self._pull,
            RequestCode.LITE_PULL_MESSAGE: self._pull,
            RequestCode.CONSUMER_SEND_MSG_BACK: self._send_back,
            RequestCode.LOCK_BATCH_MQ: self._lock,
            RequestCode.UNLOCK_BATCH_MQ: self._ok,
            RequestCode.UNREGISTER_CLIENT: self._ok,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self._relay,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self._relay,
            RequestCode.CHECK_CLIENT_CONFIG: self._check_client,
        }
        #: The ``MQVersion`` number answers carry (``None``: the transport's own).
        self.answer_version: int | None = None
        for code, handler in self._handlers.items():
            self.register(code, handler)

    def register(self, code: int, handler: Callable[..., Any]) -> None:
        """Serve ``code`` with ``handler``; its answers carry :attr:`answer_version` when that is set."""

        async def answer(request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
            response: RemotingCommand | None = await handler(request, conn)
            if response is not None and self.answer_version is not None:
                response.version = self.answer_version
            return response

        self.server.register(code, answer)

    @property
    def address(self) -> str:
        return self.server.address

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_until(self, predicate: Callable[[], object], timeout: float = 10.0) -> None:
        """Until ``predicate()`` holds, checked whenever the broker received something."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)

    def add_messages(self, topic: str, queue_id: int, bodies: Sequence[bytes]) -> list[MessageExt]:
        stored = self.messages.setdefault((topic, queue_id), [])
        added = [stored_message(topic, queue_id, len(stored) + i, body) for i, body in enumerate(bodies)]
        stored.extend(added)
        return added

    # -- asking a client directly --------------------------------------------------------------------------

    async def ask_client(
        self, client_id: str, code: int, header: CommandHeader, body: bytes = b"", timeout_ms: float = 5000
    ) -> RemotingCommand:
        """Send a request over the connection ``client_id`` heartbeated on, as a broker relays one."""
        request = RemotingCommand.request(code, header, body)
        return await self.server.invoke(self.client_connections[client_id], request, timeout_ms)

    async def notify_ids_changed(self, client_id: str, group: str) -> None:
        header = NotifyConsumerIdsChangedRequestHeader(consumer_group=group)
        request = RemotingCommand.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, header)
        await self.server.invoke_oneway(self.client_connections[client_id], request)

    # -- handlers ------------------------------------------------------------------------------------------

    async def _ok(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return request.make_response()

    async def _heartbeat(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        data = HeartbeatData.from_json(request.body)
        self.heartbeats.append(data)
        if data.client_id:
            self.client_connections[data.client_id] = conn
        await self._notify()
        return request.make_response()

    async def _members(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        members = list(self.client_connections) if self.members is None else self.members
        body = GetConsumerListByGroupResponseBody(consumer_id_list=members)
        return request.make_response(body=body.to_json())

    async def _query_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = request.read_header(QueryConsumerOffsetRequestHeader)
        offset = self.offsets.get((header.consumer_group or "", header.topic or "", header.queue_id or 0))
        if offset is None:
            return request.make_response(ResponseCode.QUERY_NOT_FOUND, "Not found")
        return request.make_response(header=QueryConsumerOffsetResponseHeader(offset=offset))

    async def _update_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = request.read_header(UpdateConsumerOffsetRequestHeader)
        key = (header.consumer_group or "", header.topic or "", header.queue_id or 0)
        self.offsets[key] = header.commit_offset or 0
        self.offset_updates.append(header)
        await self._notify()
        return request.make_response()

    async def _max_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = request.read_header(GetMaxOffsetRequestHeader)
        count = len(self.messages.get((header.topic or "", header.queue_id or 0), []))
        return request.make_response(header=GetMaxOffsetResponseHeader(offset=count))

    async def _min_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return request.make_response(header=GetMinOffsetResponseHeader(offset=0))

    async def _pull(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = request.read_header(PullMessageRequestHeader)
        stored = self.messages.get((header.topic or "", header.queue_id or 0), [])
        offset = header.queue_offset or 0
        self.pulls.append((header.topic or "", header.queue_id or 0, offset))
        self.pull_headers.append(header)
        await self._notify()
        if offset >= len(stored):
            await asyncio.sleep(HOLD_S)
        stored = self.messages.get((header.topic or "", header.queue_id or 0), [])
        found = stored[offset : offset + (header.max_msg_nums or 32)]
        answer = PullMessageResponseHeader(
            suggest_which_broker_id=0,
            next_begin_offset=offset + len(found),
            min_offset=0,
            max_offset=len(stored),
        )
        if not found:
            return request.make_response(ResponseCode.PULL_NOT_FOUND, "no new message", answer)
        body = b"".join(encode_stored_message(m) for m in found)
        return request.make_response(ResponseCode.SUCCESS, None, answer, body)

    async def _check_client(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        body = CheckClientRequestBody.from_json(request.body)
        self.filter_checks.append(body)
        subscription = body.subscription_data
        refused = subscription is not None and subscription.expression_type not in (None, "", "TAG")
        if refused and self.filter_answer is not None:
            return request.make_response(*self.filter_answer)
        return request.make_response()

    async def _send_back(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.sent_back.append(
            SentBack(request.read_header(ConsumerSendMsgBackRequestHeader), asyncio.get_running_loop().time())
        )
        await self._notify()
        return request.make_response()

    async def _lock(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        wanted = LockBatchRequestBody.from_json(request.body).mq_set
        return request.make_response(body=LockBatchResponseBody(lock_ok_mq_set=wanted).to_json())

    async def _relay(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        """What Apache's broker does with a request for a client (``AdminBrokerProcessor.callConsumer``)."""
        fields = request.fields()
        client_id = fields.get("clientId", "")
        target = self.client_connections.get(client_id)
        if not self.relay or target is None:
            group = fields.get("consumerGroup")
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online"
            )
        relayed = RemotingCommand.request(request.code, ext_fields=fields, body=request.body)
        return await self.server.invoke(target, relayed, 10_000)


class FakeCluster:
    """A FakeNameServer and a FakeBroker, started and stopped together."""

    def __init__(self) -> None:
        self.namesrv = FakeNameServer()
        self.broker = FakeBroker()

    async def __aenter__(self) -> Self:
        await self.namesrv.server.start()
        await self.broker.server.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.broker.server.close(grace=0.1)
        await self.namesrv.server.close(grace=0.1)

    def topic(self, topic: str, queues: int = 1) -> None:
        self.namesrv.set_route(topic, self.broker.address, queues)
