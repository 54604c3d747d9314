"""A scripted NameServer + Broker on one port, just enough for the C++ client to send, pull and push-consume.

Why it exists: it lets the harness's success paths (SendResults, received messages, orderly queue choice,
batches, binary bodies, push delivery) be tested without a real RocketMQ server, and it records every request
the C++ client makes, so tests can also look at what it sent. It is a test double, not the project's
NameServer or Broker: one broker ``broker-a`` at the same address as the NameServer, topics created on first
use with ``queues`` queues, an in-memory store, no delay scheduling (a delay level is stored as a property
only), retries go to ``%RETRY%<group>`` at once, no long polling beyond a short pause.

It runs its asyncio loop in a background thread so that synchronous tests (which wait on peer processes)
can use it; built only on ``rocketmq_wire``'s command codec, transport and stored-message encoder.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.message import const
from rocketmq_wire.message.batch import decode_batch, merge_batch_properties
from rocketmq_wire.message.properties import decode_properties, encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages, encode_stored_message
from rocketmq_wire.transport import Connection, RemotingServer

BROKER_NAME = "broker-a"
RETRY_PREFIX = "%RETRY%"
#: Java's default maxReconsumeTimes, after which a message goes to the dead-letter queue.
MAX_RECONSUME_TIMES = 16
CLUSTER = "DefaultCluster"
#: How long a pull that finds nothing is held before NOT_FOUND, so a push consumer does not spin.
EMPTY_PULL_PAUSE_S = 0.2


@dataclasses.dataclass(frozen=True)
class Received:
    """One request the fake received."""

    code: int
    fields: dict[str, str]
    body: bytes
    language: str


@dataclasses.dataclass
class _Queue:
    records: list[bytes] = dataclasses.field(default_factory=list)


class FakeCluster:
    """Start with :func:`fake_cluster` (a context manager) or :meth:`start`/:meth:`stop`."""

    def __init__(self, queues: int = 4) -> None:
        self.queues = queues
        self.address = ""
        self.received: list[Received] = []
        self._store: dict[tuple[str, int], _Queue] = {}
        self._offsets: dict[tuple[str, str, int], int] = {}
        self._consumers: dict[str, set[str]] = {}
        self._commit_log_offset = 0
        self._by_commit_offset: dict[int, MessageExt] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: RemotingServer | None = None
        self._thread: threading.Thread | None = None

    # -------------------------------------------------------------------------------------- lifecycle

    def start(self) -> FakeCluster:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._open())
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._close())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-cluster", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    async def _open(self) -> None:
        server = RemotingServer("127.0.0.1", 0)
        handlers = {
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self._route,
            RequestCode.SEND_MESSAGE: self._send,
            RequestCode.SEND_MESSAGE_V2: self._send,
            RequestCode.SEND_BATCH_MESSAGE: self._send,
            RequestCode.PULL_MESSAGE: self._pull,
            RequestCode.HEART_BEAT: self._heartbeat,
            RequestCode.UNREGISTER_CLIENT: self._ok,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self._consumer_list,
            RequestCode.QUERY_CONSUMER_OFFSET: self._query_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self._update_offset,
            RequestCode.GET_MAX_OFFSET: self._max_offset,
            RequestCode.GET_MIN_OFFSET: self._min_offset,
            RequestCode.CONSUMER_SEND_MSG_BACK: self._send_back,
        }
        for code, handler in handlers.items():
            server.register(code, self._recording(handler))
        server.register_default(self._recording(None))
        port = await server.start()
        self._server = server
        self.address = f"127.0.0.1:{port}"

    async def _close(self) -> None:
        if self._server is not None:
            await self._server.close(grace=0.5)

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)

    # ----------------------------------------------------------------------------------- inspection

    def requests(self, code: int) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.code == code]

    def stored(self, topic: str) -> list[MessageExt]:
        """Every message stored for ``topic``, by queue then offset."""
        with self._lock:
            keys = sorted(k for k in self._store if k[0] == topic)
            return [m for k in keys for r in self._store[k].records for m in decode_messages(r)]

    # ------------------------------------------------------------------------------------- handlers

    def _recording(self, handler: Any) -> Any:
        async def handle(request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
            with self._lock:
                self.received.append(
                    Received(request.code, request.fields(), request.body, request.language.name)
                )
            if handler is None:
                return request.make_response(
                    ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
                )
            response: RemotingCommand | None = await handler(request, conn)
            return response

        return handle

    async def _ok(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return request.make_response()

    async def _route(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        topic = request.fields().get("topic", "")
        if topic.startswith("%DLQ%"):
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic route info in name server for the topic: {topic}"
            )
        queue_count = 1 if topic.startswith(RETRY_PREFIX) else self.queues  # Java's retry topics have one
        # Written as Java's NameServer writes it (fastjson, integer map key), which the C++ client parses.
        broker = (
            f'{{"brokerAddrs":{{0:"{self.address}"}},"brokerName":"{BROKER_NAME}","cluster":"{CLUSTER}"}}'
        )
        queues = (
            f'{{"brokerName":"{BROKER_NAME}","perm":6,"readQueueNums":{queue_count},"topicSysFlag":0,'
            f'"writeQueueNums":{queue_count}}}'
        )
        body = f'{{"brokerDatas":[{broker}],"filterServerTable":{{}},"queueDatas":[{queues}]}}'
        return request.make_response(body=body.encode())

    def _append(self, message: MessageExt) -> tuple[int, str]:
        """Stores ``message`` (under the lock); returns its queue offset and offset message id."""
        queue = self._store.setdefault((message.topic, message.queue_id), _Queue())
        message.queue_offset = len(queue.records)
        message.commit_log_offset = self._commit_log_offset
        message.store_timestamp = int(time.time() * 1000)
        record = encode_stored_message(message)
        self._commit_log_offset += len(record)
        queue.records.append(record)
        self._by_commit_offset[message.commit_log_offset] = message
        return message.queue_offset, message.msg_id

    async def _send(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        f = request.fields()
        # SEND_MESSAGE_V2 uses one-letter names (a topic, b ... ); the C++ client sends plain SEND_MESSAGE.
        if request.code == RequestCode.SEND_MESSAGE_V2:
            f = {_V2_NAMES.get(k, k): v for k, v in f.items()}
        topic, queue_id = f["topic"], int(f.get("queueId", "0")) % self.queues
        sys_flag, born_timestamp = int(f.get("sysFlag", "0")), int(f.get("bornTimestamp", "0"))
        born_host, reconsume_times = conn.remote_address or "127.0.0.1:0", int(f.get("reconsumeTimes", "0"))
        entries: list[tuple[bytes, str, int]]
        # Like Java 4.x's SendMessageProcessor, a batch is told by the header's batch flag as well as by the
        # code: the C++ client sends its batches as SEND_MESSAGE with batch=1.
        if request.code == RequestCode.SEND_BATCH_MESSAGE or f.get("batch") in ("1", "true"):
            batch_props = f.get("properties", "")
            entries = [
                (e.body, merge_batch_properties(e.properties_string, batch_props), e.flag)
                for e in decode_batch(request.body)
            ]
        else:
            entries = [(request.body, f.get("properties", ""), int(f.get("flag", "0")))]
        results = []
        with self._lock:
            for body, props, flag in entries:
                message = MessageExt(
                    topic=topic,
                    body=body,
                    flag=flag,
                    properties_string=props,
                    queue_id=queue_id,
                    sys_flag=sys_flag,
                    born_timestamp=born_timestamp,
                    born_host=born_host,
                    store_host=self.address,
                    reconsume_times=reconsume_times,
                )
                results.append(self._append(message))
        ext = {
            "msgId": ",".join(msg_id for _, msg_id in results),
            "queueId": str(queue_id),
            "queueOffset": str(results[0][0]),
            "MSG_REGION": "DefaultRegion",
            "TRACE_ON": "true",
        }
        return self._with_ext(request, ext)

    async def _pull(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        f = request.fields()
        key = (f["topic"], int(f["queueId"]))
        offset, max_nums = int(f["queueOffset"]), int(f.get("maxMsgNums", "32"))
        with self._lock:
            records = list(self._store.get(key, _Queue()).records)
        if offset >= len(records) and int(f.get("suspendTimeoutMillis", "0")) > 0:
            await asyncio.sleep(EMPTY_PULL_PAUSE_S)
            with self._lock:
                records = list(self._store.get(key, _Queue()).records)
        found = records[offset : offset + max_nums]
        ext = {
            "suggestWhichBrokerId": "0",
            "minOffset": "0",
            "maxOffset": str(len(records)),
            "nextBeginOffset": str(offset + len(found) if found else min(offset, len(records))),
        }
        if found:
            return self._with_ext(request, ext, body=b"".join(found))
        code = ResponseCode.PULL_NOT_FOUND if offset == len(records) else ResponseCode.PULL_OFFSET_MOVED
        return self._with_ext(request, ext, code=code)

    async def _send_back(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        """CONSUMER_SEND_MSG_BACK: the message goes to ``%RETRY%<group>`` at once (no delay levels here),
        marked as Java's broker marks it, so the consumer gets it again under its original topic."""
        f = request.fields()
        with self._lock:
            original = self._by_commit_offset.get(int(f["offset"]))
            if original is None:
                return request.make_response(ResponseCode.SYSTEM_ERROR, f"no message at offset {f['offset']}")
            if original.reconsume_times + 1 > int(f.get("maxReconsumeTimes") or MAX_RECONSUME_TIMES):
                return request.make_response()  # Java would move it to %DLQ%<group>; the fake drops it
            properties = dict(decode_properties(original.properties_string))
            properties.setdefault(const.RETRY_TOPIC, original.topic)
            properties.setdefault(const.ORIGIN_MESSAGE_ID, f.get("originMsgId") or original.msg_id)
            retry = dataclasses.replace(
                original,
                topic=RETRY_PREFIX + f["group"],
                queue_id=0,
                reconsume_times=original.reconsume_times + 1,
                properties_string=encode_properties(properties),
            )
            self._append(retry)
        return request.make_response()

    async def _heartbeat(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        try:
            data = json.loads(request.body)
        except ValueError:
            data = {}
        client_id = str(data.get("clientID", ""))
        with self._lock:
            for consumer in data.get("consumerDataSet") or []:
                self._consumers.setdefault(str(consumer.get("groupName")), set()).add(client_id)
        return request.make_response()

    async def _consumer_list(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        with self._lock:
            ids = sorted(self._consumers.get(request.fields().get("consumerGroup", ""), set()))
        return request.make_response(body=json.dumps({"consumerIdList": ids}).encode())

    def _offset_key(self, request: RemotingCommand) -> tuple[str, str, int]:
        f = request.fields()
        return f["consumerGroup"], f["topic"], int(f["queueId"])

    async def _query_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        # A new group starts at 0 here (a Java broker answers QUERY_NOT_FOUND and the client then picks
        # by consumeFromWhere): the fake's tests want every stored message delivered.
        with self._lock:
            offset = self._offsets.get(self._offset_key(request), 0)
        return self._with_ext(request, {"offset": str(offset)})

    async def _update_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        with self._lock:
            self._offsets[self._offset_key(request)] = int(request.fields()["commitOffset"])
        return request.make_response()

    async def _max_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        f = request.fields()
        with self._lock:
            size = len(self._store.get((f["topic"], int(f["queueId"])), _Queue()).records)
        return self._with_ext(request, {"offset": str(size)})

    async def _min_offset(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return self._with_ext(request, {"offset": "0"})

    @staticmethod
    def _with_ext(
        request: RemotingCommand, ext: dict[str, str], *, code: int = ResponseCode.SUCCESS, body: bytes = b""
    ) -> RemotingCommand:
        """A response carrying ``ext`` as plain ext fields (the fake has no typed response headers)."""
        response = request.make_response(code=code, body=body)
        response.ext_fields = ExtFields(ext)
        return response


#: SendMessageRequestHeaderV2's one-letter field names.
_V2_NAMES = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
}


@contextmanager
def fake_cluster(queues: int = 4) -> Iterator[FakeCluster]:
    cluster = FakeCluster(queues).start()
    try:
        yield cluster
    finally:
        cluster.stop()
