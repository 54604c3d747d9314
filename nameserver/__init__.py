"""A light NameServer speaking Apache RocketMQ's protocol: brokers register with it, clients ask it where
topics live. For development, tests and small deployments.

:class:`NameServer` is the server; :class:`RouteInfoManager`, :class:`KVConfigManager` and
:class:`NamesrvProcessor` are its network-free parts, usable on their own.
"""

from nameserver.config import NamesrvConfig
from nameserver.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from nameserver.processor import NamesrvProcessor
from nameserver.profile import APACHE_4_9_8, APACHE_5_3_3, DEFAULT_PROFILE, ApacheProfile, profile_named
from nameserver.route_table import RegisterBrokerResult, RouteInfoManager
from nameserver.server import DEFAULT_PORT, NameServer

__all__ = [
    "APACHE_4_9_8",
    "APACHE_5_3_3",
    "DEFAULT_PORT",
    "DEFAULT_PROFILE",
    "NAMESPACE_ORDER_TOPIC_CONFIG",
    "ApacheProfile",
    "KVConfigManager",
    "NameServer",
    "NamesrvConfig",
    "NamesrvProcessor",
    "RegisterBrokerResult",
    "RouteInfoManager",
    "profile_named",
]
