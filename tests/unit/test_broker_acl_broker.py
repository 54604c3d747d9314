"""A real broker with ACL on, over loopback: signed clients get through, others are refused as Apache
refuses them and leave nothing behind; the ACL admin codes rewrite the file; edits to the file take effect."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from admin import Admin
from admin.errors import AdminError, RequestRefusedError
from broker import Broker
from broker.acl import AclError
from broker.testing import BrokerClient, config_for_tests, running_broker
from consumer import ConsumeStatus, PushConsumer
from nameserver import NameServer
from producer import Producer
from producer.errors import ProducerError
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.acl import AclCredentials
from rocketmq_wire.bodies.acl import GetBrokerClusterAclConfigResponseBody, PlainAccessConfig
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere
from rocketmq_wire.codes import SerializeType
from rocketmq_wire.headers.acl import CreateAccessConfigRequestHeader, GetBrokerAclConfigResponseHeader
from rocketmq_wire.headers.topic import CreateTopicRequestHeader
from rocketmq_wire.message import Message, MessageExt

ACL_FILE = """\
globalWhiteRemoteAddresses:
  - 10.10.103.*
accounts:
  - accessKey: producerKey
    secretKey: producerSecret
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - Orders=PUB
  - accessKey: adminKey1
    secretKey: adminSecret
    admin: true
