"""RouteInfoManager: registration, the master/slave rules, liveness and the reads, without any network."""

from __future__ import annotations

import pytest

from nameserver.config import NamesrvConfig
from nameserver.profile import APACHE_4_9_8, APACHE_5_3_3, ApacheProfile
from nameserver.route_table import RegisterBrokerResult, RouteInfoManager
from rocketmq_wire.bodies.java_collections import in_table_order, string_hash
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.bodies.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper

PROFILES = [pytest.param(APACHE_4_9_8, id="4.9.8"), pytest.param(APACHE_5_3_3, id="5.3.3")]


def make_wrapper(
    *topics: str, counter: int = 1, queues: int = 4, perm: int = 6, sys_flag: int = 0
) -> TopicConfigSerializeWrapper:
    table = {
        t: TopicConfig(
            topic_name=t, read_queue_nums=queues, write_queue_nums=queues, perm=perm, topic_sys_flag=sys_flag
        )
        for t in topics
    }
    return TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(timestamp=1000, counter=counter)
    )


def register(
    routes: RouteInfoManager,
    name: str = "broker-a",
    broker_id: int = 0,
    addr: str = "10.0.0.1:10911",
    topics: tuple[str, ...] = ("TopicA", "TopicB"),
    channel: str = "ch-a",
    now: float = 0.0,
    cluster: str = "C",
    wrapper: TopicConfigSerializeWrapper | None = None,
    heartbeat_timeout_ms: int | None = None,
    enable_acting_master: bool | None = None,
) -> RegisterBrokerResult | None:
    return routes.register_broker(
        cluster_name=cluster,
        broker_addr=addr,
        broker_name=name,
        broker_id=broker_id,
        ha_server_addr=addr.replace("10911", "10912"),
        topic_config_wrapper=wrapper or make_wrapper(*topics),
        filter_server_list=[],
        channel=channel,
        now=now,
        heartbeat_timeout_ms=heartbeat_timeout_ms,
        enable_acting_master=enable_acting_master,
    )


def route_of(routes: RouteInfoManager, topic: str) -> TopicRouteData:
    route = routes.pickup_topic_route_data(topic)
    assert route is not None, f"no route for {topic}"
    return route


@pytest.mark.parametrize("profile", PROFILES)
def test_master_registration_makes_routes(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    result = register(routes)
    assert result is not None and result.master_addr is None and result.ha_server_addr is None
    route = routes.pickup_topic_route_data("TopicA")
    assert route is not None
    assert [b.broker_addrs for b in route.broker_datas] == [{0: "10.0.0.1:10911"}]
    assert [(q.broker_name, q.read_queue_nums, q.perm) for q in route.queue_datas] == [("broker-a", 4, 6)]
    assert routes.pickup_topic_route_data("Nope") is None
    assert routes.cluster_info().cluster_addr_table == {"C": ["broker-a"]}
    # 5.x broker data says whether acting master is on; 4.x has no such field.
    expected_flag = False if profile.is_5x else None
    assert route.broker_datas[0].enable_acting_master is expected_flag


@pytest.mark.parametrize("profile", PROFILES)
def test_slave_learns_its_master_and_does_not_change_queues(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes)
    slave_wrapper = make_wrapper("TopicA", "TopicB", "SlaveOnly", counter=9, queues=16)
    result = register(routes, broker_id=1, addr="10.0.0.2:10911", wrapper=slave_wrapper, channel="ch-s")
    assert result is not None
    assert (result.master_addr, result.ha_server_addr) == ("10.0.0.1:10911", "10.0.0.1:10912")
    route = routes.pickup_topic_route_data("TopicA")
    assert route is not None
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}
    assert route.queue_datas[0].read_queue_nums == 4
    assert routes.pickup_topic_route_data("SlaveOnly") is None


def test_prime_slave_of_acting_master_group_registers_read_only_queues_in_5x() -> None:
    routes = RouteInfoManager(profile=APACHE_5_3_3)
    register(routes, broker_id=1, addr="10.0.0.2:10911", enable_acting_master=True)
    route = routes.pickup_topic_route_data("TopicA")
    assert route is not None
    assert route.queue_datas[0].perm == 4  # write bit taken away: the prime slave only serves reads


