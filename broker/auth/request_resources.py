"""What each request needs under ACL 2.0: the resources it touches and the actions it takes on them.

Apache 5.3.3 spells out the client-facing codes (sends, pulls, heartbeats, offsets, locks) and reads the
rest from annotations on its request headers: a resource type and actions for the whole request, and the
header fields naming topics, groups or the cluster. The annotation facts are kept here as a table keyed by
request code. A code with no entry, or whose fields are all absent and whose resource is not the cluster,
needs nothing: Apache authorizes nothing for it either. Every need is checked in order; the first refusal
answers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from broker.auth.errors import AuthorizationError
from broker.auth.model import RETRY_PREFIX, Pattern, Resource
from rocketmq_wire import RemotingCommand, RequestCode
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.bodies.lock import LockBatchRequestBody
from rocketmq_wire.errors import CodecError


@dataclasses.dataclass(frozen=True, slots=True)
class Need:
    resource: Resource
    actions: tuple[str, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Annotated:
    """A header's annotation: whole-request resource type (``Cluster`` or none), actions, and the fields
    naming resources in declaration order as (field, type, splitter)."""

    cluster: bool
    actions: tuple[str, ...]
    fields: tuple[tuple[str, str, str | None], ...] = ()


T, G, C = "Topic", "Group", "Cluster"
_CLUSTER_GET = Annotated(True, ("Get",))
_CLUSTER_UPDATE = Annotated(True, ("Update",))

#: Apache 5.3.3's header annotations for the codes its switch does not spell out.
ANNOTATED: Mapping[int, Annotated] = {
    RequestCode.AUTH_CREATE_USER: _CLUSTER_UPDATE,
    RequestCode.AUTH_UPDATE_USER: _CLUSTER_UPDATE,
    RequestCode.AUTH_DELETE_USER: _CLUSTER_UPDATE,
    RequestCode.AUTH_GET_USER: _CLUSTER_GET,
    RequestCode.AUTH_LIST_USER: _CLUSTER_GET,
    RequestCode.AUTH_CREATE_ACL: _CLUSTER_UPDATE,
    RequestCode.AUTH_UPDATE_ACL: _CLUSTER_UPDATE,
    RequestCode.AUTH_DELETE_ACL: _CLUSTER_UPDATE,
    RequestCode.AUTH_GET_ACL: _CLUSTER_GET,
    RequestCode.AUTH_LIST_ACL: _CLUSTER_GET,
    RequestCode.ADD_WRITE_PERM_OF_BROKER: _CLUSTER_UPDATE,
    RequestCode.WIPE_WRITE_PERM_OF_BROKER: _CLUSTER_UPDATE,
    RequestCode.GET_ALL_PRODUCER_INFO: _CLUSTER_GET,
    RequestCode.GET_BROKER_CONSUME_STATS: _CLUSTER_GET,
    RequestCode.GET_PRODUCER_CONNECTION_LIST: _CLUSTER_GET,
    RequestCode.VIEW_BROKER_STATS_DATA: _CLUSTER_GET,
    RequestCode.RESET_MASTER_FLUSH_OFFSET: _CLUSTER_UPDATE,
    RequestCode.EXCHANGE_BROKER_HA_INFO: _CLUSTER_UPDATE,
    RequestCode.NOTIFY_BROKER_ROLE_CHANGED: _CLUSTER_UPDATE,
    RequestCode.NOTIFY_MIN_BROKER_ID_CHANGE: _CLUSTER_UPDATE,
    RequestCode.PUT_KV_CONFIG: _CLUSTER_UPDATE,
    RequestCode.DELETE_KV_CONFIG: _CLUSTER_UPDATE,
    RequestCode.GET_KV_CONFIG: _CLUSTER_GET,
    RequestCode.GET_KVLIST_BY_NAMESPACE: _CLUSTER_GET,
    RequestCode.QUERY_DATA_VERSION: Annotated(True, ("Get",), (("clusterName", C, None),)),
    RequestCode.ACK_MESSAGE: Annotated(False, ("Sub",), (("consumerGroup", G, None), ("topic", T, None))),
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: Annotated(
        False, ("Sub",), (("consumerGroup", G, None), ("topic", T, None))
    ),
    RequestCode.CHECK_TRANSACTION_STATE: Annotated(False, ("Pub",), (("topic", T, None),)),
    RequestCode.CLONE_GROUP_OFFSET: Annotated(
        False, ("Update",), (("destGroup", G, None), ("topic", T, None))
    ),
    RequestCode.CONSUME_MESSAGE_DIRECTLY: Annotated(
        False, ("Sub",), (("consumerGroup", G, None), ("topic", T, None))
    ),
    RequestCode.DELETE_SUBSCRIPTIONGROUP: Annotated(False, ("Delete",), (("groupName", G, None),)),
    RequestCode.DELETE_TOPIC_IN_BROKER: Annotated(False, ("Delete",), (("topic", T, None),)),
    RequestCode.GET_BROKER_MEMBER_GROUP: Annotated(False, ("Get",), (("clusterName", C, None),)),
    RequestCode.GET_CONSUMER_CONNECTION_LIST: Annotated(False, ("Get",), (("consumerGroup", G, None),)),
    RequestCode.GET_CONSUMER_RUNNING_INFO: Annotated(False, ("Get",), (("consumerGroup", G, None),)),
    RequestCode.GET_CONSUME_STATS: Annotated(
        False, ("Get",), (("consumerGroup", G, None), ("topic", T, None), ("topicList", T, ";"))
    ),
    RequestCode.GET_EARLIEST_MSG_STORETIME: Annotated(False, ("Get",), (("topic", T, None),)),
    RequestCode.GET_MAX_OFFSET: Annotated(False, ("Get",), (("topic", T, None),)),
    RequestCode.GET_MIN_OFFSET: Annotated(False, ("Get",), (("topic", T, None),)),
    RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: Annotated(False, ("Get",), (("group", G, None),)),
    RequestCode.GET_TOPIC_CONFIG: Annotated(False, ("Get",), (("topic", T, None),)),
    RequestCode.GET_TOPIC_STATS_INFO: Annotated(False, ("Get",), (("topic", T, None),)),
    RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: Annotated(
        False, ("Get",), (("topic", T, None), ("group", G, None))
    ),
    RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: Annotated(
        False, ("Update",), (("group", G, None), ("topic", T, None))
    ),
    RequestCode.NOTIFICATION: Annotated(False, ("Sub",), (("consumerGroup", G, None), ("topic", T, None))),
    RequestCode.PEEK_MESSAGE: Annotated(False, ("Sub",), (("topic", T, None), ("consumerGroup", G, None))),
    RequestCode.POLLING_INFO: Annotated(False, ("Get",), (("consumerGroup", G, None), ("topic", T, None))),
    RequestCode.POP_MESSAGE: Annotated(False, ("Sub",), (("consumerGroup", G, None), ("topic", T, None))),
    RequestCode.QUERY_CONSUME_QUEUE: Annotated(
        False, ("Get",), (("topic", T, None), ("consumerGroup", G, None))
    ),
    RequestCode.QUERY_CONSUME_TIME_SPAN: Annotated(False, ("Get",), (("topic", T, None), ("group", G, None))),
    RequestCode.QUERY_CORRECTION_OFFSET: Annotated(
        False, ("Get",), (("filterGroups", G, ","), ("compareGroup", G, None), ("topic", T, None))
    ),
    RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER: Annotated(
        False, ("Get",), (("group", G, None), ("topic", T, None))
    ),
    RequestCode.QUERY_TOPICS_BY_CONSUMER: Annotated(False, ("Get",), (("group", G, None),)),
    RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: Annotated(False, ("Get",), (("topic", T, None),)),
    RequestCode.RESUME_CHECK_HALF_MESSAGE: Annotated(False, ("Update",), (("topic", T, None),)),
    RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: Annotated(False, ("Get",), (("topic", T, None),)),
    RequestCode.UPDATE_AND_CREATE_TOPIC: Annotated(False, ("Create",), (("topic", T, None),)),
    RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN: Annotated(
        False, ("Update",), (("group", G, None), ("topic", T, None))
    ),
    RequestCode.VIEW_MESSAGE_BY_ID: Annotated(False, ("Get",), (("topic", T, None),)),
}


def _is_retry(name: str | None) -> bool:
    return name is not None and name.startswith(RETRY_PREFIX)


def _topic_or_group(name: str | None) -> Resource:
    return Resource.group(name or "") if _is_retry(name) else Resource.topic(name or "")


def needs(request: RemotingCommand, cluster_name: str) -> list[Need]:
    """The resources and actions ``request`` needs; a body that cannot be read raises the refusal Apache
    gives (its context builder fails)."""
    try:
        return _needs(request, request.fields(), cluster_name)
    except (CodecError, ValueError) as exc:
        raise AuthorizationError("parse authorization context error.") from exc


def _needs(request: RemotingCommand, f: Mapping[str, str], cluster_name: str) -> list[Need]:
    code = request.code
    if not f:
        return []
    sub, pub = ("Sub",), ("Pub",)
    if code == RequestCode.GET_ROUTEINFO_BY_TOPIC:
        topic = f.get("topic")
        if _is_retry(topic):
            return [Need(Resource.group(topic or ""), ("Sub", "Get"))]
        return [Need(Resource.topic(topic or ""), ("Pub", "Sub", "Get"))]
    if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        topic_key, group_key = ("topic", "producerGroup") if code == RequestCode.SEND_MESSAGE else ("b", "a")
        topic = f.get(topic_key)
        if _is_retry(topic):
            group = f.get(group_key)
            return [Need(Resource.group(group if group and group.strip() else topic or ""), sub)]
        return [Need(Resource.topic(topic or ""), pub)]
    if code == RequestCode.RECALL_MESSAGE:
        return [Need(Resource.topic(f.get("topic") or ""), pub)]
    if code == RequestCode.END_TRANSACTION:
        topic = f.get("topic")
        return [Need(Resource.topic(topic), pub)] if topic and topic.strip() else []
    if code == RequestCode.CONSUMER_SEND_MSG_BACK:
        return [Need(Resource.group(f.get("group") or ""), sub)]
    if code in (
        RequestCode.PULL_MESSAGE,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.UPDATE_CONSUMER_OFFSET,
    ):
        actions: tuple[str, ...] = sub
        if code == RequestCode.QUERY_CONSUMER_OFFSET:
            actions = ("Sub", "Get")
        elif code == RequestCode.UPDATE_CONSUMER_OFFSET:
            actions = ("Sub", "Update")
        topic = f.get("topic")
        found = [] if _is_retry(topic) else [Need(Resource.topic(topic or ""), actions)]
        return [*found, Need(Resource.group(f.get("consumerGroup") or ""), actions)]
    if code == RequestCode.QUERY_MESSAGE:
        return [Need(Resource.topic(f.get("topic") or ""), ("Sub", "Get"))]
    if code == RequestCode.HEART_BEAT:
        return _heartbeat_needs(request.body)
    if code == RequestCode.UNREGISTER_CLIENT:
        group = f.get("consumerGroup")
        return [Need(Resource.group(group), sub)] if group and group.strip() else []
    if code == RequestCode.GET_CONSUMER_LIST_BY_GROUP:
        return [Need(Resource.group(f.get("consumerGroup") or ""), ("Sub", "Get"))]
    if code in (RequestCode.LOCK_BATCH_MQ, RequestCode.UNLOCK_BATCH_MQ):
        body = LockBatchRequestBody.from_json(request.body or b"{}")
        found = [Need(Resource.group(body.consumer_group or ""), sub)]
        found += [Need(Resource.topic(q.topic or ""), sub) for q in body.mq_set if not _is_retry(q.topic)]
        return found
    annotated = ANNOTATED.get(code)
    return [] if annotated is None else _annotated_needs(annotated, f, cluster_name)


def _heartbeat_needs(body: bytes) -> list[Need]:
    data = HeartbeatData.from_json(body or b"{}")
    found = []
    for consumer in data.consumer_data_set:
        found.append(Need(Resource.group(consumer.group_name or ""), ("Sub",)))
        found += [
            Need(Resource.topic(s.topic or ""), ("Sub",))
            for s in consumer.subscription_data_set
            if not _is_retry(s.topic)
        ]
    return found


def _annotated_needs(annotated: Annotated, f: Mapping[str, str], cluster_name: str) -> list[Need]:
    found: list[Need] = []
    for name, kind, splitter in annotated.fields:
        value = f.get(name)
        if value is None:
            continue
        values: Sequence[str] = [v for v in value.split(splitter) if v] if splitter else [value]
        for one in values:
            if kind == T:
                found.append(Need(_topic_or_group(one), annotated.actions))
            elif kind == G:  # named as given: only a topic field's retry name is read as its group
                found.append(Need(Resource("Group", one, Pattern.LITERAL), annotated.actions))
            else:
                found.append(Need(Resource.cluster(one), annotated.actions))
    if not found and annotated.cluster:
        found.append(Need(Resource.cluster(cluster_name), annotated.actions))
    return found
