"""The requests that keep brokers aware of a client, HEART_BEAT and UNREGISTER_CLIENT, built as in Java.

A broker only knows a client's producers and consumers through its heartbeats; without them it cannot ask a
producer to check a transaction, it refuses a consumer's pulls, and its connection lists (``mqadmin
producerConnection``/``consumerConnection``) miss it. Java's ``MQClientInstance`` sends one heartbeat per
client id listing every group registered on it plus the instance's internal producer group; the
:class:`~client.instance.ClientInstance` sends these requests, this module only builds them (so golden tests
can compare them with Java's frames without a connection).
"""

from __future__ import annotations

from collections.abc import Iterable

from rocketmq_wire.bodies.heartbeat import ConsumerData, HeartbeatData, ProducerData
from rocketmq_wire.codes import MQVersion, RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.consumer import HeartbeatRequestHeader, UnregisterClientRequestHeader
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.topics import CLIENT_INNER_PRODUCER_GROUP

_V5_0_0 = MQVersion.NAMES.index("V5_0_0")


def heartbeat_body(
    client_id: str, producer_groups: Iterable[str], consumers: Iterable[ConsumerData], version: int
) -> bytes:
    """Java's ``HeartbeatData`` of one client instance.

    Producer groups in name order, always with the instance's internal producer group (every Java capture
    shows that order); consumers in the order given (the instance gives them by group name); 5.x adds its two
    fields.
    """
    v5 = version >= _V5_0_0
    groups = sorted({*producer_groups, CLIENT_INNER_PRODUCER_GROUP})
    return HeartbeatData(
        client_id=client_id,
        producer_data_set=[ProducerData(group_name=name) for name in groups],
        consumer_data_set=list(consumers),
        heartbeat_fingerprint=0 if v5 else None,
        without_sub=False if v5 else None,
    ).to_json()


def heartbeat_request(body: bytes, version: int) -> RemotingCommand:
    """HEART_BEAT: 4.x clients send no header at all, 5.x ones an empty one (an empty ext map on the wire)."""
    if version >= _V5_0_0:
        return RemotingCommand.request(
            RequestCode.HEART_BEAT, HeartbeatRequestHeader(), body, ext_fields=ExtFields()
        )
    return RemotingCommand.request(RequestCode.HEART_BEAT, None, body)


def unregister_request(
    client_id: str, producer_group: str | None = None, *, consumer_group: str | None = None
) -> RemotingCommand:
    """UNREGISTER_CLIENT for one group: a producer group or a consumer group (Java sends one request per group
    it leaves, and the internal producer group last, as the client instance closes)."""
    header = UnregisterClientRequestHeader(
        client_id=client_id, producer_group=producer_group, consumer_group=consumer_group
    )
    return RemotingCommand.request(RequestCode.UNREGISTER_CLIENT, header)
