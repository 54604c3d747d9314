"""The client core that producers, consumers, the admin client and the Spark source share.

A RocketMQ client is more than its role: it needs connections to brokers, NameServers to ask for routes
(failing over between them), heartbeats and UNREGISTER_CLIENT so brokers know it, a client id
(``ip@instanceName``), request signing and stamping, and, with message trace on, a dispatcher writing trace
records. Apache's Java client keeps all of that in ``MQClientInstance``, shared by every producer and
consumer of one client id; this package is that core, so no role has to reach into another for it.

It depends on nothing but :mod:`rocketmq_wire` and the standard library; ``producer``, ``consumer``,
``admin`` and ``spark_connector`` build on it, each turning its own configuration into one
:class:`ClientSettings`.

Modules: ``settings`` (:class:`ClientSettings`), ``errors`` (:class:`ClientError` and the core's failures),
``rpc`` (stamping and signing every request), ``namesrv`` (route look-ups with fail-over), ``instance``
(:class:`ClientInstance`, one per event loop and client id, and its members), ``heartbeat`` (HEART_BEAT and
UNREGISTER_CLIENT requests), ``identity`` (client ids), ``timers`` (periodic rounds), ``trace`` (the trace
dispatcher), ``backoff`` (jittered growing pauses).
"""

from client.backoff import Backoff
from client.errors import (
    BrokerVersionError,
    ClientError,
    ClientStateError,
    DuplicateGroupError,
    NameServerError,
    RouteRefusedError,
)
from client.identity import client_id, default_instance_name, local_ip, resolve_ip
from client.instance import ClientInstance, Member, MemberKind, instances, join_instance, join_standalone
from client.namesrv import NameServerClient, parse_namesrv_list
from client.rpc import ClientRpc
from client.settings import ClientSettings
from client.timers import run_periodically
from client.trace import TraceClose, TraceDispatcher, TraceSend, now_ms

__all__ = [
    "Backoff",
    "BrokerVersionError",
    "ClientError",
    "ClientInstance",
    "ClientRpc",
    "ClientSettings",
    "ClientStateError",
    "DuplicateGroupError",
    "Member",
    "MemberKind",
    "NameServerClient",
    "NameServerError",
    "RouteRefusedError",
    "TraceClose",
    "TraceDispatcher",
    "TraceSend",
    "client_id",
    "default_instance_name",
    "instances",
    "join_instance",
    "join_standalone",
    "local_ip",
    "now_ms",
    "parse_namesrv_list",
    "resolve_ip",
    "run_periodically",
]
