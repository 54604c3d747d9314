"""ACL decisions without a network: parsing plain_acl.yml, what each request code needs, signatures."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.acl import AclError, AclRules
from broker.acl.permission import PUB, SUB
from broker.acl.plain_file import parse_text, read_file
from broker.acl.resources import needs_of
from rocketmq_wire import RemotingCommand, RequestCode
from rocketmq_wire.acl import AclCredentials
from rocketmq_wire.bodies.heartbeat import ConsumerData, HeartbeatData, SubscriptionData
from rocketmq_wire.headers.query import UNIQUE_KEY_QUERY

PLAIN_ACL = """
globalWhiteRemoteAddresses:
  - 10.10.103.*
  - 192.168.0.*

accounts:
  - accessKey: RocketMQ
    secretKey: 12345678
    whiteRemoteAddress:
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - topicA=DENY
      - topicB=PUB|SUB
      - topicC=SUB
    groupPerms:
      - groupA=DENY
      - groupB=PUB|SUB
      - groupC=SUB

  - accessKey: rocketmq2
    secretKey: 12345678
    whiteRemoteAddress: 192.168.1.*
    admin: true
"""

CLIENT = "127.0.0.1:50123"
USER = AclCredentials("RocketMQ", "12345678")
ADMIN = AclCredentials("rocketmq2", "12345678")


@pytest.fixture
def rules() -> AclRules:
    return AclRules.compile(parse_text(PLAIN_ACL))


def signed(
    code: int, fields: dict[str, str], body: bytes = b"", who: AclCredentials = USER
) -> RemotingCommand:
    """A request as the broker receives it: signed by the client, then encoded and decoded."""
    command = RemotingCommand.request(code, body=body, ext_fields=dict(fields))
    who.sign(command)
    return RemotingCommand.decode(command.encode())


def refusal(rules: AclRules, request: RemotingCommand, client: str = CLIENT) -> str:
    with pytest.raises(AclError) as caught:
        rules.check(request, client)
    return caught.value.message


# -- the file ----------------------------------------------------------------------------------------------


def test_apaches_sample_file_parses(rules: AclRules) -> None:
    parsed = parse_text(PLAIN_ACL)
    assert parsed.global_white_addresses == ["10.10.103.*", "192.168.0.*"]
    first = parsed.accounts[0]
    assert first.secret_key == "12345678"  # a YAML number, read as Java reads it: a string
    assert first.topic_perms == ["topicA=DENY", "topicB=PUB|SUB", "topicC=SUB"]
    assert set(rules.accounts) == {"RocketMQ", "rocketmq2"}
    account = rules.accounts["RocketMQ"]
    assert account.perms == {
        "topicA": 1,
        "topicB": PUB | SUB,
        "topicC": SUB,
        "%RETRY%groupA": 1,
        "%RETRY%groupB": PUB | SUB,
        "%RETRY%groupC": SUB,
    }
    assert rules.accounts["rocketmq2"].admin
    assert rules.accounts["rocketmq2"].perms is None


def test_empty_and_missing_files_have_no_rules(tmp_path: Path) -> None:
    assert parse_text("").accounts == []
    assert read_file(tmp_path / "absent.yml").accounts == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("accounts: [\n", "not valid YAML"),
        ("- just\n- a list\n", "expected a mapping"),
        ("accounts: 5\n", "accounts must be a list"),
        ("accounts:\n  - accessKey: short\n    secretKey: 12345678\n", "length should longer than 6"),
        ("accounts:\n  - accessKey: RocketMQ\n", "secretKey=null"),
        (
            "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    topicPerms: [topicA]\n",
            "Parse resource",
        ),
        ("accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    admin: maybe\n", "true or false"),
        ("globalWhiteRemoteAddresses: [300.1.1.*]\n", "Netaddress"),
        (
            "accounts:\n  - accessKey: RocketMQ\n    secretKey: 12345678\n    whiteRemoteAddress: 1.2.3\n",
            "Netaddress",
        ),
        ("dataVersion: [{counter: x}]\n", "must be numbers"),
    ],
)
def test_bad_files_are_refused_clearly(text: str, message: str) -> None:
    with pytest.raises(AclError, match=message.replace("|", r"\|").replace("[", r"\[")):
        AclRules.compile(parse_text(text, "plain_acl.yml"))


def test_a_bad_file_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text("accounts: [\n")
    with pytest.raises(AclError, match=str(path)):
        read_file(path)


def test_the_first_definition_of_a_key_counts() -> None:
    text = PLAIN_ACL + "  - accessKey: RocketMQ\n    secretKey: abcdefgh\n    admin: true\n"
    rules = AclRules.compile(parse_text(text))
    assert rules.accounts["RocketMQ"].secret_key == "12345678"


# -- what each request code needs ---------------------------------------------------------------------------


def need(code: int, fields: dict[str, str], body: bytes = b"") -> dict[str, int]:
    return needs_of(RemotingCommand.request(code, body=body, ext_fields=fields))


def test_needs_per_request_code() -> None:
    assert need(RequestCode.SEND_MESSAGE, {"topic": "T", "producerGroup": "P"}) == {"T": PUB}
    assert need(RequestCode.SEND_MESSAGE, {"topic": "%RETRY%G", "group": "G"}) == {"%RETRY%G": SUB}
    assert need(RequestCode.SEND_MESSAGE_V2, {"b": "T", "a": "P"}) == {"T": PUB}
    assert need(RequestCode.SEND_MESSAGE_V2, {"b": "%RETRY%G", "a": "G"}) == {"%RETRY%G": SUB}
    assert need(RequestCode.SEND_BATCH_MESSAGE, {"b": "T", "a": "P"}) == {"T": PUB}
    assert need(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "G", "offset": "1"}) == {"%RETRY%G": SUB}
    assert need(RequestCode.PULL_MESSAGE, {"topic": "T", "consumerGroup": "G"}) == {"T": SUB, "%RETRY%G": SUB}
    assert need(RequestCode.QUERY_MESSAGE, {"topic": "T", "key": "k"}) == {"T": SUB}
    assert need(RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "consumerGroup": "G"}) == {"%RETRY%G": SUB}
    assert need(RequestCode.UNREGISTER_CLIENT, {"clientID": "c", "producerGroup": "P"}) == {}
    assert need(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "G"}) == {"%RETRY%G": SUB}
    offset = {"consumerGroup": "G", "topic": "T", "queueId": "0", "commitOffset": "5"}
    assert need(RequestCode.UPDATE_CONSUMER_OFFSET, offset) == {"%RETRY%G": SUB, "T": SUB}
    # Apache inspects nothing else: these need a signature only
    for code in (
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.END_TRANSACTION,
        RequestCode.LOCK_BATCH_MQ,
        RequestCode.UNLOCK_BATCH_MQ,
        RequestCode.LITE_PULL_MESSAGE,
    ):
        assert need(code, {"topic": "T", "consumerGroup": "G"}) == {}


def test_heartbeat_needs_each_consumer_group_and_subscription() -> None:
    data = HeartbeatData(
        client_id="c1",
        consumer_data_set=[
            ConsumerData(group_name="G1", subscription_data_set=[SubscriptionData(topic="T1")]),
            ConsumerData(
                group_name="G2",
                subscription_data_set=[SubscriptionData(topic="T2"), SubscriptionData(topic="T3")],
            ),
        ],
    )
    needs = need(RequestCode.HEART_BEAT, {}, data.to_json())
    assert needs == {"%RETRY%G1": SUB, "T1": SUB, "%RETRY%G2": SUB, "T2": SUB, "T3": SUB}


def test_an_unreadable_request_is_refused_as_apache_refuses_it() -> None:
    with pytest.raises(AclError) as caught:
        need(RequestCode.HEART_BEAT, {}, b"not json")
    assert "PlainAccessValidator.parse" in caught.value.remark()
    with pytest.raises(AclError, match="consumerGroup"):
        need(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {})


# -- decisions ----------------------------------------------------------------------------------------------


def test_explicit_and_default_permissions(rules: AclRules) -> None:
    rules.check(signed(RequestCode.SEND_MESSAGE_V2, {"b": "topicB", "a": "P"}), CLIENT)
    assert refusal(rules, signed(RequestCode.SEND_MESSAGE_V2, {"b": "topicA", "a": "P"})) == (
        "No default permission for topic:topicA"
    )
    assert refusal(rules, signed(RequestCode.SEND_MESSAGE_V2, {"b": "topicC", "a": "P"})) == (
        "No default permission for topic:topicC"
    )
    # not listed: defaultTopicPerm DENY
    assert "topic:other" in refusal(rules, signed(RequestCode.SEND_MESSAGE_V2, {"b": "other", "a": "P"}))


def test_retry_topics_follow_their_groups_permission(rules: AclRules) -> None:
    rules.check(signed(RequestCode.SEND_MESSAGE_V2, {"b": "%RETRY%groupB", "a": "groupB"}), CLIENT)
    rules.check(signed(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "groupC", "offset": "1"}), CLIENT)
    # not listed: defaultGroupPerm SUB
    rules.check(signed(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "unlisted", "offset": "1"}), CLIENT)
    message = refusal(rules, signed(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "groupA", "offset": "1"}))
    assert message == "No default permission for group:groupA"


def test_pull_needs_topic_and_group(rules: AclRules) -> None:
    rules.check(signed(RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupC"}), CLIENT)
    assert "group:groupA" in refusal(
        rules, signed(RequestCode.PULL_MESSAGE, {"topic": "topicC", "consumerGroup": "groupA"})
    )
    assert "topic:topicA" in refusal(
        rules, signed(RequestCode.PULL_MESSAGE, {"topic": "topicA", "consumerGroup": "groupC"})
    )


def test_admin_codes_need_an_admin_account(rules: AclRules) -> None:
    create = {"topic": "topicB", "readQueueNums": "4", "writeQueueNums": "4", "perm": "6"}
    message = refusal(rules, signed(RequestCode.UPDATE_AND_CREATE_TOPIC, create))
    assert message == "Need admin permission for request code=17, but accessKey=RocketMQ is not"
    rules.check(signed(RequestCode.UPDATE_AND_CREATE_TOPIC, create, who=ADMIN), CLIENT)
    # an admin account without explicit permissions may touch anything
    rules.check(signed(RequestCode.SEND_MESSAGE_V2, {"b": "anything", "a": "P"}, who=ADMIN), CLIENT)
    # ACL administration is admin-only here (Apache 4.9.x lets any signed account do it)
    account = {"accessKey": "newAccount", "secretKey": "newSecret1", "admin": "true"}
    assert "Need admin permission" in refusal(
        rules, signed(RequestCode.UPDATE_AND_CREATE_ACL_CONFIG, account)
    )
    rules.check(signed(RequestCode.GET_BROKER_CLUSTER_ACL_INFO, {}), CLIENT)


def test_an_admin_with_explicit_permissions_is_checked_like_anyone() -> None:
    text = (
        "accounts:\n"
        "  - accessKey: adminKey1\n    secretKey: 12345678\n    admin: true\n    topicPerms: [x=PUB]\n"
    )
    rules = AclRules.compile(parse_text(text))
    boss = AclCredentials("adminKey1", "12345678")
    rules.check(signed(RequestCode.SEND_MESSAGE_V2, {"b": "x", "a": "P"}, who=boss), CLIENT)
    with pytest.raises(AclError, match="topic:y"):
        rules.check(signed(RequestCode.SEND_MESSAGE_V2, {"b": "y", "a": "P"}, who=boss), CLIENT)


def test_trace_topic_is_always_publishable(rules: AclRules) -> None:
    rules.check(signed(RequestCode.SEND_MESSAGE_V2, {"b": "RMQ_SYS_TRACE_TOPIC", "a": "P"}), CLIENT)


def test_codes_without_needs_only_need_a_signature(rules: AclRules) -> None:
    rules.check(
        signed(RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "groupA", "topic": "topicA"}), CLIENT
    )
    rules.check(
        signed(RequestCode.END_TRANSACTION, {"producerGroup": "P", "tranStateTableOffset": "1"}), CLIENT
    )


# -- signatures and white lists ---------------------------------------------------------------------------


def test_signature_refusals(rules: AclRules) -> None:
    fields = {"b": "topicB", "a": "P"}
    wrong = AclCredentials("RocketMQ", "wrong-secret")
    assert refusal(rules, signed(RequestCode.SEND_MESSAGE_V2, fields, who=wrong)) == (
        "Check signature failed for accessKey=RocketMQ"
    )
    unknown = AclCredentials("Stranger", "12345678")
    assert (
        refusal(rules, signed(RequestCode.SEND_MESSAGE_V2, fields, who=unknown))
        == "No acl config for Stranger"
    )
    unsigned = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext_fields=fields)
    assert refusal(rules, unsigned) == "No accessKey is configured"
    no_signature = RemotingCommand.request(
        RequestCode.SEND_MESSAGE_V2, ext_fields={**fields, "AccessKey": "RocketMQ"}
    )
    assert refusal(rules, no_signature) == "Check signature failed for accessKey=RocketMQ"


def test_a_changed_body_or_field_breaks_the_signature(rules: AclRules) -> None:
    request = signed(RequestCode.SEND_MESSAGE_V2, {"b": "topicB", "a": "P"}, b"body")
    rules.check(request, CLIENT)
    request.body = b"other body"
    assert "Check signature failed" in refusal(rules, request)
    tampered = signed(RequestCode.SEND_MESSAGE_V2, {"b": "topicB", "a": "P"})
    assert tampered.ext_fields is not None
    tampered.ext_fields["a"] = "Q"
    assert "Check signature failed" in refusal(rules, tampered)


def test_unique_key_query_flag_is_left_out_of_the_signature(rules: AclRules) -> None:
    request = RemotingCommand.request(RequestCode.QUERY_MESSAGE, ext_fields={"topic": "topicC", "key": "k"})
    USER.sign(request)
    assert request.ext_fields is not None
    request.ext_fields[UNIQUE_KEY_QUERY] = "true"  # added after signing: the broker must not count it
    rules.check(RemotingCommand.decode(request.encode()), CLIENT)


def test_a_request_without_ext_fields_is_not_read(rules: AclRules) -> None:
    heartbeat = RemotingCommand.request(RequestCode.HEART_BEAT, body=b"not json")
    rules.check(heartbeat, "192.168.0.17:40000")  # white-listed: Apache never parses its body
    assert refusal(rules, heartbeat) == "No accessKey is configured"


def test_global_white_list_needs_no_key(rules: AclRules) -> None:
    anonymous = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, ext_fields={"b": "topicA", "a": "P"})
    rules.check(anonymous, "192.168.0.17:40000")
    rules.check(anonymous, "10.10.103.1:40000")
    assert refusal(rules, anonymous, "192.168.2.17:40000") == "No accessKey is configured"


def test_an_accounts_white_address_skips_signature_and_permissions(rules: AclRules) -> None:
    forged = AclCredentials("rocketmq2", "not-the-secret")
    request = signed(RequestCode.SEND_MESSAGE_V2, {"b": "topicA", "a": "P"}, who=forged)
    rules.check(request, "192.168.1.20:40000")  # Apache trusts the account's white host outright
    assert "Check signature failed" in refusal(rules, request, "192.168.2.20:40000")


def test_refusal_remark_is_apaches() -> None:
    error = AclError("No acl config for x", "org.apache.rocketmq.acl.plain.X.validate(X.java:1)")
    assert error.remark() == (
        "org.apache.rocketmq.acl.common.AclException: No acl config for x, "
        "org.apache.rocketmq.acl.plain.X.validate(X.java:1)"
    )
