"""In-test NameServer and Broker for the producer tests, on the project's RemotingServer.

They answer just enough of the protocol for a producer (routes; send, batch, heartbeat, unregister, end
transaction) and record every request as received, so tests can assert exact headers and bodies. Failures
and slowness are scripted per broker. Everything binds 127.0.0.1 on an ephemeral port.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import random
import ssl as ssl_module
from collections.abc import Iterator
from types import TracebackType
from typing import Any, Self

from producer import Producer
from rocketmq_wire import ExtFields, acl, features
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketmq_wire.codes import MQVersion, RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader
from rocketmq_wire.headers.send import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    ReplyMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketmq_wire.headers.transaction import CheckTransactionStateRequestHeader
from rocketmq_wire.message import (
    MessageExt,
    RecallHandle,
    decode_batch,
    decode_properties,
    encode_offset_msg_id,
    encode_stored_message,
)
from rocketmq_wire.message import const as props
from rocketmq_wire.transport import Connection, RemotingServer


@dataclasses.dataclass
class Received:
    """One request as a fake server got it, with the connection it came on."""

    cmd: RemotingCommand
    conn: Connection
    seq: int = 0

    @property
    def fields(self) -> dict[str, str]:
        return self.cmd.fields()


class _Recorder:
    def __init__(self) -> None:
        self.received: list[Received] = []
        self._changed = asyncio.Condition()
        #: Numbers requests in arrival order; a cluster shares one counter among its servers.
        self.sequence: Iterator[int] = itertools.count()

    async def _record(self, cmd: RemotingCommand, conn: Connection) -> None:
        async with self._changed:
            self.received.append(Received(cmd, conn, next(self.sequence)))
            self._changed.notify_all()

    def of(self, code: int) -> list[Received]:
        return [r for r in self.received if r.cmd.code == code]

    async def wait_for(self, code: int, count: int = 1, timeout: float = 5.0) -> list[Received]:
        """Until ``count`` requests of ``code`` have arrived (a oneway request gives no other signal)."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.of(code)) >= count)
        return self.of(code)


