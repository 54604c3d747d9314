"""The signed-request path under mutation: a broker with ACL on gets a correctly signed send, then thousands
of copies of it with the signature, the ext map or the body changed after signing.

Apache's signature is HMAC-SHA1 over the ext values concatenated in key order, then the body. A mutation
that leaves that content, the AccessKey and the Signature as they were (an extra field with an empty value,
say) is as valid as the original, for Apache's broker as for ours; every other one must be refused before
anything is stored, and none may take the broker down: a correctly signed send still works afterwards, and
the store holds exactly the sends that were accepted.
"""

from __future__ import annotations

import base64
import collections
import logging
import random
import re
import string
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from broker import Broker
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.acl import ACCESS_KEY, SIGNATURE, AclCredentials
from rocketmq_wire.codes import SerializeType
from rocketmq_wire.headers.send import SendMessageRequestHeader
from rocketmq_wire.javahash import ExtFields

log = logging.getLogger("tests.acl_fuzz")

ACL_FILE = """\
accounts:
  - accessKey: producerKey
    secretKey: producerSecret
    defaultTopicPerm: DENY
    topicPerms:
      - Orders=PUB
  - accessKey: otherKey
    secretKey: otherSecret
    defaultTopicPerm: PUB
  - accessKey: adminKey1
    secretKey: adminSecret
    admin: true
"""
PRODUCER = AclCredentials("producerKey", "producerSecret")
ADMIN = AclCredentials("adminKey1", "adminSecret")
TOPIC = "Orders"
QUEUES = 4
MUTATIONS = 2000
SEED = 20261127

Fields = dict[str, str]
Mutation = Callable[[random.Random, Fields, bytes], tuple[Fields, bytes]]


@pytest.fixture
async def broker(tmp_path: Path) -> AsyncIterator[Broker]:
    acl_file = tmp_path / "plain_acl.yml"
    acl_file.write_text(ACL_FILE)
    async with running_broker(tmp_path / "store", acl_enable=True, acl_file=str(acl_file)) as running:
        yield running


def _send_header(queue_id: int) -> SendMessageRequestHeader:
    return SendMessageRequestHeader(
        producer_group="FuzzPg",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1_700_000_000_000,
        flag=0,
        properties="KEYS\x01k\x02TAGS\x01t\x02",
    )


def _signed_send(body: bytes) -> tuple[Fields, bytes]:
    command = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, _send_header(1).to_v2(), body)
    PRODUCER.sign(command)
    return command.fields(), body


def _content(fields: Fields, body: bytes) -> bytes:
    """What the signature covers, written out independently of the code under test."""
    return b"".join(fields[key].encode() for key in sorted(fields) if key != SIGNATURE) + body


def _reason(remark: str) -> str:
    """A refusal's remark without the account, topic or Java frame it names: what kind of refusal it is."""
    text = remark.split(", org.apache", 1)[0].removeprefix("org.apache.rocketmq.acl.common.AclException: ")
    return re.sub(r"(accessKey=|Topic:|is not a decimal integer).*", r"\1…", text)[:60]


def _junk(rng: random.Random, size: int) -> str:
    alphabet = string.printable + "é中\u2028\x00\x01"
    return "".join(rng.choice(alphabet) for _ in range(size))


# -- mutations: each returns new (fields, body) ----------------------------------------------------------


