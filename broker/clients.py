"""Who is connected: producer groups and consumer groups with their members and subscriptions.

Clients announce themselves with heartbeats; a member leaves by UNREGISTER_CLIENT, by closing its
connection, or by falling silent for longer than ``channelExpiredTimeout``. When a consumer group's
membership (or its set of subscribed topics) changes, the broker tells every remaining member to
rebalance at once (NOTIFY_CONSUMER_IDS_CHANGED); the ``on_group_changed`` callback is how it learns that.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Protocol

from rocketmq_wire import RemotingCommand
from rocketmq_wire.bodies.heartbeat import SubscriptionData
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.clients")

#: ``callback(group, members)``: a consumer group changed; ``members`` are the connections still in it.
GroupChangedCallback = Callable[[str, list[Connection]], None]


class ClientChannel(Protocol):
    """Requests the broker itself sends to a client, over the connection the client opened.

    Admin requests a tool cannot send to a consumer directly (running info, direct consumption, offset
    resets) go this way. Handlers that relay them name this part rather than the remoting server, so they
    can be driven with a stand-in; the broker's :class:`~rocketmq_wire.transport.RemotingServer` is one.
    """

    async def invoke(self, conn: Connection, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        """Send ``cmd`` to the client on ``conn`` and wait for its answer."""
        ...

    async def invoke_oneway(self, conn: Connection, cmd: RemotingCommand) -> None:
        """Send ``cmd`` to the client on ``conn``, expecting no answer."""
        ...


@dataclasses.dataclass(slots=True)
class ClientChannelInfo:
    """One client connection as a member of a group."""

    conn: Connection
    client_id: str
    language: str
    version: int
    last_update_timestamp: int

    @property
    def client_addr(self) -> str:
        return self.conn.remote_address


@dataclasses.dataclass(slots=True)
class ConsumerGroupInfo:
    group_name: str
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    last_update_timestamp: int = 0
    channels: dict[Connection, ClientChannelInfo] = dataclasses.field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = dataclasses.field(default_factory=dict)

    def update_channel(
        self,
        info: ClientChannelInfo,
        consume_type: str | None,
        message_model: str | None,
        consume_from_where: str | None,
    ) -> bool:
        """Record a member's heartbeat; True when the connection is new to the group."""
        self.consume_type = consume_type
        self.message_model = message_model
        self.consume_from_where = consume_from_where
        old = self.channels.get(info.conn)
        self.channels[info.conn] = info
        self.last_update_timestamp = info.last_update_timestamp
        if old is None:
            log.info(
                "new consumer connected, group %s %s %s", self.group_name, info.client_id, info.client_addr
            )
            return True
        if old.client_id != info.client_id:
            log.error(
                "consumer channel of group %s changed its client id from %s to %s",
                self.group_name,
                old.client_id,
                info.client_id,
            )
        return False

    def update_subscriptions(self, subscriptions: Iterable[SubscriptionData]) -> bool:
        """Take the subscriptions of a heartbeat; True when a topic was added or dropped.

        A newer version of an existing subscription replaces the old one without counting as a change,
        as in Apache: members need to rebalance only when the set of topics changes.
        """
        changed = False
        topics: set[str] = set()
        for sub in subscriptions:
            topic = sub.topic or ""
            topics.add(topic)
            old = self.subscriptions.get(topic)
            if old is None:
                self.subscriptions[topic] = sub
                changed = True
                log.info("subscription added, group %s topic %s %s", self.group_name, topic, sub.sub_string)
            elif sub.sub_version > old.sub_version:
                self.subscriptions[topic] = sub
        for topic in [t for t in self.subscriptions if t not in topics]:
            log.warning("subscription changed, group %s removed topic %s", self.group_name, topic)
            del self.subscriptions[topic]
            changed = True
        return changed

    def find_subscription(self, topic: str) -> SubscriptionData | None:
        return self.subscriptions.get(topic)

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]

    def connections(self) -> list[Connection]:
        return list(self.channels)

    def remove_channel(self, conn: Connection) -> ClientChannelInfo | None:
        info = self.channels.pop(conn, None)
        if info is not None:
            log.info("consumer %s left group %s (%s)", info.client_id, self.group_name, info.client_addr)
        return info