class FakeNameServer(_Recorder):
    """Answers GET_ROUTEINFO_BY_TOPIC from ``routes``; unknown topics get TOPIC_NOT_EXIST like Apache's."""

    def __init__(self, *, ssl: ssl_module.SSLContext | None = None) -> None:
        super().__init__()
        self.routes: dict[str, TopicRouteData] = {}
        self.server = RemotingServer("127.0.0.1", 0, ssl=ssl)
        self.server.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, self._route)

    async def __aenter__(self) -> Self:
        await self.server.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.server.close(grace=0.1)

    @property
    def address(self) -> str:
        return self.server.address

    def set_route(
        self,
        topic: str,
        brokers: dict[str, str],
        queues: int | dict[str, int] = 4,
        *,
        perm: int = 6,
        order_topic_conf: str | None = None,
    ) -> TopicRouteData:
        """``brokers``: broker name -> master address; ``queues``: write queues per broker (or per name)."""
        counts = queues if isinstance(queues, dict) else dict.fromkeys(brokers, queues)
        route = TopicRouteData(
            order_topic_conf=order_topic_conf,
            queue_datas=[
                QueueData(broker_name=name, read_queue_nums=n, write_queue_nums=n, perm=perm)
                for name, n in counts.items()
            ],
            broker_datas=[
                BrokerData(cluster="DefaultCluster", broker_name=name, broker_addrs={0: addr})
                for name, addr in brokers.items()
            ],
        )
        self.routes[topic] = route
        return route

    def route_requests(self, topic: str) -> int:
        return sum(1 for r in self.of(RequestCode.GET_ROUTEINFO_BY_TOPIC) if r.fields.get("topic") == topic)

    async def _route(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        await self._record(request, conn)
        topic = request.read_header(GetRouteInfoRequestHeader).topic or ""
        route = self.routes.get(topic)
        if route is None:
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        return request.make_response(body=route.to_json())


@dataclasses.dataclass
class StoredMessage:
    """What the fake broker keeps of each message it accepted."""

    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    body: bytes
    properties: str
    sys_flag: int
    producer_group: str


class FakeBroker(_Recorder):
    """A broker master that stores sends in memory.

    Script it with ``fail_codes`` (response codes for the next sends, consumed one per send), ``status_code``
    (e.g. FLUSH_DISK_TIMEOUT for every successful send), ``delay`` (seconds before answering a send, to
    simulate a slow broker) and ``secret_key`` (verify ACL signatures; ``bad_signatures`` counts failures).
    ``version`` is the release its heartbeat answers announce; from 5.3.2 on, a timer message's send answer
    carries a recall handle and RECALL_MESSAGE takes it back (``recalled`` lists the handles).
    """

    def __init__(
        self,
        name: str = "broker-a",
        *,
        secret_key: str | None = None,
        ssl: ssl_module.SSLContext | None = None,
    ) -> None:
        super().__init__()
        self.name = name
        self.secret_key = secret_key
        self.bad_signatures = 0
        self.fail_codes: list[int] = []
        #: The remark of scripted failures (default: "scripted failure of <name>").
        self.fail_remark: str | None = None
        self.status_code = ResponseCode.SUCCESS
        self.delay = 0.0
        self.version = MQVersion.V4_9_8
        self.recalled: list[str] = []
        self.pushed_replies = 0
        self.stored: list[StoredMessage] = []
        self.heartbeats: list[HeartbeatData] = []
        self.client_connections: dict[str, Connection] = {}
        self._queue_offsets: dict[tuple[str, int], int] = {}
        self._commit_offset = 0
        self.server = RemotingServer("127.0.0.1", 0, ssl=ssl)
        for code, handler in {
            RequestCode.SEND_MESSAGE_V2: self._send,
            RequestCode.SEND_BATCH_MESSAGE: self._send,
            RequestCode.SEND_REPLY_MESSAGE_V2: self._send_reply,
            RequestCode.HEART_BEAT: self._heartbeat,
            RequestCode.UNREGISTER_CLIENT: self._ok,
            RequestCode.END_TRANSACTION: self._ok,
            RequestCode.RECALL_MESSAGE: self._recall,
        }.items():
            self.server.register(code, handler)

    async def __aenter__(self) -> Self:
        await self.server.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self.server.close(grace=0.1)

    @property
    def address(self) -> str:
        return self.server.address

    def sends(self) -> list[Received]:
        return [
            r
            for r in self.received
            if r.cmd.code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE)
        ]

    async def _check_acl(self, request: RemotingCommand) -> None:
        if self.secret_key is not None and not acl.verify(request, self.secret_key):
            self.bad_signatures += 1

    async def _ok(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        await self._record(request, conn)
        await self._check_acl(request)
        return request.make_response()

    async def _heartbeat(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        # known before it is recorded, so a test that waited for the heartbeat can address the client
        data = HeartbeatData.from_json(request.body)
        self.heartbeats.append(data)
        if data.client_id:
            self.client_connections[data.client_id] = conn
        await self._record(request, conn)
        await self._check_acl(request)
        response = request.make_response()
        response.version = self.version
        return response

    async def _recall(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        await self._record(request, conn)
        handle = request.read_header(RecallMessageRequestHeader).recall_handle or ""
        self.recalled.append(handle)
        return request.make_response(
            header=RecallMessageResponseHeader(msg_id=RecallHandle.decode(handle).message_id)
        )

    async def _send_reply(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        """As Apache's ReplyMessageProcessor: push the reply to the requester's connection (known from its
        heartbeat), answering the send once the push was answered."""
        await self._record(request, conn)
        header = request.read_header(SendMessageRequestHeaderV2)
        properties = decode_properties(header.properties or "")
        requester = self.client_connections.get(properties.get(props.REPLY_TO_CLIENT, ""))
        if requester is None:
            return request.make_response(ResponseCode.SYSTEM_ERROR, "push reply message fail, no channel")
        push = ReplyMessageRequestHeader(
            producer_group=header.producer_group,
            topic=header.topic,
            default_topic=header.default_topic,
            default_topic_queue_nums=header.default_topic_queue_nums,
            queue_id=header.queue_id,
            sys_flag=header.sys_flag,
            born_timestamp=header.born_timestamp,
            flag=header.flag,
            properties=header.properties,
            reconsume_times=header.reconsume_times,
            unit_mode=header.unit_mode,
            born_host=conn.remote_address,
            store_host=self.address,
            store_timestamp=1_700_000_000_000,
        )
        cmd = RemotingCommand.request(RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT, push, request.body)
        answer = await self.server.invoke(requester, cmd, 3000)
        self.pushed_replies += 1
        return request.make_response(
            answer.code,
            header=SendMessageResponseHeader(msg_id="REPLY", queue_id=header.queue_id, queue_offset=0),
        )

    async def _send(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        await self._record(request, conn)
        await self._check_acl(request)
        if self.delay:
            await asyncio.sleep(self.delay)  # simulated broker latency, not synchronisation
        if self.fail_codes:
            remark = self.fail_remark or f"scripted failure of {self.name}"
            return request.make_response(self.fail_codes.pop(0), remark)
        header = request.read_header(SendMessageRequestHeaderV2)
        topic = header.topic or ""
        queue_id = header.queue_id or 0
        bodies = (
            [(e.body, e.properties_string) for e in decode_batch(request.body)]
            if request.code == RequestCode.SEND_BATCH_MESSAGE
            else [(request.body, header.properties or "")]
        )
        ids: list[str] = []
        first_offset = self._queue_offsets.get((topic, queue_id), 0)
        for body, properties in bodies:
            offset = self._queue_offsets.get((topic, queue_id), 0)
            self._queue_offsets[(topic, queue_id)] = offset + 1
            self.stored.append(
                StoredMessage(
                    topic,
                    queue_id,
                    offset,
                    self._commit_offset,
                    body,
                    properties,
                    header.sys_flag or 0,
                    header.producer_group or "",
                )
            )
            ids.append(encode_offset_msg_id(self.address, self._commit_offset))
            self._commit_offset += 100 + len(body)
        recall_handle = None
        first = decode_properties(bodies[0][1])
        timer = first.get(props.TIMER_DELIVER_MS)
        if timer is not None and self.version >= features.RECALL_MESSAGE:
            handle = RecallHandle(topic, self.name, str(int(timer) + 1), first[props.UNIQ_KEY])
            recall_handle = handle.encode()
        response = request.make_response(
            self.status_code,
            header=SendMessageResponseHeader(
                msg_id=",".join(ids),
                queue_id=queue_id,
                queue_offset=first_offset,
                recall_handle=recall_handle,
            ),
        )
        response.ext_fields = ExtFields({"MSG_REGION": "DefaultRegion", "TRACE_ON": "true"})
        return response

    async def check_transaction(
        self,
        client_id: str,
        stored: StoredMessage,
        *,
        transaction_id: str | None = None,
    ) -> None:
        """Ask the producer with ``client_id`` (known from its heartbeat) about a half message, as a
        broker's transaction checker does: a oneway CHECK_TRANSACTION_STATE with the message as body."""
        conn = self.client_connections[client_id]
        message = MessageExt(
            topic=stored.topic,
            body=stored.body,
            properties_string=stored.properties,
            queue_id=stored.queue_id,
            queue_offset=stored.queue_offset,
            commit_log_offset=stored.commit_log_offset,
            sys_flag=stored.sys_flag,
            born_host="127.0.0.1:5000",
            store_host=self.address,
        )
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=stored.queue_offset,
            commit_log_offset=stored.commit_log_offset,
            msg_id=encode_offset_msg_id(self.address, stored.commit_log_offset),
            transaction_id=transaction_id,
        )
        cmd = RemotingCommand.request(
            RequestCode.CHECK_TRANSACTION_STATE, header, encode_stored_message(message)
        )
        await self.server.invoke_oneway(conn, cmd)


class Cluster:
    """NameServers and brokers started together; ``producer()`` makes a producer pointed at them.

    Producers get a seeded random generator, so their first round-robin position is reproducible.
    """

    def __init__(
        self,
        brokers: tuple[str, ...] = ("broker-a",),
        namesrvs: int = 1,
        *,
        secret_key: str | None = None,
        ssl: ssl_module.SSLContext | None = None,
    ) -> None:
        self.namesrvs = [FakeNameServer(ssl=ssl) for _ in range(namesrvs)]
        self.brokers = {name: FakeBroker(name, secret_key=secret_key, ssl=ssl) for name in brokers}
        sequence = itertools.count()
        for server in self._servers():
            server.sequence = sequence

    def _servers(self) -> list[FakeNameServer | FakeBroker]:
        return [*self.namesrvs, *self.brokers.values()]

    async def __aenter__(self) -> Self:
        for server in self._servers():
            await server.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        for server in reversed(self._servers()):
            await server.__aexit__(None, None, None)

    @property
    def namesrv(self) -> str:
        """The NameServer list in Java's ``host:port;host:port`` form."""
        return ";".join(n.address for n in self.namesrvs)

    def route(self, topic: str, queues: int | dict[str, int] = 4, **kwargs: Any) -> None:
        """The same route on every NameServer: every broker, ``queues`` write queues each."""
        brokers = {name: broker.address for name, broker in self.brokers.items()}
        if isinstance(queues, dict):
            brokers = {name: addr for name, addr in brokers.items() if name in queues}
        for namesrv in self.namesrvs:
            namesrv.set_route(topic, brokers, queues, **kwargs)

    def all_sends(self) -> list[Received]:
        return sorted(
            (r for broker in self.brokers.values() for r in broker.sends()),
            key=lambda r: r.seq,
        )

    def producer(self, group: str = "TestGroup", **kwargs: Any) -> Producer:
        kwargs.setdefault("rng", random.Random(7))
        return Producer(group, self.namesrv, **kwargs)
