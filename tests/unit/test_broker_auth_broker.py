"""A real broker with ACL 2.0 on, over loopback: the check wraps every handler (async and inline), refusals
answer NO_PERMISSION with Apache's remark, admin codes run through the broker's table, users survive a
restart, and with ``aclEnable`` on as well only ACL 2.0 decides (Apache 5.3+ has no plain-ACL check)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from broker import Broker
from broker.config import AUTH_CONFIG_KEYS, BrokerConfig
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.acl import AclCredentials
from rocketmq_wire.bodies.auth import UserInfo
from rocketmq_wire.headers.auth import CreateUserRequestHeader, GetUserRequestHeader
from rocketmq_wire.headers.base import CommandHeader
from tests.unit.ha_helpers import master_config, slave_config
from tests.unit.test_broker_acl_broker import topic_header

SUPER = AclCredentials("rocketmq", "12345678")
SETTINGS: dict[str, Any] = {
    "authentication_enabled": True,
    "authorization_enabled": True,
    "init_authentication_user": json.dumps({"username": "rocketmq", "password": "12345678"}),
}


async def _ask(
    client: BrokerClient,
    code: int,
    header: CommandHeader | None,
    body: bytes = b"",
    who: AclCredentials | None = SUPER,
) -> RemotingCommand:
    command = RemotingCommand.request(code, header, body)
    if who is not None:
        who.sign(command)
    return await client.client.invoke(client.address, command, client.timeout_ms)


async def test_the_broker_checks_every_request_and_keeps_its_users(tmp_path: Path) -> None:
    store = tmp_path / "store"
    # An empty plain ACL file refuses everything: it must not matter while ACL 2.0 is on.
    plain = tmp_path / "plain_acl.yml"
    plain.write_text("")
    async with running_broker(store, acl_enable=True, acl_file=str(plain), **SETTINGS) as broker:
        async with BrokerClient(broker.address) as client:
            unsigned = await _ask(client, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("T1"), who=None)
            assert (unsigned.code, unsigned.remark) == (
                ResponseCode.NO_PERMISSION,
                "username cannot be null.",
            )
            created = await _ask(client, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("T1"))
            assert created.code == ResponseCode.SUCCESS, created.remark
            body = UserInfo(password="bobPw1").to_json()
            made = await _ask(
                client, RequestCode.AUTH_CREATE_USER, CreateUserRequestHeader(username="bob"), body
            )
            assert made.code == ResponseCode.SUCCESS, made.remark
            bob = AclCredentials("bob", "bobPw1")
            refused = await _ask(client, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("T2"), who=bob)
            assert (refused.code, refused.remark) == (
                ResponseCode.NO_PERMISSION,
                "User:bob has no permission to access Topic:T2 from 127.0.0.1, no matched policies.",
            )
            # a code without resources is still authenticated
            wrong = AclCredentials("bob", "notBobs")
            inline = await _ask(client, RequestCode.GET_BROKER_RUNTIME_INFO, None, who=wrong)
            assert (inline.code, inline.remark) == (ResponseCode.NO_PERMISSION, "check signature failed.")
    async with running_broker(store, **SETTINGS) as broker:
        async with BrokerClient(broker.address) as client:
            got = await _ask(client, RequestCode.AUTH_GET_USER, GetUserRequestHeader(username="bob"))
            assert UserInfo.from_json(got.body) == UserInfo(
                username="bob", password="bobPw1", user_type="Normal", user_status="enable"
            )


async def test_a_slave_syncs_from_a_master_with_acl2_on(tmp_path: Path) -> None:
    """The slave signs its sync calls with the inner client's credentials, a super user on the master."""
    inner = json.dumps({"accessKey": "rmqInner", "secretKey": "innerSecret1"})
    master = Broker(
        master_config(tmp_path / "master", inner_client_authentication_credentials=inner, **SETTINGS)
    )
    await master.start()
    unsigned = Broker(slave_config(tmp_path / "unsigned", master))
    slave = Broker(slave_config(tmp_path / "slave", master, inner_client_authentication_credentials=inner))
    await unsigned.start()
    await slave.start()
    try:
        async with BrokerClient(master.address) as client:
            assert (await _ask(client, RequestCode.UPDATE_AND_CREATE_TOPIC, topic_header("Synced"))).code == 0
        for follower in (unsigned, slave):
            synchronizer = follower.ha.synchronizer
            assert synchronizer is not None
            synchronizer.master_addr = master.address
            await synchronizer.sync_all()
        assert slave.topic_exists("Synced")
        assert not unsigned.topic_exists("Synced")  # refused: "username cannot be null."
    finally:
        await slave.close()
        await unsigned.close()
        await master.close()


def test_acl2_settings_come_from_the_file_only() -> None:
    """Apache keeps them in AuthConfig: GET_BROKER_CONFIG never shows them (the initial user's password is
    among them) and UPDATE_BROKER_CONFIG cannot switch authentication off."""
    config = BrokerConfig.from_properties("authenticationEnabled=true\ninitAuthenticationUser={}\n")
    assert config.authentication_enabled and config.init_authentication_user == "{}"
    assert not {key for key, _ in config.items()} & AUTH_CONFIG_KEYS
    assert config.update({"authenticationEnabled": "false", "brokerPermission": "4"}, remote=True) == [
        "brokerPermission"
    ]
    assert config.authentication_enabled
