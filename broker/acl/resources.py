"""What a request needs: the topics and groups it touches, with the permission each one needs, worked out per
request code exactly as Apache 4.9.8's ``PlainAccessValidator.parse`` does; and the bytes its signature
covers.

A group is named by its retry topic (``%RETRY%group``), which is how the checker tells groups from
topics: a send to a retry topic, a send-back, and a consumer's group all need SUB on the group. Codes that
are not listed need no topic or group permission -- only a valid signature (and, for the admin codes, an
admin account). That includes LITE_PULL_MESSAGE, END_TRANSACTION, LOCK/UNLOCK_BATCH_MQ and
QUERY_CONSUMER_OFFSET, which 4.9.8 does not inspect either. SEND_BATCH_MESSAGE is read like
SEND_MESSAGE_V2, as Apache does from 5.0 on (4.9.8 forgets it, which let any signed account batch-send
to any topic).
"""

from __future__ import annotations

from collections.abc import Callable

from broker.acl.errors import AclError
from broker.acl.permission import PUB, SUB
from rocketmq_wire.acl import SIGNATURE
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.consumer import GetConsumerListByGroupRequestHeader, UnregisterClientRequestHeader
from rocketmq_wire.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketmq_wire.headers.query import UNIQUE_KEY_QUERY
from rocketmq_wire.topics import is_retry_topic, retry_topic

#: Where Apache's parser rethrows what went wrong reading a request (a refusal's remark names it).
PARSE_FRAME = "org.apache.rocketmq.acl.plain.PlainAccessValidator.parse(PlainAccessValidator.java:134)"

Needs = dict[str, int]


def _group(group: str | None) -> str | None:
    return None if group is None else retry_topic(group)


def _add(needs: Needs, resource: str | None, perm: int) -> None:
    """Record a need; a missing name adds nothing, and a later need for the same name replaces the
    earlier one (Apache keeps them in a map)."""
    if resource is not None:
        needs[resource] = perm


def _send(topic_key: str, group_key: str) -> Callable[[dict[str, str], RemotingCommand, Needs], None]:
    def need(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
        topic = fields.get(topic_key)
        if topic is not None and is_retry_topic(topic):
            _add(needs, _group(fields.get(group_key)), SUB)
        else:
            _add(needs, topic, PUB)

    return need


def _send_back(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
    _add(needs, _group(fields.get("group")), SUB)


def _pull(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
    _add(needs, fields.get("topic"), SUB)
    _add(needs, _group(fields.get("consumerGroup")), SUB)


def _query(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
    _add(needs, fields.get("topic"), SUB)


def _heartbeat(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
    data = HeartbeatData.from_json(request.body)
    for consumer in data.consumer_data_set:
        _add(needs, _group(consumer.group_name), SUB)
        for subscription in consumer.subscription_data_set:
            _add(needs, subscription.topic, SUB)


def _unregister(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
    header = UnregisterClientRequestHeader.from_ext(fields)
    _add(needs, _group(header.consumer_group), SUB)


def _consumer_list(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
    header = GetConsumerListByGroupRequestHeader.from_ext(fields)
    _add(needs, _group(header.consumer_group), SUB)


def _update_offset(fields: dict[str, str], request: RemotingCommand, needs: Needs) -> None:
    header = UpdateConsumerOffsetRequestHeader.from_ext(fields)
    _add(needs, _group(header.consumer_group), SUB)
    _add(needs, header.topic, SUB)


_BY_CODE: dict[int, Callable[[dict[str, str], RemotingCommand, Needs], None]] = {
    RequestCode.SEND_MESSAGE: _send("topic", "group"),
    RequestCode.SEND_MESSAGE_V2: _send("b", "a"),
    RequestCode.SEND_BATCH_MESSAGE: _send("b", "a"),
    RequestCode.CONSUMER_SEND_MSG_BACK: _send_back,
    RequestCode.PULL_MESSAGE: _pull,
    RequestCode.QUERY_MESSAGE: _query,
    RequestCode.HEART_BEAT: _heartbeat,
    RequestCode.UNREGISTER_CLIENT: _unregister,
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: _consumer_list,
    RequestCode.UPDATE_CONSUMER_OFFSET: _update_offset,
}


def needs_of(request: RemotingCommand, fields: dict[str, str] | None = None) -> Needs:
    """Resource -> needed permission for ``request`` (topics by name, groups as ``%RETRY%group``).

    A request Apache could not read (a heartbeat body that is not JSON, a header missing a required field)
    raises :class:`AclError` with the reader's message, as Apache's parser does.
    """
    reader = _BY_CODE.get(request.code)
    needs: Needs = {}
    if reader is None:
        return needs
    try:
        reader(request.fields() if fields is None else fields, request, needs)
    except CodecError as exc:
        raise AclError(str(exc), PARSE_FRAME) from None
    return needs


def signed_fields(fields: dict[str, str]) -> dict[str, str]:
    """The entries a broker recomputes the signature over: all but ``Signature`` and ``_UNIQUE_KEY_QUERY``.

    Apache's client hook signs ``_UNIQUE_KEY_QUERY`` too, so a query by unique key signed by Apache's own
    client fails this check on Apache's broker; it is mirrored, not fixed, so that the two agree.
    """
    return {key: value for key, value in fields.items() if key != SIGNATURE and key != UNIQUE_KEY_QUERY}