def signature_char(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    sig = fields.get(SIGNATURE, "")
    if not sig:
        return {**fields, SIGNATURE: "A"}, body
    at = rng.randrange(len(sig))
    replacement = rng.choice([c for c in string.ascii_letters + string.digits + "+/=" if c != sig[at]])
    return {**fields, SIGNATURE: sig[:at] + replacement + sig[at + 1 :]}, body


def signature_other(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    sig = fields.get(SIGNATURE, "")
    choices = [
        "",
        sig[: rng.randrange(len(sig) + 1)],
        base64.b64encode(rng.randbytes(20)).decode(),
        _junk(rng, rng.randrange(1, 64)),
        "A" * rng.choice([1, 1000, 20_000]),
        sig.lower(),
    ]
    return {**fields, SIGNATURE: rng.choice(choices)}, body


def signature_dropped(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    return {k: v for k, v in fields.items() if k != SIGNATURE}, body


def access_key(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    choices = ["", "otherKey", "adminKey1", "PRODUCERKEY", "producerKey ", _junk(rng, rng.randrange(1, 30))]
    if rng.random() < 0.2:
        return {k: v for k, v in fields.items() if k != ACCESS_KEY}, body
    return {**fields, ACCESS_KEY: rng.choice(choices)}, body


def value_changed(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    key = rng.choice([k for k in fields if k != SIGNATURE])
    value = fields[key]
    choices = [value + rng.choice("0a "), value[:-1], "", _junk(rng, rng.randrange(1, 40)), value.upper()]
    if key == "b":  # the topic
        choices += ["Payments", "orders", "%RETRY%FuzzPg", "TBW102"]
    return {**fields, key: rng.choice(choices)}, body


def field_added(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    key = rng.choice(["z", "remark", "Signature2", "accesskey", "SecurityToken", _junk(rng, 5)])
    value = rng.choice(["", "x", _junk(rng, rng.randrange(1, 20))])
    return {**fields, key: value}, body


def field_dropped(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    key = rng.choice([k for k in fields if k not in (SIGNATURE, ACCESS_KEY)])
    return {k: v for k, v in fields.items() if k != key}, body


def body_changed(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    data = bytearray(body)
    kind = rng.randrange(4)
    if kind == 0 and data:
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1:
        data += rng.randbytes(rng.randrange(1, 8))
    elif kind == 2:
        del data[rng.randrange(len(data) + 1) :]
    else:
        data = bytearray()
    return fields, bytes(data)


def value_moved(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    """One character moved across the boundary of two neighbouring values: the concatenation Apache signs
    is unchanged, so this is the mutation a value-only signature cannot see."""
    keys = sorted(k for k in fields if k != SIGNATURE)
    at = rng.randrange(len(keys) - 1)
    left, right = keys[at], keys[at + 1]
    if not fields[left]:
        return fields, body
    return {**fields, left: fields[left][:-1], right: fields[left][-1] + fields[right]}, body


def resigned(rng: random.Random, fields: Fields, body: bytes) -> tuple[Fields, bytes]:
    """Re-signed after a change, with a secret that is not the account's."""
    changed, body = value_changed(rng, fields, body)
    command = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None, body, ext_fields=changed)
    AclCredentials(
        changed.get(ACCESS_KEY, "producerKey"), rng.choice(["", "producerSecre", "otherSecret"])
    ).sign(command)
    return command.fields(), body


MUTATIONS_BY_NAME: dict[str, Mutation] = {
    mutation.__name__: mutation
    for mutation in (
        signature_char,
        signature_other,
        signature_dropped,
        access_key,
        value_changed,
        field_added,
        field_dropped,
        body_changed,
        value_moved,
        resigned,
    )
}


async def _send(
    client: BrokerClient, fields: Fields, body: bytes, serialize: SerializeType
) -> RemotingCommand:
    command = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, None, body, ext_fields=ExtFields(fields))
    command.serialize_type = serialize
    return await client.client.invoke(client.address, command, client.timeout_ms)


def _stored(broker: Broker) -> int:
    return sum(broker.store.get_max_offset(TOPIC, queue) for queue in range(QUEUES))


async def test_mutated_signed_sends_are_refused_and_the_broker_lives_on(broker: Broker) -> None:
    rng = random.Random(SEED)
    async with BrokerClient(broker.address) as client:
        command = RemotingCommand.request(
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            None,
            ext_fields={
                "topic": TOPIC,
                "defaultTopic": "TBW102",
                "readQueueNums": str(QUEUES),
                "writeQueueNums": str(QUEUES),
                "perm": "6",
                "topicFilterType": "SINGLE_TAG",
                "topicSysFlag": "0",
                "order": "false",
            },
        )
        ADMIN.sign(command)
        answer = await client.client.invoke(client.address, command, client.timeout_ms)
        assert answer.code == ResponseCode.SUCCESS, answer.remark

        original, body = _signed_send(b"fuzz baseline body")
        baseline = await _send(client, original, body, SerializeType.JSON)
        assert baseline.code == ResponseCode.SUCCESS, baseline.remark
        accepted = 1
        outcomes: collections.Counter[str] = collections.Counter()
        remarks: collections.Counter[str] = collections.Counter()
        for _ in range(MUTATIONS):
            name = rng.choice(list(MUTATIONS_BY_NAME))
            fields, mutated_body = MUTATIONS_BY_NAME[name](rng, original, body)
            if rng.random() < 0.3:  # a second mutation on top
                fields, mutated_body = MUTATIONS_BY_NAME[rng.choice(list(MUTATIONS_BY_NAME))](
                    rng, fields, mutated_body
                )
            if (fields, mutated_body) == (original, body):
                outcomes["unchanged (not sent)"] += 1
                continue
            same_signed_content = (
                _content(fields, mutated_body) == _content(original, body)
                and fields.get(ACCESS_KEY) == original[ACCESS_KEY]
                and fields.get(SIGNATURE) == original[SIGNATURE]
            )
            serialize = rng.choice([SerializeType.JSON, SerializeType.ROCKETMQ])
            answer = await _send(client, fields, mutated_body, serialize)
            if answer.code == ResponseCode.SUCCESS:
                assert same_signed_content, f"{name} was accepted: {fields!r} {mutated_body!r}"
                accepted += 1
                outcomes["accepted: signed content unchanged"] += 1
            else:
                outcomes[f"refused, code {answer.code}"] += 1
                remarks[_reason(answer.remark or "")] += 1
        final, final_body = _signed_send(b"fuzz final body")
        after = await _send(client, final, final_body, SerializeType.ROCKETMQ)
        assert after.code == ResponseCode.SUCCESS, after.remark
        accepted += 1
    assert _stored(broker) == accepted
    log.info("%d mutations: %s; remarks %s", MUTATIONS, dict(outcomes), remarks.most_common(8))
    assert sum(n for key, n in outcomes.items() if key.startswith("refused")) > MUTATIONS // 2
