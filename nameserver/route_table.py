"""The NameServer's route tables (Apache's ``RouteInfoManager``): pure state, no I/O, no clock of its own.

Brokers fill the tables by registering (and re-registering every 30 s); clients read topic routes, cluster
membership and topic lists from them. A broker is dropped when it unregisters, when the connection it
registered over closes, or when it has not registered for its heartbeat timeout (120 s unless a 5.x broker
asks otherwise) -- the caller passes the current time in and closes the connections this hands back.

Every table mirrors the Java collection behind it (see :class:`~nameserver.profile.ApacheProfile`), because
the bodies written from them list entries in that collection's iteration order.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Hashable, Iterable

from nameserver.config import BROKER_CHANNEL_EXPIRED_MS, NamesrvConfig
from nameserver.profile import DEFAULT_PROFILE, ApacheProfile
from rocketmq_wire.bodies.cluster import ClusterInfo
from rocketmq_wire.bodies.java_collections import (
    HASH_MAP,
    JavaMap,
    JavaSet,
    long_hash,
    map_in_java_order,
    set_in_java_order,
    string_hash,
)
from rocketmq_wire.bodies.route import MASTER_ID, BrokerData, QueueData, TopicRouteData
from rocketmq_wire.bodies.static_topic import TopicQueueMappingInfo
from rocketmq_wire.bodies.topic_config import (
    DataVersion,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
    TopicList,
)
from rocketmq_wire.perm import PERM_READ, PERM_WRITE, has_unit_flag, has_unit_sub_flag

logger = logging.getLogger("nameserver.routes")

#: Topics whose names start with this are the 5.x broker-member sync topics; routes for them are never
#: rewritten for an acting master.
SYNC_BROKER_MEMBER_GROUP_PREFIX = "rmq_sys_SYNC_BROKER_MEMBER_"


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerAddrInfo:
    """A registered broker instance: the same address may serve two clusters."""

    cluster_name: str
    broker_addr: str


@dataclasses.dataclass(slots=True)
class BrokerLiveInfo:
    """When a broker last registered, over which connection, with which topic table version."""

    last_update: float
    timeout: float
    data_version: DataVersion
    channel: Hashable | None
    ha_server_addr: str | None


@dataclasses.dataclass(frozen=True, slots=True)
class RegisterBrokerResult:
    """What a registering slave learns about its master; both ``None`` for a master."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class UnregisterRequest:
    cluster_name: str
    broker_addr: str
    broker_name: str
    broker_id: int


def same_data_version(a: DataVersion | None, b: DataVersion | None) -> bool:
    """Java's ``DataVersion.equals``: timestamp, counter and (5.x) state version; an absent state version
    counts as 0, which is what a 4.x stamp holds."""
    if a is None or b is None:
        return a is b
    return (
        a.timestamp == b.timestamp
        and a.counter == b.counter
        and (a.state_version or 0) == (b.state_version or 0)
    )