"""

PRODUCER = AclCredentials("producerKey", "producerSecret")
ADMIN = AclCredentials("adminKey1", "adminSecret")
TOPIC = "Orders"


@pytest.fixture
def acl_file(tmp_path: Path) -> Path:
    path = tmp_path / "conf" / "plain_acl.yml"
    path.parent.mkdir()
    path.write_text(ACL_FILE)
    return path


@pytest.fixture
async def namesrv() -> AsyncIterator[NameServer]:
    async with NameServer("127.0.0.1", 0) as server:
        yield server


@pytest.fixture
async def broker(tmp_path: Path, acl_file: Path, namesrv: NameServer) -> AsyncIterator[Broker]:
    async with running_broker(
        tmp_path / "store",
        namesrv_addr=namesrv.address,
        acl_enable=True,
        acl_file=str(acl_file),
        acl_watch_interval_ms=50,
    ) as running:
        yield running


async def signed(
    client: BrokerClient, code: int, header: object = None, body: bytes = b"", who: AclCredentials = ADMIN
) -> RemotingCommand:
    command = RemotingCommand.request(code, header, body)  # type: ignore[arg-type]
    who.sign(command)
    return await client.client.invoke(client.address, command, client.timeout_ms)


def topic_header(topic: str) -> CreateTopicRequestHeader:
    return CreateTopicRequestHeader(
        topic=topic,
        default_topic="TBW102",
        read_queue_nums=1,
        write_queue_nums=1,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )


async def create_topic(broker: Broker, topic: str = TOPIC) -> None:
    header = topic_header(topic)
    async with BrokerClient(broker.address) as client:
        answer = await signed(client, RequestCode.UPDATE_AND_CREATE_TOPIC, header)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def stored(broker: Broker, topic: str = TOPIC) -> int:
    return broker.store.get_max_offset(topic, 0)


async def test_a_signed_producer_sends_and_a_wrong_secret_is_refused(
    broker: Broker, namesrv: NameServer
) -> None:
    await create_topic(broker)
    async with Producer(
        "AclPg", namesrv.address, access_key="producerKey", secret_key="producerSecret"
    ) as good:
        result = await good.send(Message(TOPIC, b"allowed"))
    assert result.message_queue.topic == TOPIC
    assert stored(broker) == 1
    puts = broker.stats.put_messages_total

    async with Producer(
        "AclPg",
        namesrv.address,
        access_key="producerKey",
        secret_key="wrongSecret",
        retry_times=0,
        send_timeout_ms=2000,
    ) as bad:
        with pytest.raises(ProducerError, match="Check signature failed for accessKey=producerKey"):
            await bad.send(Message(TOPIC, b"refused"))
    assert stored(broker) == 1
    assert broker.stats.put_messages_total == puts


async def test_refusals_carry_apaches_code_and_remark(broker: Broker) -> None:
    await create_topic(broker)
    async with BrokerClient(broker.address) as client:
        unsigned = await client.send(TOPIC, b"x")
        batch = await client.send_batch(TOPIC, [(b"a", ""), (b"b", "")])
        header = topic_header("Other")
        anonymous = await client.request(RequestCode.UPDATE_AND_CREATE_TOPIC, header)
        not_admin = await signed(client, RequestCode.UPDATE_AND_CREATE_TOPIC, header, who=PRODUCER)
    assert unsigned.code == batch.code == ResponseCode.SYSTEM_ERROR
    assert stored(broker) == 0
    assert anonymous.code == ResponseCode.SYSTEM_ERROR
    assert anonymous.remark == (
        "org.apache.rocketmq.acl.common.AclException: No accessKey is configured, "
        "org.apache.rocketmq.acl.plain.PlainPermissionManager.validate(PlainPermissionManager.java:664)"
    )
    assert not_admin.code == ResponseCode.SYSTEM_ERROR
    assert not_admin.remark is not None
    assert "Need admin permission for request code=17, but accessKey=producerKey is not" in not_admin.remark
    assert not broker.topic_exists("Other")


async def test_a_refused_oneway_is_dropped_and_not_stored(broker: Broker, namesrv: NameServer) -> None:
    await create_topic(broker)
    async with Producer(
        "AclPg", namesrv.address, access_key="producerKey", secret_key="wrongSecret", retry_times=0
    ) as bad:
        await bad.send_oneway(Message(TOPIC, b"refused"))
    async with Producer(
        "AclPg", namesrv.address, access_key="producerKey", secret_key="producerSecret"
    ) as good:
        await good.send_oneway(Message(TOPIC, b"allowed"))
        for _ in range(100):  # the allowed one arriving shows the refused one had its chance to be stored
            if stored(broker) >= 1:
                break
            await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    assert stored(broker) == 1


async def test_topic_permission_is_enforced_for_the_producer(broker: Broker, namesrv: NameServer) -> None:
    await create_topic(broker, "Audit")
    async with Producer(
        "AclPg",
        namesrv.address,
        access_key="producerKey",
        secret_key="producerSecret",
        retry_times=0,
        send_timeout_ms=2000,
    ) as producer:
        with pytest.raises(ProducerError, match="No default permission for topic:Audit"):
            await producer.send(Message("Audit", b"refused"))
    assert stored(broker, "Audit") == 0


async def test_admin_codes_round_trip_and_rewrite_the_file(
    broker: Broker, namesrv: NameServer, acl_file: Path
) -> None:
    await create_topic(broker, "Audit")
    async with Admin(namesrv.address, access_key="adminKey1", secret_key="adminSecret") as admin:
        before = await admin.acl_version(broker.address)
        assert before.broker_addr == broker.address
        assert set(before.files) == {str(acl_file.absolute())}

        await admin.update_acl_account(
            broker.address,
            PlainAccessConfig(
                access_key="auditorKey",
                secret_key="auditorSecret",
                default_topic_perm="DENY",
                default_group_perm="SUB",
                topic_perms=["Audit=PUB|SUB"],
            ),
        )
        written = yaml.safe_load(acl_file.read_text())
        account = next(a for a in written["accounts"] if a["accessKey"] == "auditorKey")
        assert account["topicPerms"] == ["Audit=PUB|SUB"]
        assert written["dataVersion"][0]["counter"] == 1

        async with Producer(
            "AuditPg", namesrv.address, access_key="auditorKey", secret_key="auditorSecret"
        ) as p:
            await p.send(Message("Audit", b"now allowed"))
        assert stored(broker, "Audit") == 1

        file_name = await admin.update_global_white_addrs(broker.address, ["10.1.1.*", "192.168.9.1-2"])
        assert file_name == str(acl_file.absolute())
        assert yaml.safe_load(acl_file.read_text())["globalWhiteRemoteAddresses"] == [
            "10.1.1.*",
            "192.168.9.1-2",
        ]

        with pytest.raises(AdminError, match="separates entries with commas"):
            await admin.update_global_white_addrs(broker.address, ["192.168.9.{1,2}"])

        config = await admin.acl_config(broker.address)
        assert config.global_white_addrs == ["10.1.1.*", "192.168.9.1-2"]
        assert {a.access_key for a in config.plain_access_configs or []} == {
            "producerKey",
            "adminKey1",
            "auditorKey",
        }

        await admin.delete_acl_account(broker.address, "auditorKey")
        assert "auditorKey" not in acl_file.read_text()
        after = await admin.acl_version(broker.address)
        assert after.version.counter == 3

        with pytest.raises(RequestRefusedError) as refused:
            await admin.delete_acl_account(broker.address, "auditorKey")
        assert refused.value.code == ResponseCode.DELETE_ACL_CONFIG_FAILED
        assert "The accesskey[auditorKey] corresponding to accessConfig has been deleted failed." in str(
            refused.value
        )

        with pytest.raises(RequestRefusedError) as bad_perm:
            await admin.update_acl_account(
                broker.address,
                PlainAccessConfig(access_key="someoneKey", secret_key="someoneSecret", topic_perms=["x=RW"]),
            )
        assert bad_perm.value.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        assert "someoneKey" not in acl_file.read_text()

    async with Producer(
        "AuditPg",
        namesrv.address,
        access_key="auditorKey",
        secret_key="auditorSecret",
        retry_times=0,
        send_timeout_ms=2000,
    ) as gone:
        with pytest.raises(ProducerError, match="No acl config for auditorKey"):
            await gone.send(Message("Audit", b"deleted account"))
    assert stored(broker, "Audit") == 1


async def test_acl_admin_needs_an_admin_account(broker: Broker, acl_file: Path) -> None:
    header = CreateAccessConfigRequestHeader(access_key="sneakyKey", secret_key="sneakySecret", admin=True)
    async with BrokerClient(broker.address) as client:
        answer = await signed(client, RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header, who=PRODUCER)
        version = await signed(client, RequestCode.GET_BROKER_CLUSTER_ACL_INFO, who=PRODUCER)
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert "sneakyKey" not in acl_file.read_text()
    assert version.code == ResponseCode.SUCCESS
    header_back = version.read_header(GetBrokerAclConfigResponseHeader)
    assert header_back.cluster_name == broker.config.broker_cluster_name


async def test_the_file_is_reloaded_when_it_changes(
    broker: Broker, namesrv: NameServer, acl_file: Path
) -> None:
    await create_topic(broker, "Late")
    acl_file.write_text(
        ACL_FILE + "  - accessKey: lateComer\n    secretKey: lateSecret\n    topicPerms: [Late=PUB]\n"
    )
    assert broker.acl is not None
    for _ in range(100):
        if "lateComer" in broker.acl.rules.accounts:
            break
        await asyncio.sleep(0.05)
    assert "lateComer" in broker.acl.rules.accounts
    async with Producer(
        "LatePg", namesrv.address, access_key="lateComer", secret_key="lateSecret"
    ) as producer:
        await producer.send(Message("Late", b"after reload"))
    assert stored(broker, "Late") == 1

    acl_file.write_text("accounts: [\n")  # a broken edit keeps the rules in force
    await asyncio.sleep(0.3)
    assert "lateComer" in broker.acl.rules.accounts


async def test_a_broker_with_a_bad_acl_file_does_not_start(tmp_path: Path) -> None:
    bad = tmp_path / "plain_acl.yml"
    bad.write_text("accounts:\n  - accessKey: short\n    secretKey: x\n")
    broker = Broker(config_for_tests(tmp_path / "store", acl_enable=True, acl_file=str(bad)))
    with pytest.raises(AclError, match="length should longer than 6"):
        await broker.start()
    await broker.close()


async def test_with_acl_off_nothing_is_checked_and_acl_admin_says_so(tmp_path: Path) -> None:
    async with running_broker(tmp_path / "store") as broker:
        assert broker.acl is None
        async with BrokerClient(broker.address) as client:
            created = await client.create_topic("Free")
            header = CreateAccessConfigRequestHeader(access_key="someoneKey", secret_key="someoneSecret")
            answer = await client.request(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, header)
            config = await client.request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        assert created.code == ResponseCode.SUCCESS
        assert answer.code == ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED
        assert answer.remark == "ACL is not enabled on this broker (aclEnable=false)"
        assert config.code == ResponseCode.SYSTEM_ERROR


def test_acl_config_body_round_trips() -> None:
    body = GetBrokerClusterAclConfigResponseBody(
        global_white_addrs=["10.*.*.*"],
        plain_access_configs=[
            PlainAccessConfig(access_key="RocketMQ", secret_key="12345678", topic_perms=["a=PUB"])
        ],
    )
    encoded = body.to_json()
    assert encoded == (
        b'{"globalWhiteAddrs":["10.*.*.*"],"plainAccessConfigs":[{"accessKey":"RocketMQ","admin":false,'
        b'"secretKey":"12345678","topicPerms":["a=PUB"]}]}'
    )
    assert GetBrokerClusterAclConfigResponseBody.from_json(encoded) == body


def test_create_account_header_writes_javas_fields_in_order() -> None:
    header = CreateAccessConfigRequestHeader(
        access_key="RocketMQ", secret_key="12345678", admin=False, topic_perms="a=PUB,b=SUB"
    )
    assert header.ext_items() == [
        ("accessKey", "RocketMQ"),
        ("secretKey", "12345678"),
        ("admin", "false"),
        ("topicPerms", "a=PUB,b=SUB"),
    ]


async def test_binary_headers_and_batches_are_checked_too(broker: Broker, namesrv: NameServer) -> None:
    await create_topic(broker)
    await create_topic(broker, "Audit")
    async with Producer(
        "AclPg",
        namesrv.address,
        access_key="producerKey",
        secret_key="producerSecret",
        serialize_type=SerializeType.ROCKETMQ,
        retry_times=0,
        send_timeout_ms=2000,
    ) as producer:
        await producer.send(Message(TOPIC, b"one"))
        await producer.send_batch([Message(TOPIC, b"two"), Message(TOPIC, b"three")])
        with pytest.raises(ProducerError, match="No default permission for topic:Audit"):
            await producer.send_batch([Message("Audit", b"a"), Message("Audit", b"b")])
    assert stored(broker) == 3
    assert stored(broker, "Audit") == 0


async def test_a_signed_push_consumer_consumes(broker: Broker, namesrv: NameServer, acl_file: Path) -> None:
    acl_file.write_text(
        ACL_FILE
        + "  - accessKey: consumerKey\n    secretKey: consumerSecret\n    defaultTopicPerm: DENY\n"
        + "    defaultGroupPerm: DENY\n    topicPerms: [Orders=SUB]\n    groupPerms: [AclCg=SUB]\n"
    )
    assert broker.acl is not None
    broker.acl.load()
    await create_topic(broker)
    async with Producer("AclPg", namesrv.address, access_key="producerKey", secret_key="producerSecret") as p:
        await p.send(Message(TOPIC, b"for the consumer"))
    seen: list[bytes] = []

    async def listener(messages: list[MessageExt], context: object) -> ConsumeStatus:
        seen.extend(m.body for m in messages)
        return ConsumeStatus.CONSUME_SUCCESS

    consumer = PushConsumer(
        "AclCg",
        namesrv.address,
        consume_from=ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        access_key="consumerKey",
        secret_key="consumerSecret",
    )
    consumer.subscribe(TOPIC)
    consumer.register_listener(listener)
    await consumer.start()
    try:
        for _ in range(200):
            if seen:
                break
            await asyncio.sleep(0.05)
    finally:
        await consumer.shutdown()
    assert seen == [b"for the consumer"]
    assert broker.consumer_offsets.query_offset("AclCg", TOPIC, 0) == 1
