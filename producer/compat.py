"""The producer API of Apache's official Python client (``rocketmq-client-python``), on this producer.

A script written for that client keeps working after changing only its import::

    from producer.compat import Producer, Message          # was: from rocketmq.client import ...

Names, arguments and return values follow ``rocketmq/client.py``: ``SendResult(status, msg_id, offset)``
with ``msg_id`` the producer-made unique id and ``offset`` the queue offset, integer ``SendStatus`` and
``TransactionStatus``, callbacks that receive a ``ReceivedMessage``, failures raised as the client's
exception classes. Setters are taken into account at ``start()``, as the C++ core does. Two differences:
name-server domains (HTTP address lookup) are not supported, and the ``channel`` of the session
credentials is accepted but not sent (Java brokers ignore it).
"""

from __future__ import annotations

import enum
from collections import namedtuple
from collections.abc import Callable
from types import TracebackType
from typing import Any

from producer.blocking import BlockingProducer, BlockingTransactionProducer
from producer.config import ProducerConfig
from producer.errors import ProducerError
from producer.result import LocalTransactionState
from producer.result import SendResult as NativeSendResult
from producer.result import SendStatus as NativeSendStatus
from rocketmq_wire.message import Message as WireMessage
from rocketmq_wire.message import MessageExt, encode_properties
from rocketmq_wire.message import const as props

__all__ = [
    "Message",
    "MessageProperty",
    "Producer",
    "ProducerException",
    "ProducerSendOnewayFailed",
    "ProducerSendOrderlyFailed",
    "ProducerSendSyncFailed",
    "ProducerStartFailed",
    "ReceivedMessage",
    "RocketMQException",
    "SendResult",
    "SendStatus",
    "TransactionMQProducer",
    "TransactionStatus",
]

SendResult = namedtuple("SendResult", ["status", "msg_id", "offset"])


class SendStatus(enum.IntEnum):
    OK = 0
    FLUSH_DISK_TIMEOUT = 1
    FLUSH_SLAVE_TIMEOUT = 2
    SLAVE_NOT_AVAILABLE = 3


class TransactionStatus(enum.IntEnum):
    COMMIT = 0
    ROLLBACK = 1
    UNKNOWN = 2


class MessageProperty(enum.Enum):
    """Property names, as the official client's ``rocketmq.consts.MessageProperty``."""

    TRACE_SWITCH = props.TRACE_ON
    MSG_REGION = props.MSG_REGION
    KEYS = props.KEYS
    TAGS = props.TAGS
    WAIT_STORE_MSG_OK = props.WAIT
    DELAY_TIME_LEVEL = props.DELAY
    RETRY_TOPIC = props.RETRY_TOPIC
    REAL_TOPIC = props.REAL_TOPIC
    REAL_QUEUE_ID = props.REAL_QID
    TRANSACTION_PREPARED = props.TRAN_MSG
    PRODUCER_GROUP = props.PGROUP
    MIN_OFFSET = props.MIN_OFFSET
    MAX_OFFSET = props.MAX_OFFSET
    BUYER_ID = props.BUYER_ID
    ORIGIN_MESSAGE_ID = props.ORIGIN_MESSAGE_ID
    TRANSFER_FLAG = props.TRANSFER_FLAG
    CORRECTION_FLAG = props.CORRECTION_FLAG
    MQ2_FLAG = props.MQ2_FLAG
    RECONSUME_TIME = props.RECONSUME_TIME
    UNIQ_CLIENT_MESSAGE_ID_KEYIDX = props.UNIQ_KEY
    MAX_RECONSUME_TIMES = props.MAX_RECONSUME_TIMES
    CONSUME_START_TIMESTAMP = props.CONSUME_START_TIME


class RocketMQException(Exception):
    """Base of the official client's exceptions."""


class ProducerException(RocketMQException):
    pass


class ProducerStartFailed(ProducerException):
    pass


class ProducerSendSyncFailed(ProducerException):
    pass


class ProducerSendOnewayFailed(ProducerException):
    pass


class ProducerSendOrderlyFailed(ProducerException):
    pass


_STATUS = {
    NativeSendStatus.SEND_OK: SendStatus.OK,
    NativeSendStatus.FLUSH_DISK_TIMEOUT: SendStatus.FLUSH_DISK_TIMEOUT,
    NativeSendStatus.FLUSH_SLAVE_TIMEOUT: SendStatus.FLUSH_SLAVE_TIMEOUT,
    NativeSendStatus.SLAVE_NOT_AVAILABLE: SendStatus.SLAVE_NOT_AVAILABLE,
}
_TO_STATE = {
    TransactionStatus.COMMIT: LocalTransactionState.COMMIT_MESSAGE,
    TransactionStatus.ROLLBACK: LocalTransactionState.ROLLBACK_MESSAGE,
    TransactionStatus.UNKNOWN: LocalTransactionState.UNKNOWN,
}


