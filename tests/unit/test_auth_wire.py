"""The ACL 2.0 requests (AUTH_* 3001-3010) and their bodies, against frames Apache 5.3.3 wrote.

Every literal here was recorded off the wire: mqadmin 5.3.3 (``rocketmq-tools``) sending each request, and an
Apache 5.3.3 broker with ``authenticationEnabled``/``authorizationEnabled`` answering. The request frames are
unsigned (no ``tools.yml``) except :data:`SIGNED_CREATE_USER`, so their bytes depend only on the header and
the body: what :mod:`admin.auth` builds, stamped as Java stamps it (language, version, opaque), must encode
to exactly those bytes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

import pytest

from admin import auth
from admin.errors import AdminError, RequestRefusedError
from admin.rpc import AdminRpc
from rocketmq_wire import LanguageCode, RemotingCommand, RequestCode, ResponseCode, SerializeType
from rocketmq_wire.acl import AclCredentials, verify
from rocketmq_wire.bodies import AclInfo, AclInfoList, PolicyEntryInfo, PolicyInfo, UserInfo, UserInfoList
from rocketmq_wire.bodies.auth import canonical_name, canonical_resource, canonical_subject
from rocketmq_wire.bodies.registry import decode_request_body, decode_response_body
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers import header_for_request
from rocketmq_wire.headers.auth import DeleteAclRequestHeader, ListAclsRequestHeader, ListUsersRequestHeader

ADDR = "127.0.0.1:10911"

# mqadmin 5.3.3 without credentials, JSON headers (-Drocketmq.serialize.type=JSON).
JSON_FRAMES = {
    "createUser -u carol -p carolPw1 -t Normal": (
        "000000c5000000837b22636f6465223a333030312c226578744669656c6473223a7b22757365726e616d6522"
        "3a226361726f6c227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f7061717565"
        "223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f"
        "6e223a3437397d7b2270617373776f7264223a226361726f6c507731222c227573657254797065223a224e6f"
        "726d616c222c22757365726e616d65223a226361726f6c227d"
    ),
    "updateUser -u carol -p carolPw2": (
        "000000b1000000837b22636f6465223a333030322c226578744669656c6473223a7b22757365726e616d6522"
        "3a226361726f6c227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f7061717565"
        "223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f"
        "6e223a3437397d7b2270617373776f7264223a226361726f6c507732222c22757365726e616d65223a226361"
        "726f6c227d"
    ),
    "deleteUser -u carol": (
        "00000087000000837b22636f6465223a333030332c226578744669656c6473223a7b22757365726e616d6522"
        "3a226361726f6c227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f7061717565"
        "223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f"
        "6e223a3437397d"
    ),
    "getUser -u carol": (
        "00000087000000837b22636f6465223a333030342c226578744669656c6473223a7b22757365726e616d6522"
        "3a226361726f6c227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f7061717565"
        "223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f"
        "6e223a3437397d"
    ),
    "listUser -f car": (
        "000000830000007f7b22636f6465223a333030352c226578744669656c6473223a7b2266696c746572223a22"
        "636172227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f7061717565223a302c"
        "2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f6e223a34"
        "37397d"
    ),
    # No filter: Java still writes an (empty) ext map for a request with a typed header.
    "listUser": (
        "00000075000000717b22636f6465223a333030352c226578744669656c6473223a7b7d2c22666c6167223a30"
        "2c226c616e6775616765223a224a415641222c226f7061717565223a302c2273657269616c697a6554797065"
        "43757272656e74525043223a224a534f4e222c2276657273696f6e223a3437397d"
    ),
    "createAcl -s User:carol -r Topic:Orders -a Pub -d Allow": (
        "000000ff000000877b22636f6465223a333030362c226578744669656c6473223a7b227375626a656374223a"
        "22557365723a6361726f6c227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f70"
        "61717565223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c227665"
        "7273696f6e223a3437397d7b22706f6c6963696573223a5b7b22656e7472696573223a5b7b22616374696f6e"
        "73223a5b22507562225d2c226465636973696f6e223a22416c6c6f77222c227265736f75726365223a22546f"
        "7069633a4f7264657273227d5d7d5d2c227375626a656374223a22557365723a6361726f6c227d"
    ),
    "updateAcl -s User:carol -r Group:Billing -a Sub,Get -i 10.0.0.1,10.1.0.0/16 -d Deny": (
        "0000012c000000877b22636f6465223a333030372c226578744669656c6473223a7b227375626a656374223a"
        "22557365723a6361726f6c227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f70"
        "61717565223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c227665"
        "7273696f6e223a3437397d7b22706f6c6963696573223a5b7b22656e7472696573223a5b7b22616374696f6e"
        "73223a5b22537562222c22476574225d2c226465636973696f6e223a2244656e79222c227265736f75726365"
        "223a2247726f75703a42696c6c696e67222c22736f75726365497073223a5b2231302e302e302e31222c2231"
        "302e312e302e302f3136225d7d5d7d5d2c227375626a656374223a22557365723a6361726f6c227d"
    ),
    "deleteAcl -s User:carol -r Topic:Orders": (
        "000000a5000000a17b22636f6465223a333030382c226578744669656c6473223a7b227265736f7572636522"
        "3a22546f7069633a4f7264657273222c227375626a656374223a22557365723a6361726f6c227d2c22666c61"
        "67223a302c226c616e6775616765223a224a415641222c226f7061717565223a302c2273657269616c697a65"
        "5479706543757272656e74525043223a224a534f4e222c2276657273696f6e223a3437397d"
    ),
    "getAcl -s User:carol": (
        "0000008b000000877b22636f6465223a333030392c226578744669656c6473223a7b227375626a656374223a"
        "22557365723a6361726f6c227d2c22666c6167223a302c226c616e6775616765223a224a415641222c226f70"
        "61717565223a302c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c227665"
        "7273696f6e223a3437397d"
    ),
    "listAcl -s carol -r Orders": (
        "000000a6000000a27b22636f6465223a333031302c226578744669656c6473223a7b227375626a6563744669"
        "6c746572223a226361726f6c222c227265736f7572636546696c746572223a224f7264657273227d2c22666c"
        "6167223a302c226c616e6775616765223a224a415641222c226f7061717565223a302c2273657269616c697a"
        "655479706543757272656e74525043223a224a534f4e222c2276657273696f6e223a3437397d"
    ),
}
# The same commands with ROCKETMQ (binary) headers.
ROCKETMQ_FRAMES = {
    "createUser -u carol -p carolPw1 -t Normal": (
        "0000006a010000280bb90001df000000000000000000000000000000130008757365726e616d650000000563"
        "61726f6c7b2270617373776f7264223a226361726f6c507731222c227573657254797065223a224e6f726d61"
        "6c222c22757365726e616d65223a226361726f6c227d"
    ),
    "updateAcl -s User:carol -r Group:Billing -a Sub,Get -i 10.0.0.1,10.1.0.0/16 -d Deny": (
        "000000d10100002c0bbf0001df0000000000000000000000000000001700077375626a6563740000000a5573"
        "65723a6361726f6c7b22706f6c6963696573223a5b7b22656e7472696573223a5b7b22616374696f6e73223a"
        "5b22537562222c22476574225d2c226465636973696f6e223a2244656e79222c227265736f75726365223a22"
        "47726f75703a42696c6c696e67222c22736f75726365497073223a5b2231302e302e302e31222c2231302e31"
        "2e302e302f3136225d7d5d7d5d2c227375626a656374223a22557365723a6361726f6c227d"
    ),
    "deleteAcl -s User:carol -r Topic:Orders": (
        "0000004a010000460bc00001df0000000000000000000000000000003100087265736f757263650000000c54"
        "6f7069633a4f726465727300077375626a6563740000000a557365723a6361726f6c"
    ),
    "listAcl -s carol -r Orders": (
        "0000004b010000470bc20001df00000000000000000000000000000032000d7375626a65637446696c746572"
        "000000056361726f6c000e7265736f7572636546696c746572000000064f7264657273"
    ),
}
# mqadmin createUser -u carol -p carolPw1 signed by tools.yml's rocketmq / 12345678.
SIGNED_CREATE_USER = (
    "000000f3000000c57b22636f6465223a333030312c226578744669656c6473223a7b224163636573734b6579"
    "223a22726f636b65746d71222c225369676e6174757265223a225a2f3359634143696b6c49676c666b4a4267"
    "472f533558614a48633d222c22757365726e616d65223a226361726f6c227d2c22666c6167223a302c226c61"
    "6e6775616765223a224a415641222c226f7061717565223a302c2273657269616c697a655479706543757272"
    "656e74525043223a224a534f4e222c2276657273696f6e223a3437397d7b2270617373776f7264223a226361"
    "726f6c507731222c22757365726e616d65223a226361726f6c227d"
)
# The broker's refusal of the unsigned listUser above, and of a disabled user's request.
UNSIGNED_REFUSED = (
    "00000088000000847b22636f6465223a31362c22666c6167223a312c226c616e6775616765223a224a415641"
    "222c226f7061717565223a302c2272656d61726b223a22757365726e616d652063616e6e6f74206265206e75"
    "6c6c2e222c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c227665727369"
    "6f6e223a3437397d"
)
DISABLED_REFUSED = (
    "00000087000000837b22636f6465223a31362c22666c6167223a312c226c616e6775616765223a224a415641"
    "222c226f7061717565223a302c2272656d61726b223a22557365723a6361726f6c2069732064697361626c65"
    "642e222c2273657269616c697a655479706543757272656e74525043223a224a534f4e222c2276657273696f"
    "6e223a3437397d"
)

# Bodies of the broker's answers.
GET_USER = b'{"password":"carolPw1","userStatus":"disable","userType":"Normal","username":"carol"}'
LIST_USERS = (
    b'[{"password":"alicepw1","userStatus":"enable","userType":"Normal","username":"alice"},'
    b'{"password":"12345678","userStatus":"enable","userType":"Super","username":"rocketmq"}]'
)
GET_ACL = (
    b'{"policies":[{"entries":[{"actions":["Sub"],"decision":"Deny","resource":"Topic:Orders","sourceIps":'
    b'["192.168.0.0/16"]},{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:Billing"}],'
    b'"policyType":"Custom"}],"subject":"User:carol"}'
)
LIST_ACLS = (
    b'[{"policies":[{"entries":[{"actions":["Sub"],"decision":"Deny","resource":"Topic:Orders","sourceIps":'
    b'["192.168.0.0/16"]}],"policyType":"Custom"}],"subject":"User:carol"}]'
)


class RecordingRpc:
    """Stands in for :class:`AdminRpc`: keeps each command the admin function built (before any
    transport touches it) and answers with ``code``/``remark``/``body``."""

    def __init__(
        self, code: int = ResponseCode.SUCCESS, remark: str | None = None, body: bytes = b""
    ) -> None:
        self.sent: list[RemotingCommand] = []
        self.code, self.remark, self.body = code, remark, body

    async def server(
        self, addr: str, cmd: RemotingCommand, timeout_ms: float | None = None
    ) -> RemotingCommand:
        self.sent.append(cmd)
        return cmd.make_response(self.code, self.remark, body=self.body)


Call = Callable[[AdminRpc], Awaitable[object]]

#: What each mqadmin command line above amounts to, as a call of :mod:`admin.auth`.
CALLS: dict[str, Call] = {
    "createUser -u carol -p carolPw1 -t Normal": lambda rpc: auth.create_user(
        rpc, ADDR, UserInfo(username="carol", password="carolPw1", user_type="Normal")
    ),
    "updateUser -u carol -p carolPw2": lambda rpc: auth.update_user(
        rpc, ADDR, UserInfo(username="carol", password="carolPw2")
    ),
    "deleteUser -u carol": lambda rpc: auth.delete_user(rpc, ADDR, "carol"),
    "getUser -u carol": lambda rpc: auth.get_user(rpc, ADDR, "carol"),
    "listUser -f car": lambda rpc: auth.list_users(rpc, ADDR, "car"),
    "listUser": lambda rpc: auth.list_users(rpc, ADDR),
    "createAcl -s User:carol -r Topic:Orders -a Pub -d Allow": lambda rpc: auth.create_acl(
        rpc, ADDR, AclInfo.of("User:carol", ["Topic:Orders"], ["Pub"], None, "Allow")
    ),
    "updateAcl -s User:carol -r Group:Billing -a Sub,Get -i 10.0.0.1,10.1.0.0/16 -d Deny": lambda rpc: (
        auth.update_acl(
            rpc,
            ADDR,
            AclInfo.of("User:carol", ["Group:Billing"], ["Sub", "Get"], ["10.0.0.1", "10.1.0.0/16"], "Deny"),
        )
    ),
    "deleteAcl -s User:carol -r Topic:Orders": lambda rpc: auth.delete_acl(
        rpc, ADDR, "User:carol", "Topic:Orders"
    ),
    "getAcl -s User:carol": lambda rpc: auth.get_acl(rpc, ADDR, "User:carol"),
    "listAcl -s carol -r Orders": lambda rpc: auth.list_acls(rpc, ADDR, "carol", "Orders"),
}


async def _built_by_admin(command: str) -> RemotingCommand:
    rpc = RecordingRpc()
    await CALLS[command](cast(AdminRpc, rpc))
    [cmd] = rpc.sent
    return cmd


def _stamped_like(cmd: RemotingCommand, java: RemotingCommand) -> bytes:
    """``cmd`` encoded with what names the sender rather than the request (Java's language, version,
    opaque)."""
    cmd.language = LanguageCode.JAVA
    cmd.version = MQVersion.V5_3_3
    cmd.opaque = java.opaque
    cmd.serialize_type = java.serialize_type
    return cmd.encode()


@pytest.mark.parametrize(
    ("command", "frame"),
    [pytest.param(c, f, id=f"JSON {c}") for c, f in JSON_FRAMES.items()]
    + [pytest.param(c, f, id=f"ROCKETMQ {c}") for c, f in ROCKETMQ_FRAMES.items()],
)
async def test_the_admin_sends_what_mqadmin_sends_byte_for_byte(command: str, frame: str) -> None:
    java_bytes = bytes.fromhex(frame)
    java = RemotingCommand.decode(java_bytes)
    assert _stamped_like(await _built_by_admin(command), java) == java_bytes


@pytest.mark.parametrize("frame", [*JSON_FRAMES.values(), *ROCKETMQ_FRAMES.values()])
def test_javas_requests_decode_to_typed_headers_and_bodies(frame: str) -> None:
    java = RemotingCommand.decode(bytes.fromhex(frame))
    header_cls = header_for_request(java.code)
    assert header_cls is not None and header_cls.REQUEST_CODES == (java.code,)
    header = java.read_header(header_cls)
    assert header.to_ext() == java.fields()  # every entry is a declared field, nothing dropped
    body = decode_request_body(java.code, java.body, java.fields())
    if java.body:
        assert isinstance(body, (UserInfo, AclInfo)) and body.to_json() == java.body
    else:
        assert body is None


def test_headers_read_what_java_writes() -> None:
    deleted = RemotingCommand.decode(bytes.fromhex(JSON_FRAMES["deleteAcl -s User:carol -r Topic:Orders"]))
    assert deleted.read_header(DeleteAclRequestHeader) == DeleteAclRequestHeader(
        subject="User:carol", policy_type=None, resource="Topic:Orders"
    )
    listed = RemotingCommand.decode(bytes.fromhex(ROCKETMQ_FRAMES["listAcl -s carol -r Orders"]))
    assert listed.serialize_type == SerializeType.ROCKETMQ
    assert listed.read_header(ListAclsRequestHeader) == ListAclsRequestHeader(
        subject_filter="carol", resource_filter="Orders"
    )
    everyone = RemotingCommand.decode(bytes.fromhex(JSON_FRAMES["listUser"]))
    assert everyone.read_header(ListUsersRequestHeader) == ListUsersRequestHeader(filter=None)


async def test_a_signed_request_carries_javas_signature() -> None:
    java_bytes = bytes.fromhex(SIGNED_CREATE_USER)
    java = RemotingCommand.decode(java_bytes)
    assert verify(java, "12345678")
    ours = await _built_by_admin("createUser -u carol -p carolPw1 -t Normal")
    ours.body = UserInfo(username="carol", password="carolPw1").to_json()  # that command line had no -t
    AclCredentials("rocketmq", "12345678").sign(ours)
    assert ours.body == java.body
    assert ours.fields() == java.fields()  # same entries, so the same Signature over them and the body


@pytest.mark.parametrize(
    ("body_type", "body"),
    [(UserInfo, GET_USER), (UserInfoList, LIST_USERS), (AclInfo, GET_ACL), (AclInfoList, LIST_ACLS)],
)
def test_broker_answers_read_and_write_back_unchanged(body_type: type[UserInfo], body: bytes) -> None:
    assert body_type.from_json(body).to_json() == body


def test_broker_answers_are_typed_by_the_request_code() -> None:
    acl = decode_response_body(RequestCode.AUTH_GET_ACL, GET_ACL)
    assert acl == AclInfo(
        subject="User:carol",
        policies=[
            PolicyInfo(
                policy_type="Custom",
                entries=[
                    PolicyEntryInfo(
                        resource="Topic:Orders",
                        actions=["Sub"],
                        source_ips=["192.168.0.0/16"],
                        decision="Deny",
                    ),
                    PolicyEntryInfo(
                        resource="Group:Billing", actions=["Pub", "Sub"], source_ips=None, decision="Allow"
                    ),
                ],
            )
        ],
    )
    users = decode_response_body(RequestCode.AUTH_LIST_USER, LIST_USERS)
    assert isinstance(users, UserInfoList)
    assert [(u.username, u.user_type, u.user_status) for u in users.items] == [
        ("alice", "Normal", "enable"),
        ("rocketmq", "Super", "enable"),
    ]
    assert isinstance(decode_response_body(RequestCode.AUTH_LIST_ACL, LIST_ACLS), AclInfoList)
    assert isinstance(decode_response_body(RequestCode.AUTH_GET_USER, GET_USER), UserInfo)
    assert decode_response_body(RequestCode.AUTH_GET_USER, b"") is None  # "no such user" has no body


async def test_reads_return_the_typed_answer_or_nothing() -> None:
    rpc = RecordingRpc(body=GET_USER, remark="not set any response code")
    user = await auth.get_user(cast(AdminRpc, rpc), ADDR, "carol")
    assert user == UserInfo(username="carol", password="carolPw1", user_type="Normal", user_status="disable")
    rpc.body = LIST_ACLS
    [acl] = await auth.list_acls(cast(AdminRpc, rpc), ADDR)
    assert acl.subject == "User:carol" and acl.policies is not None
    rpc.body = b""  # 5.3.3 answers SUCCESS without a body when there is nothing
    assert await auth.get_user(cast(AdminRpc, rpc), ADDR, "nobody") is None
    assert await auth.get_acl(cast(AdminRpc, rpc), ADDR, "User:nobody") is None
    assert await auth.list_users(cast(AdminRpc, rpc), ADDR) == []
    assert await auth.list_acls(cast(AdminRpc, rpc), ADDR, "x", "y") == []


@pytest.mark.parametrize(
    ("frame", "remark"),
    [(UNSIGNED_REFUSED, "username cannot be null."), (DISABLED_REFUSED, "User:carol is disabled.")],
)
async def test_refusals_raise_with_the_brokers_code_and_remark(frame: str, remark: str) -> None:
    answer = RemotingCommand.decode(bytes.fromhex(frame))
    rpc = RecordingRpc(answer.code, answer.remark)
    with pytest.raises(RequestRefusedError) as refused:
        await auth.list_users(cast(AdminRpc, rpc), ADDR)
    assert (refused.value.code, refused.value.remark, refused.value.addr) == (
        ResponseCode.NO_PERMISSION,
        remark,
        ADDR,
    )
    assert str(refused.value) == f"user listing refused by {ADDR} (code 16 NO_PERMISSION): {remark}"


async def test_a_broker_without_acl_2_is_named_as_such() -> None:
    rpc = RecordingRpc(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 3006 not supported")
    with pytest.raises(RequestRefusedError, match=r"ACL 2\.0: brokers 5\.3 and later") as refused:
        await auth.create_acl(
            cast(AdminRpc, rpc), ADDR, AclInfo.of("User:a", ["Topic:T"], ["Pub"], None, "Allow")
        )
    assert refused.value.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


@pytest.mark.parametrize(
    "body",
    [
        b'{"username":"carol"}',
        b"[1]",
        b'[{"username":["not","a","string"]}]',
        b"[{",
        b'[{"username":"x"},null]',
    ],
)
async def test_garbled_lists_are_admin_errors(body: bytes) -> None:
    with pytest.raises(AdminError, match=f"unreadable user list from {ADDR}"):
        await auth.list_users(cast(AdminRpc, RecordingRpc(body=body)), ADDR)


def test_a_list_body_is_an_array_not_a_bean() -> None:
    listed = UserInfoList(items=[UserInfo(username="a"), UserInfo(username="b", user_status="disable")])
    assert listed.to_json() == b'[{"username":"a"},{"userStatus":"disable","username":"b"}]'
    assert UserInfoList.from_json(b"null") == UserInfoList()
    with pytest.raises(TypeError):
        listed.to_bean()
    with pytest.raises(CodecError, match="expected a JSON array"):
        AclInfoList.from_json(b'{"subject":"User:a"}')
    with pytest.raises(CodecError, match=r"AclInfo\.policies\[0\]\.entries\[0\]\.actions"):
        AclInfo.from_json(b'{"policies":[{"entries":[{"actions":"Pub"}]}]}')


def test_mqadmins_acl_body_has_one_policy_with_an_entry_per_resource() -> None:
    acl = AclInfo.of("User:carol", ["Topic:Orders", "Group:Billing"], ["Pub", "Sub"], None, "Allow")
    assert acl.to_json() == (
        b'{"policies":[{"entries":[{"actions":["Pub","Sub"],"decision":"Allow","resource":"Topic:Orders"},'
        b'{"actions":["Pub","Sub"],"decision":"Allow","resource":"Group:Billing"}]}],"subject":"User:carol"}'
    )


def test_names_are_matched_as_the_broker_matches_them() -> None:
    assert canonical_name(" pUb ", ("Pub", "Sub")) == "Pub"
    assert canonical_name("Pubs", ("Pub", "Sub")) is None
    assert canonical_subject("user: carol") == "User:carol"
    assert [canonical_subject(s) for s in ("carol", "User:", "Group:billing", ":carol")] == [None] * 4
    assert canonical_resource("topic:Orders") == "Topic:Orders"
    assert canonical_resource(" * ") == "*"
    assert canonical_resource("GROUP:bill*") == "Group:bill*"
    assert [canonical_resource(r) for r in ("Orders", "Topic:", "Queue:Q", "Any:x")] == [None] * 4
