"""``rmq user ...`` and ``rmq acl create|update|delete|get|list`` (ACL 2.0) and their mqadmin names.

A stand-in plays the NameServer and the master of a two-broker cluster, a second one its slave; both record
what they are sent and answer the AUTH_* requests with bodies an Apache 5.3.3 broker sent (captured from a
broker with ``authenticationEnabled``/``authorizationEnabled`` on). Changes must reach master and slave as
mqadmin sends them, reads only the masters; bad values are usage errors before anything is sent, refusals
one ``error:`` line.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.acl import verify
from rocketmq_wire.bodies import BrokerData, ClusterInfo
from rocketmq_wire.transport import Connection, RemotingServer

CLUSTER = "DefaultCluster"

# Bodies as Apache 5.3.3's broker answered them, and as its mqadmin sent them, byte for byte.
LISTED_USERS = b'[{"password":"carolPw1","userStatus":"disable","userType":"Normal","username":"carol"}]'
GOT_ACL = (
    b'{"policies":[{"entries":[{"actions":["Sub"],"decision":"Deny","resource":"Topic:Orders","sourceIps":'
    b'["192.168.0.0/16"]},{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:Billing"}],'
    b'"policyType":"Custom"}],"subject":"User:carol"}'
)
MQADMIN_CREATE_ACL = (
    b'{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:Orders"},'
    b'{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:Billing"}]}],"subject":"User:carol"}'
)
MQADMIN_UPDATE_ACL = (
    b'{"policies":[{"entries":[{"actions":["Sub"],"decision":"Deny","resource":"Topic:Orders","sourceIps":'
    b'["192.168.0.0/16"]}]}],"subject":"User:carol"}'
)
MQADMIN_CREATE_SUPER = b'{"password":"davePw1","userType":"Super","username":"dave"}'
MQADMIN_DISABLE = b'{"userStatus":"disable","username":"carol"}'


class StandInBroker:
    """One broker process of the stand-in cluster; ``answers`` overrides the reply to a request code."""

    def __init__(self) -> None:
        self.server = RemotingServer("127.0.0.1", 0)
        self.server.register_default(self.handle)
        self.requests: list[RemotingCommand] = []
        self.answers: dict[int, tuple[int, str | None, bytes]] = {}
        self.cluster: ClusterInfo | None = None  # set on the one that answers as NameServer

    @property
    def addr(self) -> str:
        return self.server.address

    async def handle(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        if request.code == RequestCode.GET_BROKER_CLUSTER_INFO and self.cluster is not None:
            return request.make_response(body=self.cluster.to_json())
        self.requests.append(request)
        code, remark, body = self.answers.get(request.code, (ResponseCode.SUCCESS, None, b""))
        return request.make_response(code, remark, body=body)

    def sent(self, code: int) -> list[RemotingCommand]:
        return [r for r in self.requests if r.code == code]


class Rmq:
    def __init__(self, master: StandInBroker, slave: StandInBroker) -> None:
        self.master = master
        self.slave = slave
        self.runner = CliRunner()

    async def __call__(self, *args: str, keys: tuple[str, str] | None = None) -> Result:
        env = {"NAMESRV_ADDR": self.master.addr, "RMQ_ACCESS_KEY": "", "RMQ_SECRET_KEY": ""}  # "": unset
        if keys is not None:
            env["RMQ_ACCESS_KEY"], env["RMQ_SECRET_KEY"] = keys
        return await asyncio.to_thread(self.runner.invoke, app, list(args), env=env)

    async def ok(self, *args: str, keys: tuple[str, str] | None = None) -> Result:
        result = await self(*args, keys=keys)
        assert result.exit_code == 0, result.output
        return result

    async def json(self, *args: str) -> Any:
        return json.loads((await self.ok(*args, "--json")).stdout)

    def all_requests(self) -> list[RemotingCommand]:
        return self.master.requests + self.slave.requests


@pytest.fixture
async def rmq() -> AsyncIterator[Rmq]:
    master, slave = StandInBroker(), StandInBroker()
    await master.server.start()
    await slave.server.start()
    master.cluster = ClusterInfo(
        broker_addr_table={
            "broker-a": BrokerData(
                cluster=CLUSTER, broker_name="broker-a", broker_addrs={0: master.addr, 1: slave.addr}
            )
        },
        cluster_addr_table={CLUSTER: ["broker-a"]},
    )
    try:
        yield Rmq(master, slave)
    finally:
        await master.server.close()
        await slave.server.close()


async def test_user_changes_reach_master_and_slave_with_mqadmins_body(rmq: Rmq) -> None:
    done = await rmq.json("user", "create", "-c", CLUSTER, "-u", "dave", "-p", "davePw1", "-t", "super")
    assert done == {"brokers": [rmq.master.addr, rmq.slave.addr], "success": True}
    for broker in (rmq.master, rmq.slave):
        [sent] = broker.sent(RequestCode.AUTH_CREATE_USER)
        assert sent.fields() == {"username": "dave"}
        assert sent.body == MQADMIN_CREATE_SUPER  # "super" is sent as Apache spells it


async def test_mqadmin_names_and_options(rmq: Rmq) -> None:
    addr = rmq.master.addr
    await rmq.ok("createUser", "-b", addr, "-u", " carol ", "-p", "carolPw1")
    [created] = rmq.master.sent(RequestCode.AUTH_CREATE_USER)
    assert created.body == b'{"password":"carolPw1","username":"carol"}'  # trimmed, no type: as mqadmin
    await rmq.ok("updateUser", "-b", addr, "-u", "carol", "-s", "DISABLE")
    [updated] = rmq.master.sent(RequestCode.AUTH_UPDATE_USER)
    assert (updated.fields(), updated.body) == ({"username": "carol"}, MQADMIN_DISABLE)
    await rmq.ok("deleteUser", "-b", addr, "-u", "carol")
    [deleted] = rmq.master.sent(RequestCode.AUTH_DELETE_USER)
    assert (deleted.fields(), deleted.body) == ({"username": "carol"}, b"")
    await rmq.ok(
        "createAcl",
        "-b",
        addr,
        "-s",
        "user:carol",
        "-r",
        "topic:Orders, Group:Billing",
        "-a",
        "pub,SUB",
        "-d",
        "allow",
    )
    [acl] = rmq.master.sent(RequestCode.AUTH_CREATE_ACL)
    assert (acl.fields(), acl.body) == ({"subject": "User:carol"}, MQADMIN_CREATE_ACL)
    await rmq.ok(
        "updateAcl",
        "-b",
        addr,
        "-s",
        "User:carol",
        "-r",
        "Topic:Orders",
        "-a",
        "Sub",
        "-i",
        "192.168.0.0/16",
        "-d",
        "Deny",
    )
    [changed] = rmq.master.sent(RequestCode.AUTH_UPDATE_ACL)
    assert (changed.fields(), changed.body) == ({"subject": "User:carol"}, MQADMIN_UPDATE_ACL)
    await rmq.ok("deleteAcl", "-b", addr, "-s", "User:carol", "-r", "Group:Billing")
    await rmq.ok("acl", "delete", "-b", addr, "-s", "User:carol")
    partly, wholly = rmq.master.sent(RequestCode.AUTH_DELETE_ACL)
    assert partly.fields() == {"subject": "User:carol", "resource": "Group:Billing"}  # no policyType: as Java
    assert wholly.fields() == {"subject": "User:carol"}
    assert rmq.slave.requests == []


async def test_reads_ask_the_masters_and_show_each_answer(rmq: Rmq) -> None:
    rmq.master.answers[RequestCode.AUTH_LIST_USER] = (ResponseCode.SUCCESS, None, LISTED_USERS)
    rmq.master.answers[RequestCode.AUTH_GET_ACL] = (ResponseCode.SUCCESS, None, GOT_ACL)
    rmq.master.answers[RequestCode.AUTH_LIST_ACL] = (ResponseCode.SUCCESS, None, b"[" + GOT_ACL + b"]")
    listed = await rmq.json("user", "list", "-c", CLUSTER, "-f", "ca")
    carol = {"username": "carol", "password": "carolPw1", "userType": "Normal", "userStatus": "disable"}
    assert listed == {rmq.master.addr: [carol]}
    [asked] = rmq.master.sent(RequestCode.AUTH_LIST_USER)
    assert asked.fields() == {"filter": "ca"}
    table = await rmq.ok("listUser", "-c", CLUSTER)
    assert "carolPw1" in table.stdout and "disable" in table.stdout
    [everyone] = rmq.master.sent(RequestCode.AUTH_LIST_USER)[1:]
    assert everyone.fields() == {}  # no filter sent at all, as mqadmin without -f

    got = await rmq.json("acl", "get", "-c", CLUSTER, "-s", "User:carol")
    entries = got[rmq.master.addr]["policies"][0]["entries"]
    assert got[rmq.master.addr]["subject"] == "User:carol"
    assert got[rmq.master.addr]["policies"][0]["policyType"] == "Custom"
    assert entries == [
        {"resource": "Topic:Orders", "actions": ["Sub"], "sourceIps": ["192.168.0.0/16"], "decision": "Deny"},
        {"resource": "Group:Billing", "actions": ["Pub", "Sub"], "sourceIps": None, "decision": "Allow"},
    ]
    listed_acls = await rmq.json("listAcl", "-b", rmq.master.addr, "-s", "carol", "-r", "Orders")
    assert listed_acls == {rmq.master.addr: [got[rmq.master.addr]]}
    [filtered] = rmq.master.sent(RequestCode.AUTH_LIST_ACL)
    assert filtered.fields() == {"subjectFilter": "carol", "resourceFilter": "Orders"}
    shown = await rmq.ok("acl", "list", "-b", rmq.master.addr)
    assert "Group:Billing" in shown.stdout and "192.168.0.0/16" in shown.stdout
    assert rmq.slave.requests == []


async def test_what_a_broker_does_not_have_is_null_in_json_and_an_error_in_a_table(rmq: Rmq) -> None:
    assert await rmq.json("user", "get", "-b", rmq.master.addr, "-u", "nobody") == {rmq.master.addr: None}
    assert await rmq.json("acl", "get", "-b", rmq.master.addr, "-s", "User:nobody") == {rmq.master.addr: None}
    assert await rmq.json("acl", "list", "-b", rmq.master.addr) == {rmq.master.addr: []}
    missing = await rmq("getUser", "-b", rmq.master.addr, "-u", "nobody")
    assert missing.exit_code == 1
    assert missing.stderr.strip() == f"error: no user 'nobody' on {rmq.master.addr}"


async def test_refusals_are_one_line_errors(rmq: Rmq) -> None:
    remark = (
        "User:alice has no permission to access Cluster:DefaultCluster from 127.0.0.1, no matched policies."
    )
    rmq.master.answers[RequestCode.AUTH_CREATE_USER] = (ResponseCode.NO_PERMISSION, remark, b"")
    refused = await rmq("user", "create", "-c", CLUSTER, "-u", "mallory", "-p", "pw")
    assert refused.exit_code == 1
    [line] = refused.stderr.strip().splitlines()
    assert line == f"error: user creation refused by {rmq.master.addr} (code 16 NO_PERMISSION): {remark}"
    assert rmq.slave.requests == []  # the walk stops at the first refusal, as mqadmin's loop does

    rmq.master.answers[RequestCode.AUTH_LIST_ACL] = (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        "3010 not supported",
        b"",
    )
    old = await rmq("acl", "list", "-b", rmq.master.addr)
    assert old.exit_code == 1 and "ACL 2.0: brokers 5.3 and later" in old.stderr
    rmq.master.answers[RequestCode.AUTH_GET_USER] = (ResponseCode.SUCCESS, None, b"{not json")
    garbled = await rmq("user", "get", "-b", rmq.master.addr, "-u", "carol")
    assert garbled.exit_code == 1 and f"unreadable user from {rmq.master.addr}" in garbled.stderr


async def test_requests_are_signed_with_the_given_user(rmq: Rmq) -> None:
    await rmq.ok("user", "delete", "-b", rmq.master.addr, "-u", "carol", keys=("rocketmq", "12345678"))
    [sent] = rmq.master.sent(RequestCode.AUTH_DELETE_USER)
    assert sent.fields()["AccessKey"] == "rocketmq"
    assert verify(sent, "12345678") and not verify(sent, "another")


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["acl", "create", "-s", "carol", "-r", "Topic:T", "-a", "Pub", "-d", "Allow"], "is not a subject"),
        (["acl", "create", "-s", "User:", "-r", "Topic:T", "-a", "Pub", "-d", "Allow"], "is not a subject"),
        (
            ["acl", "create", "-s", "User:c", "-r", "Orders", "-a", "Pub", "-d", "Allow"],
            "'Orders' is not a resource",
        ),
        (["acl", "create", "-s", "User:c", "-r", "Queue:Q", "-a", "Pub", "-d", "Allow"], "is not a resource"),
        (
            ["acl", "create", "-s", "User:c", "-r", "Topic:T", "-a", "Pub,Pib", "-d", "Allow"],
            "'Pib' is not an action",
        ),
        (
            ["acl", "create", "-s", "User:c", "-r", "Topic:T", "-a", "Any", "-d", "Allow"],
            "'Any' is not an action",
        ),
        (["acl", "create", "-s", "User:c", "-r", "Topic:T", "-a", " , ", "-d", "Allow"], "no action given"),
        (
            ["updateAcl", "-s", "User:c", "-r", "Topic:T", "-a", "Pub", "-d", "Maybe"],
            "'Maybe' is not a decision",
        ),
        (["user", "create", "-u", "c", "-p", "p", "-t", "Admin"], "'Admin' is not a user type"),
        (["user", "update", "-u", "c", "-s", "locked"], "'locked' is not a user status"),
        (["user", "create", "-u", "c"], "Missing option '--password'"),
        (["acl", "create", "-s", "User:c", "-r", "Topic:T", "-a", "Pub"], "Missing option '--decision'"),
    ],
)
async def test_bad_values_are_usage_errors_before_anything_is_sent(
    rmq: Rmq, args: list[str], complaint: str
) -> None:
    result = await rmq(*args, "-b", rmq.master.addr)
    assert result.exit_code == 2, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and complaint in line
    assert rmq.all_requests() == []


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["user", "delete", "-u", "carol"], "pass --broker or --cluster"),
        (["acl", "list", "-c", CLUSTER, "-b", "127.0.0.1:1"], "either --cluster or --broker, not both"),
        (["user", "update", "-u", "carol", "-b", "127.0.0.1:1", "-p", " "], "there is nothing to update"),
        (["acl", "delete", "-s", "User:c", "-r", "Topic:A,Topic:B", "-b", "127.0.0.1:1"], "one resource"),
        (["user", "list", "-c", "NoSuchCluster"], "no cluster named 'NoSuchCluster'"),
    ],
)
async def test_wrong_targets_fail_with_one_line(rmq: Rmq, args: list[str], complaint: str) -> None:
    result = await rmq(*args)
    assert result.exit_code == 1, result.output
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and complaint in line
    assert [r for r in rmq.all_requests() if r.code >= RequestCode.AUTH_CREATE_USER] == []