def _text(value: str | bytes) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else value


def _result(native: NativeSendResult) -> SendResult:
    return SendResult(_STATUS[native.status], native.msg_id, native.queue_offset)


class Message:
    """A message to send: ``Message(topic)`` and the ``set_*`` methods of the official client."""

    def __init__(self, topic: str | bytes) -> None:
        self.topic = _text(topic)
        self._body = b""
        self._tags: str | None = None
        self._keys: list[str] = []
        self._properties: dict[str, str] = {}
        self._delay = 0

    def set_keys(self, keys: str | bytes) -> None:
        """One key, or several separated by spaces (they travel space separated anyway)."""
        self._keys = [key for key in _text(keys).split(props.KEY_SEPARATOR) if key]

    def set_tags(self, tags: str | bytes) -> None:
        self._tags = _text(tags)

    def set_body(self, body: str | bytes) -> None:
        self._body = body.encode("utf-8") if isinstance(body, str) else bytes(body)

    def set_property(self, key: str | bytes, value: str | bytes) -> None:
        self._properties[_text(key)] = _text(value)

    def set_delay_time_level(self, delay_time_level: int) -> None:
        self._delay = int(delay_time_level)

    def to_message(self) -> WireMessage:
        """The toolkit's message for these settings."""
        try:
            return WireMessage(
                self.topic,
                self._body,
                tags=self._tags,
                keys=list(self._keys),
                properties=dict(self._properties),
                delay_level=self._delay,
            )
        except ValueError as exc:
            raise ProducerException(str(exc)) from exc


class ReceivedMessage:
    """A stored message as the official client hands it to callbacks (byte strings where it gives bytes)."""

    def __init__(self, message: MessageExt, *, unique_id: str | None = None) -> None:
        self._message = message
        self._unique_id = unique_id

    @property
    def topic(self) -> str:
        return self._message.topic

    @property
    def tags(self) -> bytes | None:
        tags = self._message.tags
        return None if tags is None else tags.encode("utf-8")

    @property
    def keys(self) -> bytes | None:
        keys = self._message.get_property(props.KEYS)
        return None if keys is None else keys.encode("utf-8")

    @property
    def body(self) -> bytes:
        return self._message.body

    @property
    def id(self) -> str:
        return self._unique_id or self._message.client_msg_id

    @property
    def delay_time_level(self) -> int:
        return self._message.delay_level

    @property
    def queue_id(self) -> int:
        return self._message.queue_id

    @property
    def reconsume_times(self) -> int:
        return self._message.reconsume_times

    @property
    def store_size(self) -> int:
        return self._message.store_size

    @property
    def born_timestamp(self) -> int:
        return self._message.born_timestamp

    @property
    def store_timestamp(self) -> int:
        return self._message.store_timestamp

    @property
    def queue_offset(self) -> int:
        return self._message.queue_offset

    @property
    def commit_log_offset(self) -> int:
        return self._message.commit_log_offset

    @property
    def prepared_transaction_offset(self) -> int:
        return self._message.prepared_transaction_offset

    def get_property(self, prop: str | MessageProperty) -> bytes | None:
        name = prop.value if isinstance(prop, MessageProperty) else prop
        value = self._message.get_property(name)
        return None if value is None else value.encode("utf-8")

    def __getitem__(self, key: str | MessageProperty) -> bytes | None:
        return self.get_property(key)

    def __str__(self) -> str:
        return self.body.decode("utf-8")

    def __bytes__(self) -> bytes:
        return self.body

    def __repr__(self) -> str:
        return f"<ReceivedMessage topic={self.topic!r} id={self.id!r} body={self.body!r}>"


def _received(message: WireMessage, unique_id: str) -> ReceivedMessage:
    """What a local-transaction callback sees of a message it is about to commit or roll back."""
    properties = message.build_properties({props.UNIQ_KEY: unique_id})
    ext = MessageExt(message.topic, message.body, message.flag, encode_properties(properties))
    return ReceivedMessage(ext, unique_id=unique_id)