class RouteInfoManager:
    """The route tables and every operation the request handlers perform on them.

    Methods take ``now`` (seconds, from the server's clock) where Apache reads the system clock, and a
    ``channel`` -- any hashable token standing for the connection a broker registered over.
    """

    def __init__(self, config: NamesrvConfig | None = None, profile: ApacheProfile = DEFAULT_PROFILE) -> None:
        self.config = config or NamesrvConfig()
        self.profile = profile
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, list[str]] = {}
        self.broker_live_table: dict[BrokerAddrInfo, BrokerLiveInfo] = {}
        self.filter_server_table: dict[BrokerAddrInfo, list[str]] = {}
        self.topic_queue_mapping_info_table: dict[str, dict[str, TopicQueueMappingInfo]] = {}
        #: Bumped on every change, so callers can cache what they derive from the tables.
        self.generation = 0

    # -- registration ----------------------------------------------------------------------------------

    def register_broker(
        self,
        *,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str | None,
        topic_config_wrapper: TopicConfigSerializeWrapper,
        filter_server_list: list[str] | None,
        channel: Hashable | None,
        now: float,
        zone_name: str | None = None,
        heartbeat_timeout_ms: int | None = None,
        enable_acting_master: bool | None = None,
    ) -> RegisterBrokerResult | None:
        """Record a broker's (re-)registration; ``None`` when 5.x would refuse it.

        5.x refuses a single-topic registration from a broker id it does not know yet: incremental
        registrations only make sense after the broker's first full one.
        """
        self.generation += 1
        is_5x = self.profile.is_5x
        names = self.cluster_addr_table.setdefault(cluster_name, [])
        if broker_name not in names:
            names.append(broker_name)

        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = BrokerData(cluster=cluster_name, broker_name=broker_name, broker_addrs={})
            self.broker_addr_table[broker_name] = broker_data
        old_version_broker = enable_acting_master is None
        if is_5x:
            broker_data.enable_acting_master = (not old_version_broker) and bool(enable_acting_master)
            broker_data.zone_name = zone_name
        addrs = broker_data.broker_addrs
        new_version = topic_config_wrapper.data_version

        # One address holds one broker id: a slave promoted to master re-registers under id 0.
        for stale_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[stale_id]

        if is_5x:
            old_addr = addrs.get(broker_id)
            if old_addr is not None and old_addr != broker_addr:
                old_info = self.broker_live_table.get(BrokerAddrInfo(cluster_name, old_addr))
                if old_info is not None and (old_info.data_version.state_version or 0) > (
                    new_version.state_version or 0
                ):
                    logger.warning(
                        "registering broker conflicts with the existing one, ignored: cluster %s broker %s "
                        "id %d, old %s (state %s), new %s (state %s)",
                        cluster_name,
                        broker_name,
                        broker_id,
                        old_addr,
                        old_info.data_version.state_version,
                        broker_addr,
                        new_version.state_version,
                    )
                    self.broker_live_table.pop(BrokerAddrInfo(cluster_name, broker_addr), None)
                    return RegisterBrokerResult()
            if broker_id not in addrs and len(topic_config_wrapper.topic_config_table) == 1:
                logger.warning(
                    "cannot register single topic %s: broker %s id %d (%s) has not registered yet",
                    list(topic_config_wrapper.topic_config_table),
                    broker_name,
                    broker_id,
                    broker_addr,
                )
                return None

        previous_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        register_first = register_first or not previous_addr
        is_master = broker_id == MASTER_ID
        is_prime_slave = is_5x and not old_version_broker and not is_master and broker_id == min(addrs)

        if is_master or is_prime_slave:
            self._apply_topics(
                cluster_name,
                broker_addr,
                broker_name,
                topic_config_wrapper,
                register_first=register_first,
                writable=not (is_prime_slave and bool(broker_data.enable_acting_master)),
            )

        key = BrokerAddrInfo(cluster_name, broker_addr)
        timeout_ms = heartbeat_timeout_ms if is_5x and heartbeat_timeout_ms else BROKER_CHANNEL_EXPIRED_MS
        previous = self.broker_live_table.get(key)
        self.broker_live_table[key] = BrokerLiveInfo(
            last_update=now,
            timeout=timeout_ms / 1000,
            data_version=new_version,
            channel=channel,
            ha_server_addr=ha_server_addr,
        )
        if previous is None:
            logger.info(
                "new broker registered, %s %s HAService: %s", cluster_name, broker_addr, ha_server_addr
            )

        if filter_server_list is not None:
            if filter_server_list:
                self.filter_server_table[key] = list(filter_server_list)
            else:
                self.filter_server_table.pop(key, None)

        if not is_master:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None:
                master = self.broker_live_table.get(BrokerAddrInfo(cluster_name, master_addr))
                if master is not None:
                    return RegisterBrokerResult(ha_server_addr=master.ha_server_addr, master_addr=master_addr)
        return RegisterBrokerResult()

    def _apply_topics(
        self,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        wrapper: TopicConfigSerializeWrapper,
        *,
        register_first: bool,
        writable: bool,
    ) -> None:
        table = wrapper.topic_config_table
        version_changed = self.is_broker_topic_config_changed(cluster_name, broker_addr, wrapper.data_version)
        if not self.profile.is_5x:
            # 4.x: an unchanged data version means nothing in the table is new.
            if version_changed or register_first:
                for config in table.values():
                    self._create_or_update_queue_data(broker_name, config, writable=True)
            return
        mappings = (
            wrapper.topic_queue_mapping_info_map
            if isinstance(wrapper, TopicConfigAndMappingSerializeWrapper)
            else {}
        )
        if self.config.delete_topic_with_broker_registration and not mappings:
            for topic in self._topics_of_broker(broker_name) - set(table):
                queues = self.topic_queue_table[topic]
                removed = queues.pop(broker_name, None)
                if removed is not None:
                    logger.info(
                        "deleteTopic, remove one broker's topic %s %s %s", broker_name, topic, removed
                    )
                if not queues:
                    logger.info("deleteTopic, remove the topic all queue %s", topic)
                    del self.topic_queue_table[topic]
        for config in table.values():
            # 5.x also re-adds a topic the route table lost (e.g. deleted) under an unchanged data version.
            if register_first or version_changed or not self._has_queue(str(config.topic_name), broker_name):
                self._create_or_update_queue_data(broker_name, config, writable=writable)
        if version_changed or register_first:
            for topic, info in mappings.items():
                self.topic_queue_mapping_info_table.setdefault(topic, {})[str(info.bname)] = info

    def _has_queue(self, topic: str, broker_name: str) -> bool:
        queues = self.topic_queue_table.get(topic)
        return queues is not None and broker_name in queues

    def _topics_of_broker(self, broker_name: str) -> set[str]:
        return {topic for topic, queues in self.topic_queue_table.items() if broker_name in queues}

    def _create_or_update_queue_data(self, broker_name: str, config: TopicConfig, *, writable: bool) -> None:
        perm = config.perm if writable else config.perm & ~PERM_WRITE
        queue_data = QueueData(
            broker_name=broker_name,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=perm,
            topic_sys_flag=config.topic_sys_flag,
        )
        topic = str(config.topic_name)
        queues = self.topic_queue_table.get(topic)
        if queues is None:
            self.topic_queue_table[topic] = {broker_name: queue_data}
            logger.info("new topic registered, %s %s", topic, queue_data)
            return
        existing = queues.get(broker_name)
        if existing != queue_data:
            if existing is not None:
                logger.info("topic changed, %s OLD: %s NEW: %s", topic, existing, queue_data)
            queues[broker_name] = queue_data

    # -- data versions and liveness --------------------------------------------------------------------

    def query_broker_topic_config(self, cluster_name: str, broker_addr: str) -> DataVersion | None:
        """The data version a broker last registered with, if it is registered."""
        info = self.broker_live_table.get(BrokerAddrInfo(cluster_name, broker_addr))
        return None if info is None else info.data_version

    def is_broker_topic_config_changed(
        self, cluster_name: str, broker_addr: str, data_version: DataVersion
    ) -> bool:
        previous = self.query_broker_topic_config(cluster_name, broker_addr)
        return previous is None or not same_data_version(previous, data_version)

    def update_broker_info_update_timestamp(self, cluster_name: str, broker_addr: str, now: float) -> None:
        info = self.broker_live_table.get(BrokerAddrInfo(cluster_name, broker_addr))
        if info is not None:
            info.last_update = now

    def scan_not_active_brokers(self, now: float) -> list[Hashable]:
        """Drop every broker whose last registration is older than its timeout; returns their channels,
        which the caller should close (Apache closes them too)."""
        expired = [
            (key, info)
            for key, info in self.broker_live_table.items()
            if info.last_update + info.timeout < now
        ]
        channels: list[Hashable] = []
        for key, info in expired:
            logger.warning(
                "the broker channel expired, %s %s %.0fms",
                key.cluster_name,
                key.broker_addr,
                info.timeout * 1000,
            )
            if info.channel is not None:
                channels.append(info.channel)
            self.on_broker_gone(key)
        return channels

    def on_channel_destroy(self, channel: Hashable) -> bool:
        """The connection a broker registered over has closed: unregister that broker. Returns whether
        the channel belonged to a broker."""
        for key, info in self.broker_live_table.items():
            if info.channel is not None and info.channel == channel:
                logger.info(
                    "the broker's channel destroyed, %s %s: unregistering", key.cluster_name, key.broker_addr
                )
                return self.on_broker_gone(key)
        return False

    def on_broker_gone(self, key: BrokerAddrInfo) -> bool:
        """Unregister the broker instance ``key`` as if it had asked to, finding its name and id."""
        for broker_data in self.broker_addr_table.values():
            if broker_data.cluster != key.cluster_name:
                continue
            for broker_id, addr in broker_data.broker_addrs.items():
                if addr == key.broker_addr:
                    self.unregister_brokers(
                        [
                            UnregisterRequest(
                                key.cluster_name, key.broker_addr, str(broker_data.broker_name), broker_id
                            )
                        ]
                    )
                    return True
        # Registered but no longer in any broker group: just forget its liveness.
        self.generation += 1
        self.broker_live_table.pop(key, None)
        self.filter_server_table.pop(key, None)
        return False

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        self.unregister_brokers([UnregisterRequest(cluster_name, broker_addr, broker_name, broker_id)])

    def unregister_brokers(self, requests: Iterable[UnregisterRequest]) -> None:
        """Remove broker instances; a broker group left with no address takes its queues with it."""
        self.generation += 1
        removed_names: set[str] = set()
        reduced_names: set[str] = set()
        for request in requests:
            key = BrokerAddrInfo(request.cluster_name, request.broker_addr)
            live = self.broker_live_table.pop(key, None)
            logger.info(
                "unregisterBroker, remove from brokerLiveTable %s, %s", "OK" if live else "Failed", key
            )
            self.filter_server_table.pop(key, None)
            broker_data = self.broker_addr_table.get(request.broker_name)
            name_gone = False
            if broker_data is not None:
                addrs = broker_data.broker_addrs
                if self.profile.is_5x:
                    gone = [i for i, a in addrs.items() if a == request.broker_addr]
                else:
                    gone = [request.broker_id] if request.broker_id in addrs else []
                for broker_id in gone:
                    del addrs[broker_id]
                logger.info(
                    "unregisterBroker, remove addr from brokerAddrTable %s, %s",
                    "OK" if gone else "Failed",
                    key,
                )
                if not addrs:
                    del self.broker_addr_table[request.broker_name]
                    logger.info(
                        "unregisterBroker, remove name from brokerAddrTable OK, %s", request.broker_name
                    )
                    name_gone = True
            if name_gone:
                names = self.cluster_addr_table.get(request.cluster_name)
                if names is not None:
                    if request.broker_name in names:
                        names.remove(request.broker_name)
                    if not names:
                        del self.cluster_addr_table[request.cluster_name]
                        logger.info(
                            "unregisterBroker, remove cluster from clusterAddrTable %s", request.cluster_name
                        )
                removed_names.add(request.broker_name)
            else:
                reduced_names.add(request.broker_name)
        self._clean_topics(removed_names, reduced_names)

    def _clean_topics(self, removed: set[str], reduced: set[str]) -> None:
        for topic in list(self.topic_queue_table):
            queues = self.topic_queue_table[topic]
            for name in removed:
                if queues.pop(name, None) is not None:
                    logger.debug("removeTopicByBrokerName, remove one broker's topic %s %s", topic, name)
            if not queues:
                logger.debug("removeTopicByBrokerName, remove the topic all queue %s", topic)
                del self.topic_queue_table[topic]
                continue
            if not self.profile.is_5x:
                continue
            for name in reduced:
                queue_data = queues.get(name)
                broker_data = self.broker_addr_table.get(name)
                if queue_data is None or broker_data is None or not broker_data.enable_acting_master:
                    continue
                if self._no_master(name):
                    queues[name] = dataclasses.replace(queue_data, perm=queue_data.perm & ~PERM_WRITE)

    def _no_master(self, broker_name: str) -> bool:
        broker_data = self.broker_addr_table.get(broker_name)
        return (
            broker_data is None or not broker_data.broker_addrs or min(broker_data.broker_addrs) > MASTER_ID
        )

    # -- topics ----------------------------------------------------------------------------------------

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        """Forget a topic everywhere, or (with ``cluster_name``) only its queues on that cluster's brokers."""
        self.generation += 1
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        names = self.cluster_addr_table.get(cluster_name)
        queues = self.topic_queue_table.get(topic)
        if not names or queues is None:
            return
        for name in names:
            removed = queues.pop(name, None)
            if removed is not None:
                logger.info("deleteTopic, remove one broker's topic %s %s %s", cluster_name, topic, removed)
        if not queues:
            logger.info("deleteTopic, remove the topic all queue %s %s", cluster_name, topic)
            del self.topic_queue_table[topic]

    def register_topic(self, topic: str, queue_datas: list[QueueData]) -> None:
        """REGISTER_TOPIC_IN_NAMESRV (5.x): add queues of known brokers to a topic."""
        if not queue_datas:
            return
        self.generation += 1
        if any(q.broker_name not in self.broker_addr_table for q in queue_datas):
            logger.warning("register topic %s contains an unknown broker, ignored: %s", topic, queue_datas)
            return
        queues = self.topic_queue_table.setdefault(topic, {})
        for queue_data in queue_datas:
            queues[str(queue_data.broker_name)] = dataclasses.replace(queue_data)
        logger.info("register topic route: %s %s", topic, queue_datas)

    def _operate_write_perm(self, broker_name: str, *, add: bool) -> int:
        self.generation += 1
        count = 0
        for queues in self.topic_queue_table.values():
            queue_data = queues.get(broker_name)
            if queue_data is None:
                continue
            perm = PERM_READ | PERM_WRITE if add else queue_data.perm & ~PERM_WRITE
            queues[broker_name] = dataclasses.replace(queue_data, perm=perm)
            count += 1
        return count

    def wipe_write_perm_of_broker(self, broker_name: str) -> int:
        """Stop writes to a broker in every route; returns how many topics it served."""
        return self._operate_write_perm(broker_name, add=False)

    def add_write_perm_of_broker(self, broker_name: str) -> int:
        """Give a broker read and write permission back in every route; returns how many topics it served."""
        return self._operate_write_perm(broker_name, add=True)

    # -- reads -----------------------------------------------------------------------------------------

    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """The route of ``topic`` (copies, safe to modify); ``None`` when no known broker serves it."""
        queues = self.topic_queue_table.get(topic)
        if queues is None:
            return None
        queue_datas = [dataclasses.replace(q) for _, q in map_in_java_order(queues, string_hash, HASH_MAP)]
        broker_datas: list[BrokerData] = []
        filter_servers: dict[str, list[str]] = {}
        for name in set_in_java_order(list(queues), string_hash, HASH_MAP):
            broker_data = self.broker_addr_table.get(name)
            if broker_data is None:
                continue
            clone = dataclasses.replace(broker_data, broker_addrs=dict(broker_data.broker_addrs))
            broker_datas.append(clone)
            if not self.filter_server_table:
                continue
            for addr in clone.broker_addrs.values():
                servers = self.filter_server_table.get(BrokerAddrInfo(str(clone.cluster), addr))
                if servers is not None:
                    filter_servers[addr] = list(servers)
        if not broker_datas:
            return None
        route = TopicRouteData(
            queue_datas=queue_datas, broker_datas=broker_datas, filter_server_table=filter_servers
        )
        if self.profile.is_5x:
            mapping = self.topic_queue_mapping_info_table.get(topic)
            route.topic_queue_mapping_by_broker = None if mapping is None else dict(mapping)
            if self.config.support_acting_master and not topic.startswith(SYNC_BROKER_MEMBER_GROUP_PREFIX):
                self._stand_in_for_missing_masters(route)
        return route

    def _stand_in_for_missing_masters(self, route: TopicRouteData) -> None:
        """5.x acting master: where a group lost its master and its queues are read-only, its lowest slave
        is shown as id 0 so clients keep reading from it."""
        for broker_data in route.broker_datas:
            addrs = broker_data.broker_addrs
            if not addrs or MASTER_ID in addrs or not broker_data.enable_acting_master:
                continue
            for queue_data in route.queue_datas:
                if queue_data.broker_name == broker_data.broker_name:
                    if not queue_data.perm & PERM_WRITE:
                        addrs[MASTER_ID] = addrs.pop(min(addrs))
                    break

    def cluster_info(self) -> ClusterInfo:
        """Every broker group and cluster, as GET_BROKER_CLUSTER_INFO sends them."""
        profile = self.profile
        brokers = {
            name: dataclasses.replace(data, broker_addrs=dict(data.broker_addrs))
            for name, data in self.broker_addr_table.items()
        }
        clusters = {name: list(names) for name, names in self.cluster_addr_table.items()}
        if not profile.is_5x:
            # A HashMap's order follows from its final table size alone; remember the constructed one.
            brokers = JavaMap(brokers, table_size=profile.broker_table.size_for(len(brokers)))
            clusters = JavaMap(clusters, table_size=profile.cluster_table.size_for(len(clusters)))
        return ClusterInfo(broker_addr_table=brokers, cluster_addr_table=clusters)

    def _topic_list(self, topics: Iterable[str], broker_addr: str | None = None) -> TopicList:
        names = list(dict.fromkeys(topics))
        listed: list[str] = names
        if self.profile.topic_list_set is HASH_MAP:
            listed = JavaSet(names, table_size=HASH_MAP.size_for(len(names)))
        return TopicList(topic_list=listed, broker_addr=broker_addr)

    def _topics_in_table_order(self) -> list[str]:
        return [
            topic
            for topic, _ in map_in_java_order(self.topic_queue_table, string_hash, self.profile.topic_table)
        ]

    def all_topics(self) -> TopicList:
        return self._topic_list(self._topics_in_table_order())

    def topics_by_cluster(self, cluster: str) -> TopicList:
        names = self.cluster_addr_table.get(cluster, [])
        ordered = self._topics_in_table_order()
        topics = [t for name in names for t in ordered if name in self.topic_queue_table[t]]
        return self._topic_list(topics)

    def system_topics(self) -> TopicList:
        """Cluster and broker names (brokers can be addressed as topics) and one broker address to ask."""
        topics: list[str] = []
        for cluster, names in map_in_java_order(
            self.cluster_addr_table, string_hash, self.profile.cluster_table
        ):
            topics.append(cluster)
            topics.extend(set_in_java_order(names, string_hash, HASH_MAP))
        broker_addr = None
        for _, data in map_in_java_order(self.broker_addr_table, string_hash, self.profile.broker_table):
            if data.broker_addrs:
                broker_addr = map_in_java_order(data.broker_addrs, long_hash, HASH_MAP)[0][1]
                break
        return self._topic_list(topics, broker_addr)

    def _topics_whose_first_queue(self, wanted: bool | None, sub: bool) -> TopicList:
        topics = []
        for topic in self._topics_in_table_order():
            queues = self.topic_queue_table[topic]
            if not queues:
                continue
            flag = map_in_java_order(queues, string_hash, HASH_MAP)[0][1].topic_sys_flag
            if wanted is not None and has_unit_flag(flag) != wanted:
                continue
            if sub and not has_unit_sub_flag(flag):
                continue
            topics.append(topic)
        return self._topic_list(topics)

    def unit_topics(self) -> TopicList:
        return self._topics_whose_first_queue(True, sub=False)

    def has_unit_sub_topics(self) -> TopicList:
        return self._topics_whose_first_queue(None, sub=True)

    def has_unit_sub_ununit_topics(self) -> TopicList:
        return self._topics_whose_first_queue(False, sub=True)
