"""The client core's settings and trace dispatcher (``client``).

Producers, consumers and the admin used to describe their requests to the shared core with a
``ProducerConfig`` built for the purpose; each now derives a ``ClientSettings``. Given the same connection
options they must stamp and sign requests identically, as they did. The trace dispatcher takes a send
function instead of building a producer, so it can be watched without a cluster.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

from admin import AdminError
from admin.rpc import admin_settings
from client import ClientError, ClientRpc, ClientSettings, TraceDispatcher
from client import errors as client_errors
from consumer import ConsumerConfig, ConsumerError
from producer import DuplicateGroupError, ProducerConfig, ProducerError, ProducerStateError
from rocketmq_wire.codes import RequestCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.message import Message
from rocketmq_wire.trace import TRACE_TOPIC, TraceBean, TraceContext, TraceType
from rocketmq_wire.transport import RemotingClient

#: The settings every role has, given the same values.
SHARED: dict[str, Any] = {
    "access_key": "AK",
    "secret_key": "SK",
    "security_token": "token",
    "serialize_type": SerializeType.ROCKETMQ,
}
TLS = ssl.create_default_context()


def _rpc_part(settings: ClientSettings) -> tuple[object, ...]:
    return (
        settings.access_key,
        settings.secret_key,
        settings.security_token,
        settings.ssl,
        settings.serialize_type,
        settings.version,
    )


def _all_three(timeout_ms: float = 3000) -> list[ClientSettings]:
    return [
        ProducerConfig(ssl=TLS, namesrv_timeout_ms=timeout_ms, **SHARED).client_settings(),
        ConsumerConfig(ssl=TLS, request_timeout_ms=timeout_ms, **SHARED).client_settings(),
        admin_settings(timeout_ms, ssl=TLS, **SHARED),
    ]


def test_producer_consumer_and_admin_agree_on_rpc_settings() -> None:
    producer, consumer, admin = _all_three(timeout_ms=2500)
    assert _rpc_part(producer) == _rpc_part(consumer) == _rpc_part(admin)
    assert producer.namesrv_timeout_ms == consumer.namesrv_timeout_ms == admin.namesrv_timeout_ms == 2500
    assert producer.credentials() == consumer.credentials() == admin.credentials() is not None


def test_defaults_agree_and_are_javas() -> None:
    producer = ProducerConfig().client_settings()
    consumer = ConsumerConfig().client_settings()
    admin = admin_settings(3000)
    assert _rpc_part(producer) == _rpc_part(consumer) == _rpc_part(admin) == _rpc_part(ClientSettings())
    for settings in (producer, consumer, admin):
        assert settings.credentials() is None
        assert settings.heartbeat_interval_ms == settings.poll_namesrv_interval_ms == 30_000
        assert settings.namesrv_timeout_ms == 3000


def test_role_specific_parts() -> None:
    producer = ProducerConfig(send_timeout_ms=7000, instance_name="p", client_ip="10.0.0.1").client_settings()
    assert producer.request_timeout_ms == 7000
    assert (producer.instance_name, producer.client_ip) == ("p", "10.0.0.1")
    consumer = ConsumerConfig(request_timeout_ms=1500, heartbeat_interval_ms=5000).client_settings()
    assert (consumer.request_timeout_ms, consumer.heartbeat_interval_ms) == (1500, 5000)


def test_credentials_go_together() -> None:
    with pytest.raises(ValueError, match="go together"):
        ClientSettings(access_key="AK")


async def test_every_role_stamps_and_signs_a_request_alike() -> None:
    async with RemotingClient() as remoting:
        stamped = []
        for settings in _all_three():
            request = RemotingCommand.request(RequestCode.GET_ROUTEINFO_BY_TOPIC)
            cmd = ClientRpc(remoting, settings).prepare(request)
            stamped.append((cmd.serialize_type, cmd.version, cmd.fields()))
    assert stamped[0] == stamped[1] == stamped[2]
    assert "Signature" in stamped[0][2]


def test_role_errors_are_client_errors() -> None:
    for error in (ProducerError, ConsumerError, AdminError, client_errors.NameServerError):
        assert issubclass(error, ClientError)
    # the producer's refusal of a second group is still a ProducerStateError, and the core's refusal
    assert issubclass(DuplicateGroupError, ProducerStateError)
    assert issubclass(DuplicateGroupError, client_errors.DuplicateGroupError)


def _pub(msg_id: str) -> TraceContext:
    bean = TraceBean(topic="T", msg_id=msg_id)
    return TraceContext(TraceType.PUB, timestamp=1, group_name="G", beans=[bean])


async def test_trace_dispatcher_hands_packed_messages_to_its_send_function() -> None:
    sent: list[Message] = []
    closed = asyncio.Event()

    async def send(message: Message) -> None:
        sent.append(message)

    async def close() -> None:
        closed.set()

    tracer = TraceDispatcher(send, close=close)
    await tracer.start()
    assert tracer.append(_pub("id-1")) and tracer.append(_pub("id-2"))
    await tracer.flush()
    await tracer.shutdown()
    assert closed.is_set()
    assert tracer.sent_messages == len(sent) >= 1
    assert {m.topic for m in sent} == {TRACE_TOPIC}
    body = b"".join(m.body for m in sent).decode()
    assert "id-1" in body and "id-2" in body


async def test_trace_dispatcher_counts_failed_sends_without_raising() -> None:
    async def refuse(message: Message) -> None:
        raise ProducerError("refused")

    tracer = TraceDispatcher(refuse, trace_topic="MyTraces")
    await tracer.start()
    tracer.append(_pub("id-3"))
    await tracer.flush()
    await tracer.shutdown()
    assert tracer.failed_messages == 1 and tracer.sent_messages == 0