class Producer:
    """``rocketmq.client.Producer``: configure with setters, ``start()``, send, ``shutdown()``."""

    def __init__(
        self,
        group_id: str | bytes,
        orderly: bool = False,
        timeout: int | None = None,
        compress_level: int | None = None,
        max_message_size: int | None = None,
    ) -> None:
        self._group = _text(group_id)
        self._orderly = orderly
        self._namesrv: str | None = None
        self._settings: dict[str, Any] = {}
        self._credentials: tuple[str, str] | None = None
        self._native: BlockingProducer | None = None
        if timeout is not None:
            self.set_timeout(timeout)
        if compress_level is not None:
            self.set_compress_level(compress_level)
        if max_message_size is not None:
            self.set_max_message_size(max_message_size)

    def __enter__(self) -> Producer:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.shutdown()

    # -- settings ----------------------------------------------------------------------------------------

    def set_group(self, group_name: str | bytes) -> None:
        self._group = _text(group_name)

    def set_name_server_address(self, addr: str | bytes) -> None:
        self._namesrv = _text(addr)

    set_namesrv_addr = set_name_server_address  # the 1.x name of the same setter

    def set_name_server_domain(self, domain: str | bytes) -> None:
        raise ProducerException(
            "name server domains (HTTP address lookup) are not supported; set the address"
        )

    set_namesrv_domain = set_name_server_domain

    def set_session_credentials(
        self, access_key: str | bytes, access_secret: str | bytes, channel: str | bytes
    ) -> None:
        self._credentials = (_text(access_key), _text(access_secret))

    def set_timeout(self, timeout: int) -> None:
        self._settings["send_timeout_ms"] = int(timeout)

    def set_compress_level(self, level: int) -> None:
        self._settings["compress_level"] = int(level)

    def set_max_message_size(self, max_size: int) -> None:
        self._settings["max_message_size"] = int(max_size)

    def set_instance_name(self, name: str | bytes) -> None:
        self._settings["instance_name"] = _text(name)

    # -- lifecycle ---------------------------------------------------------------------------------------

    def _config(self) -> ProducerConfig:
        settings = dict(self._settings)
        if self._credentials is not None:
            settings["access_key"], settings["secret_key"] = self._credentials
        return ProducerConfig(**settings)

    def _build(self, config: ProducerConfig) -> BlockingProducer:
        assert self._namesrv is not None
        return BlockingProducer(self._group, self._namesrv, config=config)

    def start(self) -> None:
        if self._native is not None:
            return
        if not self._namesrv:
            raise ProducerStartFailed("no name server address; call set_name_server_address first")
        try:
            native = self._build(self._config())
            native.start()
        except (ProducerError, ValueError) as exc:
            raise ProducerStartFailed(str(exc)) from exc
        self._native = native

    def shutdown(self) -> None:
        native, self._native = self._native, None
        if native is not None:
            native.shutdown()

    def _running(self, failure: type[ProducerException]) -> BlockingProducer:
        if self._native is None:
            raise failure("the producer is not started")
        return self._native

    # -- sending -----------------------------------------------------------------------------------------

    def send_sync(self, msg: Message) -> SendResult:
        native = self._running(ProducerSendSyncFailed)
        try:
            return _result(native.send(msg.to_message()))
        except ProducerError as exc:
            raise ProducerSendSyncFailed(str(exc)) from exc

    def send_oneway(self, msg: Message) -> None:
        native = self._running(ProducerSendOnewayFailed)
        try:
            native.send_oneway(msg.to_message())
        except ProducerError as exc:
            raise ProducerSendOnewayFailed(str(exc)) from exc

    def send_orderly_with_sharding_key(self, msg: Message, sharding_key: str | bytes) -> SendResult:
        """The queue is picked by the key's Java hash: Java producers put the same key on the same queue."""
        native = self._running(ProducerSendOrderlyFailed)
        try:
            return _result(native.send(msg.to_message(), sharding_key=_text(sharding_key)))
        except ProducerError as exc:
            raise ProducerSendOrderlyFailed(str(exc)) from exc


class TransactionMQProducer(Producer):
    """``rocketmq.client.TransactionMQProducer``; ``checker_callback(ReceivedMessage)`` answers checks."""

    def __init__(
        self,
        group_id: str | bytes,
        checker_callback: Callable[[ReceivedMessage], TransactionStatus],
        user_args: Any = None,
        timeout: int | None = None,
        compress_level: int | None = None,
        max_message_size: int | None = None,
    ) -> None:
        super().__init__(group_id, False, timeout, compress_level, max_message_size)
        self._checker_callback = checker_callback
        self._user_args = user_args

    def _check(self, message: MessageExt) -> LocalTransactionState:
        return _TO_STATE[TransactionStatus(self._checker_callback(ReceivedMessage(message)))]

    def _build(self, config: ProducerConfig) -> BlockingProducer:
        assert self._namesrv is not None
        return BlockingTransactionProducer(self._group, self._namesrv, config=config, checker=self._check)

    def send_message_in_transaction(
        self,
        message: Message,
        local_execute: Callable[[ReceivedMessage, Any], TransactionStatus],
        user_args: Any = None,
    ) -> SendResult:
        native = self._running(ProducerSendSyncFailed)
        assert isinstance(native, BlockingTransactionProducer)

        def execute(wire: WireMessage, transaction_id: str, arg: Any) -> LocalTransactionState:
            return _TO_STATE[TransactionStatus(local_execute(_received(wire, transaction_id), arg))]

        try:
            result = native.send_in_transaction(message.to_message(), user_args, executor=execute)
        except ProducerError as exc:
            raise ProducerSendSyncFailed(str(exc)) from exc
        return SendResult(_STATUS[result.status], result.msg_id, result.queue_offset)
