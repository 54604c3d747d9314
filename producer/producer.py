"""The asyncio producer: routes, queue choice, retries and the send itself.

A :class:`Producer` owns its publish routes, latency table and unique-id generator; its connections,
NameServer client, broker table and heartbeats belong to the client instance of its client id
(``client.instance``), shared with the other producers and consumers of that id on the event loop as in
Java. By default every producer has a client id of its own (``<pid>#<nanoseconds>`` instance name), so
producers share an instance only when given the same ``instance_name``. Concurrent ``send`` calls share the
broker connection; the transport matches answers to requests by opaque, so they are pipelined.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import logging
import random
import ssl as ssl_module
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from client import errors as client_errors
from client.backoff import Backoff
from client.identity import client_id, default_instance_name, resolve_ip
from client.instance import ClientInstance, Member, MemberKind, join_instance
from client.namesrv import parse_namesrv_list
from client.rpc import ClientRpc
from client.stats import StatsCallback
from client.telemetry import Observation, OtelOptions
from client.trace import TraceDispatcher, now_ms
from producer.config import ProducerConfig
from producer.errors import (
    BrokerBusyError,
    BrokerError,
    BrokerVersionError,
    DuplicateGroupError,
    MessageValidationError,
    NoRouteError,
    ProducerError,
    ProducerStateError,
    RequestTimeoutError,
    SendFailedError,
    SendTimeoutError,
)
from producer.fault import LatencyFaultTolerance
from producer.flow_control import BusyAnswer, BusyListener, BusyRefusals, is_busy_answer
from producer.result import SendResult, SendStatus
from producer.routes import RouteTable, TopicPublishInfo
from producer.selectors import QueueSelector, select_by_hash
from producer.sender import (
    RETRYABLE_RESPONSE_CODES,
    PreparedMessage,
    check_group,
    check_topic,
    parse_send_response,
    prepare_batch,
    prepare_message,
    prepare_reply,
    properties_flavour,
    send_request,
)
from producer.trace import trace_group, trace_producer_config
from rocketmq_wire import features
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.codes import RequestCode, ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.send import RecallMessageRequestHeader, RecallMessageResponseHeader
from rocketmq_wire.message import Message, MessageExt, PropertiesFlavour, RecallHandle, UniqueIdGenerator
from rocketmq_wire.message.reply import reply_target, request_properties
from rocketmq_wire.topics import (
    DLQ_GROUP_TOPIC_PREFIX,
    RETRY_GROUP_TOPIC_PREFIX,
    without_namespace,
    wrap_namespace,
)
from rocketmq_wire.trace import JAVA_NULL, TraceBean, TraceContext, TraceMessageType, TraceType
from rocketmq_wire.transport import Connection, RemotingError

logger = logging.getLogger("producer")

#: Java's ``request`` has no default; 3 s, as its sends.
DEFAULT_REQUEST_TIMEOUT_MS = 3000.0

#: ``async def handler(request, connection) -> response or None`` for requests brokers send the producer.
ServerRequestHandler = Callable[[RemotingCommand, Connection], Awaitable[RemotingCommand | None]]


class _State(enum.Enum):
    CREATED = "created"
    RUNNING = "running"
    STOPPED = "stopped"


class _NoBrokerAddress(ProducerError):
    """The route names a broker whose master address is unknown (Java's "The broker[...] not exist")."""


class Producer:
    """Sends messages to a RocketMQ cluster; use ``async with Producer(...)`` or ``start()``/``shutdown()``.

    ``namesrv`` is Java's ``namesrvAddr``: ``"host:port;host:port"`` or a list. Settings come from
    ``config`` (a :class:`ProducerConfig`, Java's defaults); the keyword arguments override the most common
    ones. ``group`` and topics are given without namespace; results come back without it too.
    """

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        config: ProducerConfig | None = None,
        namespace: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        ssl: ssl_module.SSLContext | None = None,
        send_timeout_ms: float | None = None,
        retry_times: int | None = None,
        send_latency_fault_enable: bool | None = None,
        serialize_type: SerializeType | None = None,
        enable_msg_trace: bool | None = None,
        trace_topic: str | None = None,
        rng: random.Random | None = None,
        stats_cb: StatsCallback | None = None,
        stats_interval_s: float | None = None,
        otel: OtelOptions | bool | None = None,
    ) -> None:
        overrides: dict[str, Any] = {
            "namespace": namespace,
            "access_key": access_key,
            "secret_key": secret_key,
            "ssl": ssl,
            "send_timeout_ms": send_timeout_ms,
            "retry_times": retry_times,
            "send_latency_fault_enable": send_latency_fault_enable,
            "serialize_type": serialize_type,
            "enable_msg_trace": enable_msg_trace,
            "trace_topic": trace_topic,
        }
        base = config or ProducerConfig()
        self.config = dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})
        self.group = group
        self.wire_group = wrap_namespace(self.config.namespace, group)
        check_group(self.wire_group)
        self.namesrv_addresses = parse_namesrv_list(namesrv if isinstance(namesrv, str) else list(namesrv))
        self._rng = rng or random.Random()
        self._flavour = properties_flavour(self.config.version)
        self._state = _State.CREATED
        self._instance: ClientInstance | None = None
        self._member: Member | None = None
        self._rpc: ClientRpc | None = None
        self._routes: RouteTable | None = None
        self._ids: UniqueIdGenerator | None = None
        self._fault = LatencyFaultTolerance()
        self._busy_listeners: list[BusyListener] = []
        self._tracer: TraceDispatcher | None = None
        self.client_id = ""
        self._observation = Observation(
            role="producer",
            client_id=lambda: self.client_id,
            stats_cb=stats_cb,
            stats_interval_s=stats_interval_s,
            otel=otel,
            group=group,
        )
        self._observer = self._observation.observer

    # -- lifecycle -------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.shutdown()

    @property
    def running(self) -> bool:
        return self._state is _State.RUNNING

    @property
    def client_instance(self) -> ClientInstance | None:
        """The client instance this producer is on while running (shared with the producers and consumers of
        its client id), else ``None``."""
        return self._instance if self._state is _State.RUNNING else None

    async def start(self) -> None:
        """Join the client instance of this producer's client id (creating it, with its route-refresh and
        heartbeat timers, if this is its first member); connects lazily.

        Raises :class:`~producer.errors.DuplicateGroupError` when a producer of the same group is already
        on that instance (same ``instance_name``), as Java refuses it.
        """
        if self._state is not _State.CREATED:
            raise ProducerStateError(f"the producer was already started ({self._state.value})")
        config = self.config
        settings = config.client_settings()
        ip = resolve_ip(settings.client_ip)
        member = Member(
            MemberKind.PRODUCER,
            self.wire_group,
            handlers=self._server_request_handlers(),
            topics=self._route_topics,
            on_route=self._on_route,
        )
        try:
            instance = join_instance(
                client_id(ip, settings.instance_name or default_instance_name()),
                self.namesrv_addresses,
                settings,
                member,
                rng=self._rng,
            )
        except client_errors.DuplicateGroupError as exc:
            raise DuplicateGroupError(str(exc)) from exc
        self.client_id = instance.client_id
        self._instance, self._member = instance, member
        self._ids = UniqueIdGenerator(ip)
        self._rpc = instance.member_rpc(settings)
        self._routes = RouteTable(
            instance,
            create_topic_key=config.create_topic_key,
            default_topic_queue_nums=config.default_topic_queue_nums,
            rng=self._rng,
        )
        self._state = _State.RUNNING
        self._observation.start()
        if config.enable_msg_trace:
            try:
                self._tracer = await start_trace_dispatcher(
                    self.namesrv_addresses,
                    self.wire_group,
                    owner=self,
                    trace_topic=config.trace_topic,
                    config=config,
                )
            except Exception as exc:  # tracing never keeps the producer from working
                logger.warning("producer %s: no message trace, its dispatcher failed: %s", self.group, exc)
        logger.info(
            "producer %s started as client %s (NameServers %s)",
            self.wire_group,
            self.client_id,
            ";".join(self.namesrv_addresses),
        )

    async def shutdown(self) -> None:
        """Leave the client instance (UNREGISTER_CLIENT for the group at every broker; the instance closes its
        connections and timers when this was its last member); idempotent."""
        if self._state is not _State.RUNNING:
            self._state = _State.STOPPED
            return
        self._state = _State.STOPPED
        await self._observation.stop()
        if self._tracer is not None:
            await self._tracer.shutdown()
            self._tracer = None
        assert self._routes is not None and self._instance is not None and self._member is not None
        await self._routes.close()
        await self._instance.leave(self._member)
        logger.info("producer %s (client %s) shut down", self.wire_group, self.client_id)

    # -- public sending API ----------------------------------------------------------------------------

    async def send(
        self,
        message: Message,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: str | None = None,
        timeout_ms: float | None = None,
    ) -> SendResult:
        """Send and wait for the broker to store the message.

        By default the queue is chosen round-robin and a failed attempt is retried on another broker
        (``retry_times``). ``queue`` sends to that queue; ``selector(queues, message, arg)`` or
        ``sharding_key`` (Java's hash selector) pick the queue of an ordered send; those are not retried
        elsewhere, since that would break the order.
        """
        observed = self._observer.start_send(message.topic, (message,))
        try:
            prepared = self._prepare(message, self._extra_properties(message))
            begin = now_ms()
            result = await self._dispatch(
                prepared, message, queue, selector, arg, sharding_key, timeout_ms, False
            )
        except BaseException:
            observed.end(False)
            raise
        assert result is not None
        observed.end(True, result.msg_id)
        if self._tracer is not None:
            self._trace_pub([message], result, [result.msg_id], begin, prepared.topic)
        return result

    async def send_oneway(
        self,
        message: Message,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: str | None = None,
    ) -> None:
        """Send without waiting for any answer (one attempt; fastest, and the message may be lost)."""
        prepared = self._prepare(message, self._extra_properties(message))
        await self._dispatch(prepared, message, queue, selector, arg, sharding_key, None, True)

    async def send_batch(
        self,
        messages: Sequence[Message],
        *,
        queue: MessageQueue | None = None,
        timeout_ms: float | None = None,
    ) -> SendResult:
        """Send several messages of one topic as one SEND_BATCH_MESSAGE; the result's ``msg_id`` lists
        their unique ids, comma separated, and ``offset_msg_id`` the broker's ids likewise."""
        self._check_running()
        if not messages:
            raise MessageValidationError("a batch needs at least one message")
        ids = self._id_generator()
        wire_topic = self._wire_topic(messages[0].topic)
        unique_ids = [ids.next_id() for _ in messages]
        observed = self._observer.start_send(messages[0].topic, messages)
        batch_id = ids.next_id() if self._flavour is PropertiesFlavour.V5 else None
        prepared = prepare_batch(
            messages,
            wire_topic,
            unique_ids,
            flavour=self._flavour,
            max_message_size=self.config.max_message_size,
            batch_unique_id=batch_id,
        )
        begin = now_ms()
        try:
            result = await self._dispatch(prepared, messages[0], queue, None, None, None, timeout_ms, False)
        except BaseException:
            observed.end(False)
            raise
        assert result is not None
        observed.end(True, result.msg_id)
        if self._tracer is not None:
            self._trace_pub(list(messages), result, unique_ids, begin, wire_topic)
        return result

    async def fetch_publish_queues(self, topic: str) -> list[MessageQueue]:
        """The queues a send to ``topic`` may go to (namespace removed), e.g. for a custom selector."""
        self._check_running()
        info = await self._route_table().publish_info(self._wire_topic(topic))
        return [self._user_queue(q) for q in info.queues]

    async def request(
        self,
        message: Message,
        timeout_ms: float = DEFAULT_REQUEST_TIMEOUT_MS,
        *,
        queue: MessageQueue | None = None,
        selector: QueueSelector | None = None,
        arg: Any = None,
        sharding_key: str | None = None,
    ) -> MessageExt:
        """Send ``message`` as a request and wait for its reply (Java's ``DefaultMQProducer.request``).

        The request carries a correlation id, this client's id and ``timeout_ms`` as its time to live; a
        responder answers it with :meth:`reply`, and a broker pushes that reply back here. One time budget
        covers the send and the wait: :class:`RequestTimeoutError` when the request was stored but no reply
        came in time, the send's own error when it could not be sent.
        """
        self._check_running()
        assert self._instance is not None
        instance = self._instance
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        wire_topic = self._wire_topic(message.topic)
        if self._route_table().cached(wire_topic) is None:
            # As Java: the first request to a topic makes sure every broker knows this client, since the
            # reply may be pushed by any broker of the cluster.
            await self._publish_info(wire_topic, timeout_ms)
            await instance.send_heartbeats()
        correlation_id = str(uuid.uuid4())
        stamps = request_properties(correlation_id, self.client_id, int(timeout_ms))
        prepared = self._prepare(message, {**self._extra_properties(message), **stamps})
        waiter = instance.replies.expect(correlation_id)
        try:
            remaining_ms = (deadline - loop.time()) * 1000
            await self._dispatch(prepared, message, queue, selector, arg, sharding_key, remaining_ms, False)
            try:
                async with asyncio.timeout(max(0.0, deadline - loop.time())):
                    return await waiter
            except TimeoutError:
                raise RequestTimeoutError(
                    f"send request message to <{message.topic}> OK, but wait reply message timeout, "
                    f"{timeout_ms:.0f} ms."
                ) from None
        finally:
            instance.replies.forget(correlation_id)

    async def reply(self, request: MessageExt, body: bytes, *, timeout_ms: float | None = None) -> SendResult:
        """Answer a request message received by a consumer: a reply to ``<cluster>_REPLY_TOPIC``, built as
        Java's ``MessageUtil.createReplyMessage`` builds it and sent with SEND_REPLY_MESSAGE_V2, which the
        broker pushes to the requester."""
        self._check_running()
        try:
            topic, properties = reply_target(request.properties)
        except CodecError as exc:
            raise MessageValidationError(str(exc)) from exc
        prepared = prepare_reply(
            body,
            self._wire_topic(topic),
            self._id_generator().next_id(),
            properties,
            flavour=self._flavour,
            max_message_size=self.config.max_message_size,
            compress_over=self.config.compress_over,
            compress_level=self.config.compress_level,
        )
        timeout = self.config.send_timeout_ms if timeout_ms is None else timeout_ms
        result = await self._send_with_retries(prepared, timeout, False)
        assert result is not None
        return result

    async def recall(self, topic: str, handle: str, *, timeout_ms: float | None = None) -> str:
        """Take back a timer message before its delivery time, by the ``recall_handle`` of its send result
        (RECALL_MESSAGE, brokers of 5.3.2 on); returns the recalled message's unique id.

        The handle names the broker holding the message, which is asked directly (Java falls back to any
        broker of the topic when that one is not in the route, as a proxy would serve it).
        """
        self._check_running()
        wire_topic = self._wire_topic(topic)
        if wire_topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
            raise MessageValidationError(f"messages of {topic!r} cannot be recalled (retry and DLQ topics)")
        try:
            parsed = RecallHandle.decode(handle)
        except CodecError as exc:
            raise MessageValidationError(str(exc)) from exc
        timeout = self.config.send_timeout_ms if timeout_ms is None else timeout_ms
        routes = self._route_table()
        info = await self._publish_info(wire_topic, timeout)
        addr = routes.master_address(parsed.broker_name)
        if addr is None and info.queues:
            addr = routes.master_address(info.queues[0].broker_name)
        if addr is None:
            raise NoRouteError(f"no address for broker {parsed.broker_name!r} of topic {topic!r}")
        assert self._instance is not None
        await self._instance.require_broker_version(
            addr, features.RECALL_MESSAGE, "recalling a message", error=BrokerVersionError
        )
        header = RecallMessageRequestHeader(
            producer_group=self.wire_group,
            topic=wire_topic,
            recall_handle=handle,
            bname=parsed.broker_name,
        )
        cmd = RemotingCommand.request(RequestCode.RECALL_MESSAGE, header)
        response = await self._rpc_client().invoke(addr, cmd, timeout)
        if response.code != ResponseCode.SUCCESS:
            raise BrokerError(response.code, response.remark, addr)
        try:
            answer = RecallMessageResponseHeader.from_ext(response.fields())
        except CodecError as exc:
            raise BrokerError(response.code, f"unreadable recall answer: {exc}", addr) from exc
        return answer.msg_id or ""

    def stats(self) -> dict[str, Any] | None:
        """This producer's statistics now (see ``client.stats``), or None without a ``stats_cb``."""
        return self._observation.snapshot()

    async def send_heartbeats(self) -> int:
        """Heartbeat every master broker now (the instance's timer does this every 30 s), for every group of
        the client instance; returns how many accepted."""
        if self._instance is None or self._instance.closed:
            return 0
        return await self._instance.send_heartbeats()

    # -- message trace -----------------------------------------------------------------------------------

    @property
    def trace_dispatcher(self) -> TraceDispatcher | None:
        """The dispatcher writing this producer's trace records, when ``enable_msg_trace`` is on."""
        return self._tracer

    def _trace_pub(
        self,
        messages: Sequence[Message],
        result: SendResult,
        msg_ids: Sequence[str],
        begin_ms: int,
        wire_topic: str,
        msg_type: TraceMessageType | None = None,
    ) -> None:
        """Queue a ``Pub`` record per message sent (Java's ``SendMessageTraceHookImpl``); never raises."""
        tracer = self._tracer
        if tracer is None or wire_topic.startswith(tracer.trace_topic) or not result.trace_on:
            return
        try:
            cost = now_ms() - begin_ms
            addr = self._route_table().broker_addresses().get(result.message_queue.broker_name, {}).get(0, "")
            offset_ids = (result.offset_msg_id or "").split(",")
            for index, (message, msg_id) in enumerate(zip(messages, msg_ids, strict=False)):
                kind = msg_type
                if kind is None:
                    delayed = message.delay_level > 0
                    kind = TraceMessageType.DELAY if delayed else TraceMessageType.NORMAL
                bean = TraceBean(
                    topic=message.topic,
                    msg_id=msg_id,
                    offset_msg_id=offset_ids[index] if index < len(offset_ids) else "",
                    tags=message.tags if message.tags is not None else JAVA_NULL,
                    keys=" ".join(message.keys) if message.keys else JAVA_NULL,
                    store_host=addr,
                    client_host=self.client_id.split("@")[0],
                    body_length=len(message.body),
                    msg_type=kind,
                )
                tracer.append(
                    TraceContext(
                        TraceType.PUB,
                        timestamp=begin_ms,
                        region_id=result.region_id,
                        group_name=self.group,
                        cost_time=cost,
                        success=result.status is SendStatus.SEND_OK,
                        beans=[bean],
                    )
                )
        except Exception:
            logger.exception("producer %s: writing a trace record failed", self.group)

    # -- hooks for subclasses ----------------------------------------------------------------------------

    def _server_request_handlers(self) -> Mapping[int, ServerRequestHandler]:
        """Requests brokers may send this producer, by request code (the transaction producer adds one)."""
        return {}

    def _extra_properties(self, message: Message) -> dict[str, str]:
        """System properties the send adds ahead of the unique id (the transaction producer's markers)."""
        return {}

    # -- internals ---------------------------------------------------------------------------------------

    def _check_running(self) -> None:
        if self._state is not _State.RUNNING:
            raise ProducerStateError(f"the producer is not running ({self._state.value}); call start() first")

    def _route_table(self) -> RouteTable:
        assert self._routes is not None
        return self._routes

    def _id_generator(self) -> UniqueIdGenerator:
        assert self._ids is not None
        return self._ids

    def _rpc_client(self) -> ClientRpc:
        assert self._rpc is not None
        return self._rpc

    def _wire_topic(self, topic: str) -> str:
        wire = wrap_namespace(self.config.namespace, topic)
        check_topic(wire, self.config.create_topic_key)
        return wire

    def _user_queue(self, queue: MessageQueue) -> MessageQueue:
        return MessageQueue(
            without_namespace(queue.topic, self.config.namespace), queue.broker_name, queue.queue_id
        )

    def _prepare(self, message: Message, extra: Mapping[str, str]) -> PreparedMessage:
        self._check_running()
        return prepare_message(
            message,
            self._wire_topic(message.topic),
            self._id_generator().next_id(),
            flavour=self._flavour,
            max_message_size=self.config.max_message_size,
            compress_over=self.config.compress_over,
            compress_level=self.config.compress_level,
            extra_properties=extra,
        )

    def _route_topics(self) -> list[str]:
        """The topics whose routes the instance's periodic refresh fetches for this producer."""
        return self._routes.topics if self._routes is not None else []

    def _on_route(self, topic: str, route: TopicRouteData | None) -> None:
        if self._routes is not None:
            self._routes.on_route(topic, route)

    async def _dispatch(
        self,
        prepared: PreparedMessage,
        message: Message,
        queue: MessageQueue | None,
        selector: QueueSelector | None,
        arg: Any,
        sharding_key: str | None,
        timeout_ms: float | None,
        oneway: bool,
    ) -> SendResult | None:
        timeout = self.config.send_timeout_ms if timeout_ms is None else timeout_ms
        if sharding_key is not None:
            if selector is not None:
                raise ValueError("give either a selector or a sharding_key, not both")
            selector, arg = select_by_hash, sharding_key
        if queue is not None and selector is not None:
            raise ValueError("give either a queue or a selector, not both")
        if queue is not None:
            if queue.topic != message.topic:
                raise MessageValidationError(
                    f"the message's topic {message.topic!r} differs from the queue's {queue.topic!r}"
                )
            return await self._send_once(prepared, self._wire_queue(queue), timeout, oneway)
        if selector is not None:
            chosen = await self._select_with(prepared.topic, selector, message, arg, timeout)
            return await self._send_once(prepared, chosen, timeout, oneway)
        return await self._send_with_retries(prepared, timeout, oneway)

    def _wire_queue(self, queue: MessageQueue) -> MessageQueue:
        return MessageQueue(
            wrap_namespace(self.config.namespace, queue.topic), queue.broker_name, queue.queue_id
        )

    async def _select_with(
        self, wire_topic: str, selector: QueueSelector, message: Message, arg: Any, timeout_ms: float
    ) -> MessageQueue:
        info = await self._publish_info(wire_topic, timeout_ms)
        queues = [self._user_queue(q) for q in info.queues]
        chosen = selector(queues, message, arg)
        if not isinstance(chosen, MessageQueue):
            raise ProducerError(f"the queue selector returned {chosen!r}, not a MessageQueue")
        return self._wire_queue(chosen)

    async def _publish_info(self, wire_topic: str, timeout_ms: float) -> TopicPublishInfo:
        try:
            async with asyncio.timeout(timeout_ms / 1000):
                return await self._route_table().publish_info(wire_topic)
        except TimeoutError:
            raise SendTimeoutError(
                f"no route for topic {wire_topic} within {timeout_ms:.0f} ms", []
            ) from None

    async def _send_once(
        self, prepared: PreparedMessage, queue: MessageQueue, timeout_ms: float, oneway: bool
    ) -> SendResult | None:
        """Attempts on one chosen queue (explicit queue or selector): a busy answer is resent to the same
        queue after a pause (the order of an ordered send is kept, nothing was stored); any other error
        goes straight to the caller."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        await self._publish_info(prepared.topic, timeout_ms)
        refusals = self._busy_refusals()
        while True:
            begin = loop.time()
            try:
                result = await self._send_to(prepared, queue, (deadline - begin) * 1000, oneway)
            except (RemotingError, BrokerError, _NoBrokerAddress) as exc:
                self._record_latency(queue.broker_name, (loop.time() - begin) * 1000, isolation=True)
                self._route_table().refresh_soon(prepared.topic)
                if not self._note_busy(exc, queue, refusals):
                    raise
                await self._pause_for_busy(refusals, deadline, prepared.topic, [queue.broker_name])
                continue
            self._record_latency(queue.broker_name, (loop.time() - begin) * 1000, isolation=False)
            return result

    async def _send_with_retries(
        self, prepared: PreparedMessage, timeout_ms: float, oneway: bool
    ) -> SendResult | None:
        """Java's ``sendDefaultImpl``: up to 1 + ``retry_times`` failed attempts (one for oneway), each on the
        next queue and, after a failure, preferably on another broker; all within one time budget.

        Busy answers (``flow_control``) do not use up attempts: nothing was stored, so the send goes on to
        another broker at once, or after a growing pause once every broker tried has said busy, until the
        time budget runs out.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        info = await self._publish_info(prepared.topic, timeout_ms)
        attempts = 1 if oneway else 1 + self.config.retry_times
        failures = 0
        refusals = self._busy_refusals()
        brokers: list[str] = []
        result: SendResult | None = None
        last_error: Exception | None = None
        last_broker: str | None = None
        while failures < attempts:
            queue = self._select_queue(info, last_broker)
            if refusals.must_pause_before(queue.broker_name):
                await self._pause_for_busy(refusals, deadline, prepared.topic, brokers)
            remaining_ms = (deadline - loop.time()) * 1000
            if remaining_ms <= 0:
                if isinstance(last_error, BrokerError) and is_busy_answer(last_error.code, last_error.remark):
                    raise self._busy_error(refusals, prepared.topic, brokers) from last_error
                raise SendTimeoutError(
                    f"send to topic {prepared.topic} used up its {timeout_ms:.0f} ms after "
                    f"{len(brokers)} attempt(s) on {brokers}",
                    brokers,
                ) from last_error
            brokers.append(queue.broker_name)
            last_broker = queue.broker_name
            begin = loop.time()
            try:
                result = await self._send_to(prepared, queue, remaining_ms, oneway)
            except (RemotingError, _NoBrokerAddress) as exc:
                self._record_latency(queue.broker_name, (loop.time() - begin) * 1000, isolation=True)
                failures += 1
                logger.warning(
                    "send to %s failed (%s); %s",
                    queue,
                    exc,
                    "retrying" if failures < attempts else "giving up",
                )
                last_error = exc
                self._route_table().refresh_soon(prepared.topic)
                continue
            except BrokerError as exc:
                self._record_latency(queue.broker_name, (loop.time() - begin) * 1000, isolation=True)
                last_error = exc
                if self._note_busy(exc, queue, refusals):
                    continue
                failures += 1
                if exc.code in RETRYABLE_RESPONSE_CODES:
                    logger.warning(
                        "broker refused the send to %s (%s); %s",
                        queue,
                        exc,
                        "retrying" if failures < attempts else "giving up",
                    )
                    self._route_table().refresh_soon(prepared.topic)
                    continue
                if result is not None:
                    return result
                raise
            self._record_latency(queue.broker_name, (loop.time() - begin) * 1000, isolation=False)
            if result is None:  # oneway
                return None
            if result.status is not SendStatus.SEND_OK and self.config.retry_another_broker_when_not_store_ok:
                failures += 1
                logger.info("send to %s stored with %s; retrying elsewhere", queue, result.status.value)
                continue
            return result
        if result is not None:
            return result
        code = last_error.code if isinstance(last_error, BrokerError) else None
        raise SendFailedError(
            f"send to topic {prepared.topic} failed {len(brokers)} time(s), brokers {brokers}: {last_error}",
            brokers,
            code,
        ) from last_error

    # -- busy brokers (flow control) -------------------------------------------------------------------

    def add_busy_listener(self, listener: BusyListener) -> None:
        """Call ``listener(answer)`` for every busy refusal a send meets (e.g. to slow down a pipeline)."""
        self._busy_listeners.append(listener)

    def _busy_refusals(self) -> BusyRefusals:
        config = self.config
        return BusyRefusals(Backoff(config.busy_backoff_initial_ms, config.busy_backoff_max_ms, self._rng))

    def _note_busy(self, exc: Exception, queue: MessageQueue, refusals: BusyRefusals) -> bool:
        """Record ``exc`` if it is a busy answer (and tell the listeners); False for any other failure."""
        if not isinstance(exc, BrokerError) or not is_busy_answer(exc.code, exc.remark):
            return False
        answer = BusyAnswer(queue.broker_name, exc.addr, exc.code, exc.remark)
        refusals.add(answer)
        logger.debug("broker %s is busy (%s); the send will be retried", queue.broker_name, exc)
        for listener in self._busy_listeners:
            try:
                listener(answer)
            except Exception:
                logger.exception("a busy listener failed")
        return True

    async def _pause_for_busy(
        self, refusals: BusyRefusals, deadline: float, topic: str, brokers: list[str]
    ) -> None:
        """Wait the next backoff delay, or raise :class:`BrokerBusyError` if the budget ends first."""
        delay_s = refusals.next_pause_ms() / 1000
        if asyncio.get_running_loop().time() + delay_s >= deadline:
            raise self._busy_error(refusals, topic, brokers)
        await asyncio.sleep(delay_s)

    def _busy_error(self, refusals: BusyRefusals, topic: str, brokers: list[str]) -> BrokerBusyError:
        last = refusals.last
        assert last is not None
        return BrokerBusyError(
            f"broker {last.broker_name} ({last.addr}) refused the send to topic {topic} as busy "
            f"{refusals.count} time(s) until the send timeout; the message was not stored: "
            f"code {last.code}: {last.remark or ''}".rstrip(": "),
            sorted(set(brokers) | {last.broker_name}),
            last.code,
            broker=last.broker_name,
            addr=last.addr,
            remark=last.remark,
        )

    def _select_queue(self, info: TopicPublishInfo, last_broker: str | None) -> MessageQueue:
        """Round-robin; with latency fault avoidance on, skip benched brokers (Java's ``MQFaultStrategy``)."""
        if not self.config.send_latency_fault_enable:
            return info.select(last_broker)
        queue = info.select_available(self._fault.is_available, last_broker)
        if queue is not None:
            return queue
        fallback = self._fault.pick_one_at_least()
        if fallback is not None:
            count = info.write_queue_nums(fallback)
            if count > 0:
                return MessageQueue(info.topic, fallback, info.next_queue_id(count))
            self._fault.remove(fallback)
        return info.select()

    def _record_latency(self, broker_name: str, latency_ms: float, *, isolation: bool) -> None:
        if self.config.send_latency_fault_enable:
            self._fault.update(broker_name, latency_ms, isolation)

    async def _send_to(
        self, prepared: PreparedMessage, queue: MessageQueue, timeout_ms: float, oneway: bool
    ) -> SendResult | None:
        routes = self._route_table()
        addr = routes.master_address(queue.broker_name)
        if addr is None:
            await routes.refresh(queue.topic)
            addr = routes.master_address(queue.broker_name)
            if addr is None:
                raise _NoBrokerAddress(f"the broker {queue.broker_name!r} is not in any route")
        if prepared.timer:
            # A 4.x broker would store it and deliver it at once: refuse before anything is sent.
            assert self._instance is not None
            await self._instance.require_broker_version(
                addr, features.TIMER_MESSAGES, "a timer message", error=BrokerVersionError
            )
        cmd = send_request(
            prepared,
            group=self.wire_group,
            queue=queue,
            create_topic_key=self.config.create_topic_key,
            default_topic_queue_nums=self.config.default_topic_queue_nums,
            unit_mode=self.config.unit_mode,
        )
        rpc = self._rpc_client()
        if oneway:
            await rpc.invoke_oneway(addr, cmd, timeout_ms)
            return None
        response = await rpc.invoke(addr, cmd, timeout_ms)
        return parse_send_response(response, prepared, self._user_queue(queue), addr)


async def start_trace_dispatcher(
    namesrv: str | Sequence[str],
    traced_group: str,
    *,
    owner: object,
    trace_topic: str | None = None,
    config: ProducerConfig | None = None,
) -> TraceDispatcher:
    """A running trace dispatcher whose messages an internal producer of its own sends (its settings from
    ``config``, see ``producer.trace``); shutting the dispatcher down shuts that producer down.

    ``owner`` is the traced producer or consumer; the push consumer uses this too, so that both set up
    their carrier the same way.
    """
    carrier = Producer(
        trace_group(traced_group), namesrv, config=trace_producer_config(config, owner), otel=False
    )
    await carrier.start()
    dispatcher = TraceDispatcher(carrier.send, trace_topic=trace_topic, close=carrier.shutdown)
    await dispatcher.start()
    return dispatcher
