"""The running parts of a broker, in a few named groups, as its request handlers receive them.

:class:`~broker.broker.Broker` builds a :class:`BrokerParts` once its store is open and hands it to
:func:`broker.handlers.build_handlers`; each handler then takes, by name, only the parts it uses. A handler
therefore never sees the broker itself: its signature says what it touches, and a test builds it from the
few parts it needs (no server, no socket). The groups follow the split of Apache's newest broker: what is
stored (:class:`Storage`), what is known about topics, groups and offsets (:class:`Metadata`), who is
connected (:class:`Clients`) and the services around them (:class:`Services`).

This module only describes the parts; it builds none and imports no handler, so the dependency runs one way:
``broker.broker`` -> ``broker.handlers`` -> ``broker.processors``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from broker.acl import PlainAclManager
from broker.auth import AuthService
from broker.clients import ClientChannel, ConsumerManager, ProducerManager
from broker.clock import Clock
from broker.config import BrokerConfig
from broker.flow_control import SendFlowControl
from broker.ha.service import HighAvailability
from broker.locks import RebalanceLockManager
from broker.long_polling import PullRequestHoldService
from broker.message_service import MessageService
from broker.pop.request_modes import MessageRequestModeManager
from broker.pop.service import PopService
from broker.registration import ChangeAnnouncer
from broker.schedule import ScheduleMessageService
from broker.sql92 import ExpressionCompiler
from broker.stats import BrokerStats
from broker.store import ConsumerOffsetStore, MessageStore
from broker.subscription_groups import SubscriptionGroupManager
from broker.timer import TimerMessageService
from broker.topic_config_manager import TopicConfigManager
from broker.transaction import TransactionalMessageService
from rocketmq_wire.bodies.topic_config import DataVersion
from rocketmq_wire.message.ids import UniqueIdGenerator

#: Told which settings an UPDATE_BROKER_CONFIG changed, so the parts that copy a setting can follow it.
ConfigChanged = Callable[[list[str]], None]


@dataclass(frozen=True, kw_only=True, slots=True)
class Storage:
    """The message store and the services that write through it."""

    store: MessageStore
    #: Puts messages into the store and tells long polling and statistics about them.
    messages: MessageService
    #: Delay levels: where a delayed message waits, and the offsets of their delivery.
    schedule: ScheduleMessageService
    #: Half messages and their commit, rollback and check-back.
    transactions: TransactionalMessageService
    #: Timer messages (``TIMER_DELIVER_MS`` & co.): held in ``rmq_sys_wheel_timer`` until due, and recalls.
    timer: TimerMessageService


@dataclass(frozen=True, kw_only=True, slots=True)
class Metadata:
    """What the broker keeps about topics and consumer groups (Apache's ``config/*.json`` tables)."""

    topics: TopicConfigManager
    groups: SubscriptionGroupManager
    offsets: ConsumerOffsetStore


@dataclass(frozen=True, kw_only=True, slots=True)
class Clients:
    """Who is connected, and the way back to them."""

    consumers: ConsumerManager
    producers: ProducerManager
    #: Which consumer holds which queue of an orderly group.
    locks: RebalanceLockManager
    #: Requests the broker sends to a client over the client's own connection.
    channel: ClientChannel


@dataclass(frozen=True, kw_only=True, slots=True)
class Services:
    """The broker-wide services handlers call on besides storage, metadata and clients."""

    #: Registers again with the NameServers after a topic change; handlers wait on it before answering.
    announcer: ChangeAnnouncer
    unique_ids: UniqueIdGenerator
    #: Pulls held for long polling.
    pull_holder: PullRequestHoldService
    #: The gate in front of the send codes (its queue figures appear in the runtime info).
    send_flow_control: SendFlowControl
    #: Master/slave replication (its state answers GET_BROKER_HA_STATUS).
    ha: HighAvailability
    #: The ACL rules in force; ``None`` when ``aclEnable`` is off.
    acl: PlainAclManager | None
    #: ACL 2.0's users, policies and checks; ``None`` unless authentication or authorization is enabled.
    auth: AuthService | None = None
    #: SQL92 expressions compiled once each (pulls, pops and CHECK_CLIENT_CONFIG share them).
    filters: ExpressionCompiler
    #: POP consumption: checkpoints of popped messages, acks, revive and pops waiting for messages.
    pop: PopService
    #: Which groups consume which topics by POP (SET_MESSAGE_REQUEST_MODE).
    request_modes: MessageRequestModeManager


@dataclass(frozen=True, kw_only=True, slots=True)
class BrokerParts:
    """Everything a running broker's handlers may use, grouped."""

    config: BrokerConfig
    clock: Clock
    stats: BrokerStats
    #: The version of the settings, bumped by each UPDATE_BROKER_CONFIG that changes one.
    config_version: DataVersion
    on_config_changed: ConfigChanged
    storage: Storage
    metadata: Metadata
    clients: Clients
    services: Services