class ConsumerManager:
    def __init__(self, on_group_changed: GroupChangedCallback | None = None) -> None:
        self._groups: dict[str, ConsumerGroupInfo] = {}
        self._on_group_changed = on_group_changed

    def _notify(self, group: str, info: ConsumerGroupInfo) -> None:
        if self._on_group_changed is not None and info.channels:
            self._on_group_changed(group, info.connections())

    def group(self, group: str) -> ConsumerGroupInfo | None:
        return self._groups.get(group)

    def groups(self) -> dict[str, ConsumerGroupInfo]:
        return dict(self._groups)

    def register(
        self,
        group: str,
        info: ClientChannelInfo,
        consume_type: str | None,
        message_model: str | None,
        consume_from_where: str | None,
        subscriptions: Iterable[SubscriptionData],
        notify: bool,
    ) -> bool:
        """A consumer heartbeat; True (and the group notified, if asked) when the group changed."""
        group_info = self._groups.get(group)
        if group_info is None:
            group_info = self._groups[group] = ConsumerGroupInfo(group_name=group)
        new_member = group_info.update_channel(info, consume_type, message_model, consume_from_where)
        new_topics = group_info.update_subscriptions(subscriptions)
        changed = new_member or new_topics
        if changed and notify:
            self._notify(group, group_info)
        return changed

    def unregister(self, group: str, conn: Connection, notify: bool) -> None:
        group_info = self._groups.get(group)
        if group_info is None or group_info.remove_channel(conn) is None:
            return
        if not group_info.channels:
            del self._groups[group]
            log.info("consumer group %s has no members left", group)
        elif notify:
            self._notify(group, group_info)

    def connection_closed(self, conn: Connection, notify: Callable[[str], bool]) -> None:
        """Drop a closed connection from every group; ``notify(group)`` says whether to tell the rest."""
        for name, group_info in list(self._groups.items()):
            if group_info.remove_channel(conn) is None:
                continue
            if not group_info.channels:
                del self._groups[name]
                log.info("consumer group %s has no members left", name)
            elif notify(name):
                self._notify(name, group_info)

    def expired(self, now_ms: int, timeout_ms: int) -> list[Connection]:
        """Connections whose last heartbeat is older than ``timeout_ms``."""
        return [
            info.conn
            for group_info in self._groups.values()
            for info in group_info.channels.values()
            if now_ms - info.last_update_timestamp > timeout_ms
        ]

    def groups_of_topic(self, topic: str) -> set[str]:
        return {name for name, info in self._groups.items() if topic in info.subscriptions}


class ProducerManager:
    def __init__(self) -> None:
        self._groups: dict[str, dict[Connection, ClientChannelInfo]] = {}

    def register(self, group: str, info: ClientChannelInfo) -> None:
        members = self._groups.setdefault(group, {})
        if info.conn not in members:
            log.info("new producer connected, group %s %s %s", group, info.client_id, info.client_addr)
        members[info.conn] = info

    def unregister(self, group: str, conn: Connection) -> None:
        members = self._groups.get(group)
        if members is None or members.pop(conn, None) is None:
            return
        log.info("producer left group %s (%s)", group, conn.remote_address)
        if not members:
            del self._groups[group]

    def connection_closed(self, conn: Connection) -> None:
        for group in list(self._groups):
            self.unregister(group, conn)

    def members(self, group: str) -> list[ClientChannelInfo]:
        return list(self._groups.get(group, {}).values())

    def table(self) -> dict[str, list[ClientChannelInfo]]:
        """Every group with its members, groups in the order they first connected (a copy, so a caller
        may await while holding it). A group leaves the table with its last member, so none is empty."""
        return {group: list(members.values()) for group, members in self._groups.items()}

    def available_connection(self, group: str) -> Connection | None:
        """A live connection of the group, for asking a producer about a transaction."""
        for info in self._groups.get(group, {}).values():
            if info.conn.is_open:
                return info.conn
        return None

    def connection_of(self, client_id: str) -> Connection | None:
        """The open connection of the producer instance ``client_id`` in any group (Apache's
        ``findChannel``): where a reply for that requester is pushed."""
        for members in self._groups.values():
            for info in members.values():
                if info.client_id == client_id and info.conn.is_open:
                    return info.conn
        return None

    def expired(self, now_ms: int, timeout_ms: int) -> list[Connection]:
        return [
            info.conn
            for members in self._groups.values()
            for info in members.values()
            if now_ms - info.last_update_timestamp > timeout_ms
        ]

    def groups(self) -> list[str]:
        return sorted(self._groups)
