"""Request-reply (Java's ``DefaultMQProducer.request``): the properties that tie a reply to its request.

A requester stamps its request with a correlation id, its own client id (where the reply must be pushed)
and a time to live, in that order after the message's own properties. The broker that stores the request
adds its cluster (``CLUSTER``). The responder answers with a message to ``<cluster>_REPLY_TOPIC`` built as
Java's ``MessageUtil.createReplyMessage`` builds it: a bare message (not even the wait flag) carrying the
reply flag and the request's three stamps, sent with SEND_REPLY_MESSAGE_V2; a broker of that cluster pushes
it to the requester with PUSH_REPLY_MESSAGE_TO_CLIENT.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import const
from rocketmq_wire.topics import reply_topic

#: ``MSG_TYPE`` of a reply (Java's ``MixAll.REPLY_MESSAGE_FLAG``).
REPLY_MESSAGE_FLAG: Final = "reply"


def request_properties(correlation_id: str, client_id: str, ttl_ms: int) -> dict[str, str]:
    """What ``prepareSendRequest`` adds to a request, in its order."""
    return {
        const.CORRELATION_ID: correlation_id,
        const.REPLY_TO_CLIENT: client_id,
        const.TTL: str(ttl_ms),
    }


def reply_target(request: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """The topic and properties of a reply to a request with these properties, as ``createReplyMessage``
    writes them; a request no broker stamped with its cluster cannot be answered (Java refuses it too)."""
    cluster = request.get(const.CLUSTER)
    if cluster is None:
        raise CodecError(f"cannot reply: the request message has no {const.CLUSTER} property")
    properties = {const.MSG_TYPE: REPLY_MESSAGE_FLAG}
    for name in (const.CORRELATION_ID, const.REPLY_TO_CLIENT, const.TTL):
        value = request.get(name)
        if value is not None:  # Java puts a null too, which its map then simply lacks
            properties[name] = value
    return reply_topic(cluster), properties


def is_reply(properties: Mapping[str, str]) -> bool:
    return properties.get(const.MSG_TYPE) == REPLY_MESSAGE_FLAG
