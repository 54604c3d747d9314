"""ACL 2.0 on the broker: signatures, the order in which policy entries decide, every remark of the
integration case table, the AUTH_* admin processors and durability of users and ACLs across a reopen.
Requests go through the codec (signed as a client's RPC hook signs them); no sockets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from broker.auth import AuthenticationError, AuthError, AuthMetadata, AuthService
from broker.auth import metadata as metadata_module
from broker.auth.model import Acl, Policy, PolicyEntry, Resource, User, deciding_entry
from broker.config import BrokerConfig
from broker.processors.auth_admin import (
    CreateAclProcessor,
    CreateUserProcessor,
    DeleteAclProcessor,
    DeleteUserProcessor,
    GetAclProcessor,
    GetUserProcessor,
    ListAclsProcessor,
    ListUsersProcessor,
    UpdateAclProcessor,
    UpdateUserProcessor,
)
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.acl import AclCredentials
from rocketmq_wire.bodies.auth import AclInfo, AclInfoList, UserInfo, UserInfoList
from rocketmq_wire.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketmq_wire.headers.auth import (
    CreateAclRequestHeader,
    CreateUserRequestHeader,
    DeleteAclRequestHeader,
    DeleteUserRequestHeader,
    GetAclRequestHeader,
    GetUserRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UpdateAclRequestHeader,
    UpdateUserRequestHeader,
)
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.javahash import ExtFields
from tests.unit.broker_processor_helpers import FakeConnection

SUPER = ("rocketmq", "12345678")
ALICE = ("alice", "alicePassword1")
CLUSTER = "DefaultCluster"
IP = "127.0.0.1"


def _denied(resource: str, detail: str = "no matched policies.") -> str:
    return f"User:alice has no permission to access {resource} from {IP}, {detail}"


def _config(tmp_path: Path, **overrides: Any) -> BrokerConfig:
    config = BrokerConfig(
        store_path_root_dir=str(tmp_path),
        authentication_enabled=True,
        authorization_enabled=True,
        init_authentication_user=json.dumps({"username": SUPER[0], "password": SUPER[1]}),
        inner_client_authentication_credentials=json.dumps({"accessKey": "rmqInner", "secretKey": "inner1"}),
    )
    for name, value in overrides.items():
        setattr(config, name, value)
    return config


def _service(tmp_path: Path, **overrides: Any) -> AuthService:
    config = _config(tmp_path, **overrides)
    service = AuthService(config, AuthMetadata(config.config_dir))
    service.start()
    return service


def _request(
    code: int,
    fields: dict[str, str] | None = None,
    *,
    keys: tuple[str, str] | None = ALICE,
    body: bytes = b"",
    header: CommandHeader | None = None,
) -> RemotingCommand:
    """A request as a client sends it (signed by ``keys``), decoded as the broker reads it."""
    cmd = RemotingCommand.request(code, header, body)
    if fields:
        cmd.ext_fields = ExtFields(fields)
    if keys is not None:
        AclCredentials(*keys).sign(cmd)
    return RemotingCommand.decode(cmd.encode())


def _send(topic: str, **kw: Any) -> RemotingCommand:
    return _request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": topic, "c": "TBW102"}, body=b"x", **kw)


def _pull(group: str, topic: str, **kw: Any) -> RemotingCommand:
    return _request(RequestCode.PULL_MESSAGE, {"consumerGroup": group, "topic": topic, "queueId": "0"}, **kw)


def _refusal(service: AuthService, request: RemotingCommand) -> str | None:
    try:
        service.check(request, f"{IP}:50123")
    except AuthError as exc:
        return exc.message
    return None


@pytest.fixture
def service(tmp_path: Path) -> AuthService:
    s = _service(tmp_path)
    s.metadata.create_user(User(ALICE[0], ALICE[1]))
    s.metadata.put_acl(
        Acl(
            "User:alice",
            [
                Policy(
                    "Custom",
                    [
                        PolicyEntry(
                            Resource.parse("Topic:A") or Resource.topic("A"), ["Pub", "Sub"], None, "Allow"
                        ),
                        PolicyEntry(Resource.group("g-ok"), ["Sub"], None, "Allow"),
                    ],
                )
            ],
        )
    )
    return s


# -- authentication ------------------------------------------------------------------------------------------


def test_each_authentication_remark_of_the_case_table(service: AuthService) -> None:
    assert _refusal(service, _send("A", keys=None)) == "username cannot be null."
    assert _refusal(service, _send("A", keys=(ALICE[0], "notAlicesPassword"))) == "check signature failed."
    assert _refusal(service, _send("A", keys=("ghost", "whatever1"))) == "User:ghost is not found."
    assert _refusal(service, _send("A")) is None


def test_a_tampered_field_fails_the_signature(service: AuthService) -> None:
    request = _send("A")
    assert request.ext_fields is not None
    request.ext_fields["b"] = "B"  # signed for A, now asks for B
    assert _refusal(service, request) == "check signature failed."


def test_a_disabled_user_is_refused_at_authentication(service: AuthService) -> None:
    service.metadata.update_user(User(ALICE[0], None, None, "disable"))
    with pytest.raises(AuthenticationError, match=r"^User:alice is disabled\.$"):
        service.check(_send("A"), f"{IP}:1")


def test_whitelisted_codes_skip_authentication(tmp_path: Path) -> None:
    service = _service(tmp_path, authentication_whitelist=f" {RequestCode.SEND_MESSAGE_V2} ,34")
    assert _refusal(service, _send("A", keys=None)) == (
        "Authorization failed. Please verify your access rights and try again."
    )


# -- authorization -------------------------------------------------------------------------------------------


def test_each_authorization_remark_of_the_case_table(service: AuthService) -> None:
    assert _refusal(service, _send("B")) == _denied("Topic:B")
    assert _refusal(service, _pull("g-ok", "A")) is None
    assert _refusal(service, _pull("g-other", "A")) == _denied("Group:g-other")
    assert _refusal(service, _pull("g-ok", "B")) == _denied("Topic:B")
    create_user = _request(
        RequestCode.AUTH_CREATE_USER, header=CreateUserRequestHeader(username="mallory"), body=b"{}"
    )
    assert _refusal(service, create_user) == _denied(f"Cluster:{CLUSTER}")


def test_a_heartbeat_needs_its_group_before_its_topics(service: AuthService) -> None:
    def beat(group: str, topics: list[str]) -> RemotingCommand:
        data = HeartbeatData(
            client_id="c1",
            consumer_data_set=[
                ConsumerData(
                    group_name=group, subscription_data_set=[SubscriptionData(topic=t) for t in topics]
                )
            ],
        )
        return _request(RequestCode.HEART_BEAT, {"x": "1"}, body=data.to_json())

    assert _refusal(service, beat("g-no", ["B"])) == _denied("Group:g-no")
    assert _refusal(service, beat("g-ok", ["%RETRY%g-ok", "B"])) == _denied("Topic:B")
    assert _refusal(service, beat("g-ok", ["%RETRY%g-ok", "A"])) is None


def test_super_users_pass_every_authorization(service: AuthService) -> None:
    assert _refusal(service, _send("B", keys=SUPER)) is None
    assert _refusal(service, _send("B", keys=("rmqInner", "inner1"))) is None


def test_a_deny_entry_refuses_with_its_own_remark(service: AuthService) -> None:
    entry = PolicyEntry(Resource.topic("B"), ["Pub"], None, "Deny")
    service.metadata.put_acl(Acl("User:alice", [Policy("Custom", [entry])]))
    assert _refusal(service, _send("B")) == _denied("Topic:B", "the decision is deny.")


def test_source_addresses_limit_an_entry(service: AuthService) -> None:
    entry = PolicyEntry(Resource.topic("C"), ["Pub"], ["10.0.0.0/8"], "Allow")
    service.metadata.put_acl(Acl("User:alice", [Policy("Custom", [entry])]))
    assert _refusal(service, _send("C")) == _denied("Topic:C")
    service.check(_send("C"), "10.1.2.3:4000")


def _entry(resource: str, decision: str = "Allow", actions: list[str] | None = None) -> PolicyEntry:
    parsed = Resource.parse(resource)
    assert parsed is not None
    return PolicyEntry(parsed, actions or ["Pub"], None, decision)


def _decides(*entries: PolicyEntry, topic: str = "orders-eu", kind: str = "Custom") -> str:
    found = deciding_entry(Acl("User:x", [Policy(kind, list(entries))]), Resource.topic(topic), ["Pub"], IP)
    assert found is not None
    return f"{found.resource.key} {found.decision}"


def test_policy_matching_order_is_apaches() -> None:
    # a typed resource decides before "*", whatever their order
    assert _decides(_entry("*", "Deny"), _entry("Topic:orders-eu")) == "Topic:orders-eu Allow"
    # of two prefixes the shorter one decides (5.3.3's comparator sorts by ascending length)
    assert _decides(_entry("Topic:orders-*", "Deny"), _entry("Topic:o*")) == "Topic:o* Allow"
    # at equal rank Allow sorts before Deny (5.3.3's code, despite its comment)
    assert _decides(_entry("Topic:orders-eu", "Deny"), _entry("Topic:orders-eu")) == "Topic:orders-eu Allow"
    # an entry whose actions do not match is not a candidate; "All" covers every action
    assert (
        _decides(_entry("Topic:*", actions=["Sub"]), _entry("Topic:or*", "Deny", ["All"])) == "Topic:or* Deny"
    )


def test_the_default_policy_only_decides_when_the_custom_one_has_no_match() -> None:
    acl = Acl("User:x", [Policy("Custom", [_entry("Topic:other")]), Policy("Default", [_entry("*", "Deny")])])
    found = deciding_entry(acl, Resource.topic("orders"), ["Pub"], IP)
    assert found is not None and found.decision == "Deny"
    acl.policies[0].entries.append(_entry("Topic:orders"))
    found = deciding_entry(acl, Resource.topic("orders"), ["Pub"], IP)
    assert found is not None and found.decision == "Allow"


def test_retry_topics_stand_for_their_group(service: AuthService) -> None:
    # a send back to %RETRY%g-ok is a Sub on group g-ok; the topic is not checked
    retry = _request(RequestCode.SEND_MESSAGE_V2, {"a": "", "b": "%RETRY%g-ok"}, body=b"x")
    assert _refusal(service, retry) is None
    other = _request(RequestCode.SEND_MESSAGE_V2, {"a": "", "b": "%RETRY%g-no"}, body=b"x")
    assert _refusal(service, other) == _denied("Group:g-no")


# -- the admin processors ------------------------------------------------------------------------------------


def _answer(processor: Any, request: RemotingCommand) -> RemotingCommand:
    response = asyncio.run(processor(request, FakeConnection(f"{IP}:1")))
    assert response is not None
    return RemotingCommand.decode(response.encode())


def test_users_are_created_read_updated_listed_and_deleted(service: AuthService) -> None:
    body = UserInfo(password="bobPw1").to_json()
    create = _request(
        RequestCode.AUTH_CREATE_USER, header=CreateUserRequestHeader(username="bob"), body=body, keys=SUPER
    )
    assert _answer(CreateUserProcessor(auth=service), create).code == ResponseCode.SUCCESS
    again = _answer(CreateUserProcessor(auth=service), create)
    assert (again.code, again.remark) == (ResponseCode.NO_PERMISSION, "The user is existed")
    got = _answer(
        GetUserProcessor(auth=service),
        _request(RequestCode.AUTH_GET_USER, header=GetUserRequestHeader(username="bob")),
    )
    assert UserInfo.from_json(got.body) == UserInfo(
        username="bob", password="bobPw1", user_type="Normal", user_status="enable"
    )
    missing = _answer(
        GetUserProcessor(auth=service),
        _request(RequestCode.AUTH_GET_USER, header=GetUserRequestHeader(username="nobody")),
    )
    assert (missing.code, missing.body) == (ResponseCode.SUCCESS, b"")
    blank = _answer(
        CreateUserProcessor(auth=service),
        _request(RequestCode.AUTH_CREATE_USER, header=CreateUserRequestHeader(), body=body),
    )
    assert (blank.code, blank.remark) == (ResponseCode.INVALID_PARAMETER, "The username is blank")
    # a normal user may not make anyone super
    to_super = UserInfo(user_type="super").to_json()
    refused = _answer(
        UpdateUserProcessor(auth=service),
        _request(RequestCode.AUTH_UPDATE_USER, header=UpdateUserRequestHeader(username="bob"), body=to_super),
    )
    assert (refused.code, refused.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The super user can only be update by super user",
    )
    made_super = _answer(
        CreateUserProcessor(auth=service),
        _request(
            RequestCode.AUTH_CREATE_USER, header=CreateUserRequestHeader(username="carol"), body=to_super
        ),
    )
    assert (made_super.code, made_super.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The super user can only be create by super user",
    )
    assert service.metadata.user("carol") is None
    listed = _answer(
        ListUsersProcessor(auth=service),
        _request(RequestCode.AUTH_LIST_USER, header=ListUsersRequestHeader(filter="o")),
    )
    assert [u.username for u in UserInfoList.from_json(listed.body).items] == ["bob", "rocketmq"]
    gone = _answer(
        DeleteUserProcessor(auth=service),
        _request(RequestCode.AUTH_DELETE_USER, header=DeleteUserRequestHeader(username="bob"), keys=SUPER),
    )
    assert gone.code == ResponseCode.SUCCESS and service.metadata.user("bob") is None


def test_acls_are_merged_filtered_and_deleted(service: AuthService) -> None:
    create = CreateAclProcessor(auth=service)
    info = AclInfo.of("User:alice", ["Topic:A", "Group:x-*"], ["Sub", "Bogus"], ["10.0.0.0/8"], "deny")
    done = _answer(
        create,
        _request(
            RequestCode.AUTH_CREATE_ACL,
            header=CreateAclRequestHeader(subject="User:alice"),
            body=info.to_json(),
        ),
    )
    assert done.code == ResponseCode.SUCCESS
    got = _answer(
        GetAclProcessor(auth=service),
        _request(RequestCode.AUTH_GET_ACL, header=GetAclRequestHeader(subject="User:alice")),
    )
    entries = AclInfo.from_json(got.body).policies[0].entries  # type: ignore[index]
    assert [(e.resource, e.actions, e.source_ips, e.decision) for e in entries or []] == [
        ("Topic:A", ["Sub"], ["10.0.0.0/8"], "Deny"),
        ("Group:g-ok", ["Sub"], None, "Allow"),
        ("Group:x-*", ["Sub"], ["10.0.0.0/8"], "Deny"),
    ]
    listed = _answer(
        ListAclsProcessor(auth=service),
        _request(RequestCode.AUTH_LIST_ACL, header=ListAclsRequestHeader(resource_filter="Group")),
    )
    acls = AclInfoList.from_json(listed.body).items
    assert [[e.resource for e in p.entries or []] for p in acls[0].policies or []] == [
        ["Group:g-ok", "Group:x-*"]
    ]
    ghost = AclInfo.of("User:ghost", ["Topic:A"], ["Pub"], None, "Allow")
    refused = _answer(
        create,
        _request(
            RequestCode.AUTH_CREATE_ACL,
            header=CreateAclRequestHeader(subject="User:ghost"),
            body=ghost.to_json(),
        ),
    )
    assert (refused.code, refused.remark) == (
        ResponseCode.NO_PERMISSION,
        "The subject of User:ghost is not exist.",
    )
    bad_ip = AclInfo.of("User:alice", ["Topic:A"], ["Pub"], ["300.1.1.1"], "Allow")
    refused = _answer(
        create,
        _request(
            RequestCode.AUTH_CREATE_ACL,
            header=CreateAclRequestHeader(subject="User:alice"),
            body=bad_ip.to_json(),
        ),
    )
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "The source ip is invalid.")
    delete = DeleteAclProcessor(auth=service)
    one = _answer(
        delete,
        _request(
            RequestCode.AUTH_DELETE_ACL,
            header=DeleteAclRequestHeader(subject="User:alice", resource="Topic:A"),
        ),
    )
    assert one.code == ResponseCode.SUCCESS
    acl = service.metadata.acl("User:alice")
    assert acl is not None and [e.resource.key for e in acl.policies[0].entries] == [
        "Group:g-ok",
        "Group:x-*",
    ]
    service.metadata.delete_user("alice")
    after = _answer(
        GetAclProcessor(auth=service),
        _request(RequestCode.AUTH_GET_ACL, header=GetAclRequestHeader(subject="User:alice")),
    )
    assert (after.code, after.remark) == (ResponseCode.NO_PERMISSION, "The subject is not exist.")


def test_admin_requests_on_a_broker_without_acl2_fail_as_apaches_do() -> None:
    answer = _answer(
        ListUsersProcessor(auth=None), _request(RequestCode.AUTH_LIST_USER, header=ListUsersRequestHeader())
    )
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "An system error occurred, please try again later.",
    )


# -- durability ----------------------------------------------------------------------------------------------


def test_users_and_acls_survive_a_reopen(service: AuthService, tmp_path: Path) -> None:
    reopened = _service(tmp_path)
    user = reopened.metadata.user("alice")
    assert user == User("alice", ALICE[1], "Normal", "enable")
    assert reopened.metadata.user(SUPER[0]) == User(SUPER[0], SUPER[1], "Super", "enable")
    assert _refusal(reopened, _send("B")) == _denied("Topic:B")
    assert _refusal(reopened, _send("A")) is None


def test_a_failed_write_changes_nothing(service: AuthService, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(path: Path, data: bytes, *, durable: bool = True) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(metadata_module, "write_atomically", full_disk)
    body = UserInfo(password="carolPw1").to_json()
    answer = _answer(
        CreateUserProcessor(auth=service),
        _request(
            RequestCode.AUTH_CREATE_USER,
            header=CreateUserRequestHeader(username="carol"),
            body=body,
            keys=SUPER,
        ),
    )
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert service.metadata.user("carol") is None
    with pytest.raises(OSError):
        service.metadata.delete_user("alice")
    assert service.metadata.user("alice") is not None and service.metadata.acl("User:alice") is not None


@pytest.mark.parametrize(
    ("resource", "actions", "ips", "decision", "remark"),
    [
        ("Cluster:x", ["Pub"], None, "Allow", None),
        ("Nothing:x", ["Pub"], None, "Allow", "The resource is null."),
        ("Topic:A", [], None, "Allow", "The actions is empty."),
        ("Topic:A", ["Bogus"], None, "Allow", "The actions is empty."),
        ("Topic:A", ["Any"], None, "Allow", "The actions can not be Any."),
        ("Topic:A", ["Pub"], [" "], "Allow", "The source ip is empty."),
        ("Topic:A", ["Pub"], ["10.0.0.0/33"], "Allow", "The source ip is invalid."),
        ("Topic:A", ["Pub"], None, "Maybe", "The decision is null or illegal."),
    ],
)
def test_each_acl_validation_remark(
    service: AuthService,
    resource: str,
    actions: list[str],
    ips: list[str] | None,
    decision: str,
    remark: str | None,
) -> None:
    info = AclInfo.of("User:alice", [resource], actions, ips, decision)
    request = _request(
        RequestCode.AUTH_UPDATE_ACL, header=UpdateAclRequestHeader(subject="User:alice"), body=info.to_json()
    )
    answer = _answer(UpdateAclProcessor(auth=service), request)
    if remark is None:
        assert answer.code == ResponseCode.SUCCESS, answer.remark
    else:
        assert (answer.code, answer.remark) == (ResponseCode.NO_PERMISSION, remark)


def test_an_acl_without_policies_is_refused(service: AuthService) -> None:
    request = _request(
        RequestCode.AUTH_CREATE_ACL,
        header=CreateAclRequestHeader(subject="User:alice"),
        body=AclInfo(subject="User:alice", policies=[]).to_json(),
    )
    answer = _answer(CreateAclProcessor(auth=service), request)
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert service.metadata.acl("User:alice") is not None  # the existing ACL is untouched