@pytest.mark.parametrize("profile", PROFILES)
def test_slave_promoted_to_master_keeps_one_entry_per_address(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(
        routes, broker_id=1, addr="10.0.0.2:10911", enable_acting_master=False if profile.is_5x else None
    )
    register(routes, broker_id=0, addr="10.0.0.2:10911", wrapper=make_wrapper("TopicA", "TopicB", counter=2))
    assert routes.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.2:10911"}


def test_unchanged_data_version_keeps_old_queues_in_4x_but_adds_missing_topics_in_5x() -> None:
    for profile, expect_new in ((APACHE_4_9_8, False), (APACHE_5_3_3, True)):
        routes = RouteInfoManager(profile=profile)
        register(routes, wrapper=make_wrapper("TopicA", "TopicB", counter=3))
        register(routes, wrapper=make_wrapper("TopicA", "TopicB", "Late", counter=3, queues=8))
        assert (routes.pickup_topic_route_data("Late") is not None) is expect_new, profile.name
        route = routes.pickup_topic_route_data("TopicA")
        assert route is not None and route.queue_datas[0].read_queue_nums == 4, profile.name


@pytest.mark.parametrize("profile", PROFILES)
def test_changed_data_version_updates_queues(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes, wrapper=make_wrapper("TopicA", "TopicB", counter=1))
    register(routes, wrapper=make_wrapper("TopicA", "TopicB", counter=2, queues=8))
    route = routes.pickup_topic_route_data("TopicB")
    assert route is not None and route.queue_datas[0].write_queue_nums == 8


def test_5x_refuses_a_single_topic_registration_before_the_first_full_one() -> None:
    routes = RouteInfoManager(profile=APACHE_5_3_3)
    assert register(routes, topics=("Only",)) is None
    assert routes.broker_addr_table["broker-a"].broker_addrs == {}
    assert register(routes) is not None
    assert register(routes, wrapper=make_wrapper("Only", counter=2)) is not None
    assert routes.pickup_topic_route_data("Only") is not None
    # 4.9.8 has no such rule.
    old = RouteInfoManager(profile=APACHE_4_9_8)
    assert register(old, topics=("Only",)) is not None


@pytest.mark.parametrize("profile", PROFILES)
def test_unregister_removes_group_cluster_and_queues(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes)
    register(routes, name="broker-b", addr="10.0.0.3:10911", topics=("TopicA", "OnlyB"), channel="ch-b")
    routes.unregister_broker("C", "10.0.0.1:10911", "broker-a", 0)
    route = routes.pickup_topic_route_data("TopicA")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-b"]
    assert routes.pickup_topic_route_data("TopicB") is None
    assert routes.cluster_info().cluster_addr_table == {"C": ["broker-b"]}
    routes.unregister_broker("C", "10.0.0.3:10911", "broker-b", 0)
    assert routes.cluster_info().broker_addr_table == {} and routes.cluster_info().cluster_addr_table == {}
    assert routes.topic_queue_table == {}


@pytest.mark.parametrize("profile", PROFILES)
def test_channel_destroy_unregisters_only_the_broker_of_that_channel(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes, channel="ch-a")
    register(routes, name="broker-b", addr="10.0.0.3:10911", topics=("OnlyB", "Other"), channel="ch-b")
    assert routes.on_channel_destroy("ch-client") is False
    assert routes.on_channel_destroy("ch-a") is True
    assert routes.pickup_topic_route_data("TopicA") is None
    assert routes.pickup_topic_route_data("OnlyB") is not None


@pytest.mark.parametrize("profile", PROFILES)
def test_scan_expires_brokers_after_120_seconds(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes, channel="ch-a", now=1000.0)
    register(
        routes, name="broker-b", addr="10.0.0.3:10911", topics=("OnlyB", "Other"), channel="ch-b", now=1060.0
    )
    assert routes.scan_not_active_brokers(1120.0) == []
    assert routes.scan_not_active_brokers(1120.5) == ["ch-a"]
    assert routes.pickup_topic_route_data("TopicA") is None
    assert routes.pickup_topic_route_data("OnlyB") is not None
    routes.update_broker_info_update_timestamp("C", "10.0.0.3:10911", 1170.0)
    assert routes.scan_not_active_brokers(1240.0) == []
    assert routes.scan_not_active_brokers(1290.1) == ["ch-b"]


def test_5x_broker_chooses_its_heartbeat_timeout_and_4x_ignores_it() -> None:
    for profile, expired_at_31 in ((APACHE_5_3_3, True), (APACHE_4_9_8, False)):
        routes = RouteInfoManager(profile=profile)
        register(routes, now=0.0, heartbeat_timeout_ms=30_000)
        assert bool(routes.scan_not_active_brokers(31.0)) is expired_at_31, profile.name


@pytest.mark.parametrize("profile", PROFILES)
def test_write_permission_wipe_and_add(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes, topics=("TopicA", "TopicB", "TopicC"))
    register(routes, name="broker-b", addr="10.0.0.3:10911", topics=("TopicA", "OnlyB"), channel="ch-b")
    assert routes.wipe_write_perm_of_broker("broker-a") == 3
    perms = {q.broker_name: q.perm for q in route_of(routes, "TopicA").queue_datas}
    assert perms == {"broker-a": 4, "broker-b": 6}
    assert routes.add_write_perm_of_broker("broker-a") == 3
    assert route_of(routes, "TopicC").queue_datas[0].perm == 6
    assert routes.wipe_write_perm_of_broker("nobody") == 0


@pytest.mark.parametrize("profile", PROFILES)
def test_delete_topic_everywhere_or_per_cluster(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes, topics=("Shared", "TopicA"))
    register(
        routes,
        name="broker-x",
        addr="10.0.0.9:10911",
        topics=("Shared", "TopicX"),
        channel="ch-x",
        cluster="X",
    )
    routes.delete_topic("Shared", "X")
    route = routes.pickup_topic_route_data("Shared")
    assert route is not None and [q.broker_name for q in route.queue_datas] == ["broker-a"]
    routes.delete_topic("Shared", "NoSuchCluster")
    assert routes.pickup_topic_route_data("Shared") is not None
    routes.delete_topic("Shared")
    assert routes.pickup_topic_route_data("Shared") is None


@pytest.mark.parametrize("profile", PROFILES)
def test_topic_lists(profile: ApacheProfile) -> None:
    routes = RouteInfoManager(profile=profile)
    register(routes, topics=("TopicA", "TopicB"))
    register(
        routes,
        name="broker-x",
        addr="10.0.0.9:10911",
        topics=("TopicX", "TopicY"),
        channel="ch-x",
        cluster="X",
    )
    register(
        routes,
        name="broker-u",
        addr="10.0.0.7:10911",
        wrapper=make_wrapper("Unit", "Unit2", sys_flag=1),
        channel="u",
    )
    register(
        routes,
        name="broker-s",
        addr="10.0.0.6:10911",
        wrapper=make_wrapper("Sub", "Sub2", sys_flag=2),
        channel="s",
    )
    assert set(routes.all_topics().topic_list) == {
        "TopicA",
        "TopicB",
        "TopicX",
        "TopicY",
        "Unit",
        "Unit2",
        "Sub",
        "Sub2",
    }
    assert set(routes.topics_by_cluster("X").topic_list) == {"TopicX", "TopicY"}
    assert routes.topics_by_cluster("Nope").topic_list == []
    system = routes.system_topics()
    assert set(system.topic_list) == {"C", "X", "broker-a", "broker-x", "broker-u", "broker-s"}
    assert system.broker_addr in {"10.0.0.1:10911", "10.0.0.9:10911", "10.0.0.7:10911", "10.0.0.6:10911"}
    assert set(routes.unit_topics().topic_list) == {"Unit", "Unit2"}
    assert set(routes.has_unit_sub_topics().topic_list) == {"Sub", "Sub2"}
    assert set(routes.has_unit_sub_ununit_topics().topic_list) == {"Sub", "Sub2"}


def test_route_lists_brokers_and_queues_in_java_hash_order_not_registration_order() -> None:
    routes = RouteInfoManager(profile=APACHE_5_3_3)
    names = [f"broker-{c}" for c in "zyxwvutsrq"]
    for i, name in enumerate(names):
        register(routes, name=name, addr=f"10.0.1.{i}:10911", topics=("Shared", f"own-{i}"), channel=name)
    route = routes.pickup_topic_route_data("Shared")
    assert route is not None
    java_order = in_table_order(names, string_hash, 16)
    assert java_order != names  # the test is only meaningful if the orders differ
    assert [b.broker_name for b in route.broker_datas] == java_order
    assert [q.broker_name for q in route.queue_datas] == java_order


def test_cluster_info_order_follows_each_versions_table_size() -> None:
    names = [f"group-{i:02d}-node" for i in range(40)]
    orders = {}
    for profile in (APACHE_4_9_8, APACHE_5_3_3):
        routes = RouteInfoManager(profile=profile)
        for i, name in enumerate(names):
            register(routes, name=name, addr=f"10.0.2.{i}:10911", channel=name)
        table = dict(routes.cluster_info().to_bean().written())["brokerAddrTable"]
        assert isinstance(table, dict)
        orders[profile.name] = list(table)
    assert orders["4.9.8"] == in_table_order(names, string_hash, 128)
    assert orders["5.3.3"] == in_table_order(names, string_hash, 256)
    assert orders["4.9.8"] != orders["5.3.3"]


def test_delete_topic_with_broker_registration_option_in_5x() -> None:
    routes = RouteInfoManager(NamesrvConfig(delete_topic_with_broker_registration=True), APACHE_5_3_3)
    register(routes, wrapper=make_wrapper("Keep", "Drop", counter=1))
    register(routes, wrapper=make_wrapper("Keep", "New", counter=2))
    assert routes.pickup_topic_route_data("Drop") is None
    assert routes.pickup_topic_route_data("New") is not None


def test_acting_master_stands_in_when_enabled() -> None:
    routes = RouteInfoManager(NamesrvConfig(support_acting_master=True), APACHE_5_3_3)
    register(routes, enable_acting_master=True)
    register(routes, broker_id=1, addr="10.0.0.2:10911", channel="ch-s", enable_acting_master=True)
    routes.unregister_broker("C", "10.0.0.1:10911", "broker-a", 0)
    route = routes.pickup_topic_route_data("TopicA")
    assert route is not None
    assert route.queue_datas[0].perm == 4
    assert route.broker_datas[0].broker_addrs == {0: "10.0.0.2:10911"}
    # The stored table still knows the slave by its real id.
    assert routes.broker_addr_table["broker-a"].broker_addrs == {1: "10.0.0.2:10911"}


def test_generation_moves_on_every_change() -> None:
    routes = RouteInfoManager()
    seen = [routes.generation]
    register(routes)
    seen.append(routes.generation)
    routes.wipe_write_perm_of_broker("broker-a")
    seen.append(routes.generation)
    routes.delete_topic("TopicA")
    seen.append(routes.generation)
    assert seen == sorted(set(seen))
