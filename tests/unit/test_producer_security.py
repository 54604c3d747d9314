"""ACL signing, namespaces and TLS."""

from __future__ import annotations

import shutil
import ssl
import subprocess
from pathlib import Path

import pytest

from producer import Message, ProducerConfig
from rocketmq_wire import acl
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.topics import without_namespace, wrap_namespace
from tests.unit.producer_fakes import Cluster

TOPIC = "SecureTopic"


async def test_every_request_is_signed_and_the_signature_verifies() -> None:
    async with Cluster(secret_key="12345678") as cluster:
        cluster.route(TOPIC)
        broker = cluster.brokers["broker-a"]
        async with cluster.producer(access_key="rocketmq2", secret_key="12345678") as producer:
            await producer.send(Message(TOPIC, b"signed", tags="T"))
            await broker.wait_for(RequestCode.HEART_BEAT)
        requests = [*cluster.namesrvs[0].received, *broker.received]
    assert {r.cmd.code for r in requests} >= {
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.HEART_BEAT,
        RequestCode.UNREGISTER_CLIENT,
    }
    for request in requests:
        assert request.fields["AccessKey"] == "rocketmq2"
        assert acl.verify(request.cmd, "12345678"), request.cmd
        assert not acl.verify(request.cmd, "wrong-secret")
    assert broker.bad_signatures == 0


async def test_unsigned_requests_carry_no_access_key() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            await producer.send(Message(TOPIC, b"plain"))
        (send,) = cluster.brokers["broker-a"].sends()
    assert "AccessKey" not in send.fields
    assert "Signature" not in send.fields


def test_credentials_go_in_pairs() -> None:
    with pytest.raises(ValueError):
        ProducerConfig(access_key="only-the-key")


def test_namespace_wrapping_follows_java() -> None:
    assert wrap_namespace("ns", "Topic") == "ns%Topic"
    assert wrap_namespace("ns", "ns%Topic") == "ns%Topic"
    assert wrap_namespace("ns", "%RETRY%Group") == "%RETRY%ns%Group"
    assert wrap_namespace("ns", "%DLQ%Group") == "%DLQ%ns%Group"
    assert wrap_namespace("ns", "TBW102") == "TBW102"
    assert wrap_namespace("ns", "rmq_sys_x") == "rmq_sys_x"
    assert wrap_namespace(None, "Topic") == "Topic"
    assert without_namespace("ns%Topic", "ns") == "Topic"
    assert without_namespace("%RETRY%ns%Group", "ns") == "%RETRY%Group"
    assert without_namespace("other%Topic", "ns") == "other%Topic"
    assert without_namespace("ns%Topic", None) == "ns%Topic"


async def test_namespace_wraps_topic_and_group_on_the_wire_and_not_in_results() -> None:
    async with Cluster() as cluster:
        cluster.route("prod%Orders")
        broker = cluster.brokers["broker-a"]
        async with cluster.producer("Billing", namespace="prod") as producer:
            queues = await producer.fetch_publish_queues("Orders")
            result = await producer.send(Message("Orders", b"n"))
            keyed = await producer.send(Message("Orders", b"k"), sharding_key="customer-1")
            await broker.wait_for(RequestCode.HEART_BEAT)
        first = broker.sends()[0]
        asked = cluster.namesrvs[0].of(RequestCode.GET_ROUTEINFO_BY_TOPIC)[0].fields["topic"]
    assert asked == "prod%Orders"
    assert (first.fields["a"], first.fields["b"]) == ("prod%Billing", "prod%Orders")
    assert result.message_queue.topic == "Orders"
    assert keyed.message_queue.topic == "Orders"
    assert {q.topic for q in queues} == {"Orders"}
    assert [p.group_name for p in broker.heartbeats[0].producer_data_set] == [
        "CLIENT_INNER_PRODUCER",
        "prod%Billing",
    ]


@pytest.fixture(scope="module")
def tls_contexts(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command")
    folder: Path = tmp_path_factory.mktemp("producer-tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
            "-addext", "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert, key)
    client = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(cert))
    return server, client


async def test_tls_to_namesrv_and_broker(tls_contexts: tuple[ssl.SSLContext, ssl.SSLContext]) -> None:
    server_ctx, client_ctx = tls_contexts
    async with Cluster(ssl=server_ctx) as cluster:
        cluster.route(TOPIC)
        async with cluster.producer(ssl=client_ctx) as producer:
            result = await producer.send(Message(TOPIC, b"over tls"))
            (send,) = cluster.brokers["broker-a"].sends()
            assert send.conn.get_extra_info("sslcontext") is server_ctx
    assert result.status.value == "SEND_OK"
