"""The request handlers, driven in-process: codes, remarks, header fields and bodies as Apache answers."""

from __future__ import annotations

import zlib

import pytest

from nameserver.config import NamesrvConfig, parse_properties
from nameserver.kvconfig import KVConfigManager
from nameserver.processor import NamesrvProcessor
from nameserver.profile import APACHE_4_9_8, APACHE_5_3_3, ApacheProfile
from nameserver.route_table import RouteInfoManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.cluster import ClusterInfo
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.route import QueueData, TopicRouteData
from rocketmq_wire.bodies.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper, TopicList
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers import RegisterTopicRequestHeader
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    RegisterBrokerRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
)

PROFILES = [pytest.param(APACHE_4_9_8, id="4.9.8"), pytest.param(APACHE_5_3_3, id="5.3.3")]
FAQ_4 = "\nSee http://rocketmq.apache.org/docs/faq/ for further details."
FAQ_5 = "\nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."


class Server:
    """A processor with a settable clock, and shorthands for sending it requests."""

    def __init__(self, profile: ApacheProfile = APACHE_5_3_3, config: NamesrvConfig | None = None) -> None:
        self.now = 0.0
        self.config = config or NamesrvConfig()
        self.routes = RouteInfoManager(self.config, profile)
        self.processor = NamesrvProcessor(
            self.routes, KVConfigManager(), lambda: self.now, self.config, profile
        )

    def send(
        self,
        code: int,
        header: CommandHeader | None = None,
        body: bytes = b"",
        *,
        version: int = MQVersion.V5_3_3,
        channel: str = "client",
    ) -> RemotingCommand:
        request = RemotingCommand.request(code, header, body, version=version)
        response = self.processor.process(request, channel)
        assert response.is_response and response.opaque == request.opaque
        # Whatever the handler built must survive the wire.
        return RemotingCommand.decode(response.encode())

    def register(
        self,
        *topics: str,
        broker_id: int = 0,
        addr: str = "10.0.0.1:10911",
        counter: int = 1,
        compressed: bool = False,
        crc: int | None = None,
        channel: str = "broker",
    ) -> RemotingCommand:
        table = {t: TopicConfig(topic_name=t, read_queue_nums=4, write_queue_nums=4) for t in topics}
        wrapper = TopicConfigSerializeWrapper(
            topic_config_table=table, data_version=DataVersion(timestamp=5, counter=counter)
        )
        body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).encode(compressed=compressed)
        header = RegisterBrokerRequestHeader(
            broker_name="broker-a",
            broker_addr=addr,
            cluster_name="DefaultCluster",
            ha_server_addr=addr.replace(":10911", ":10912"),
            broker_id=broker_id,
            compressed=compressed,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF if crc is None else crc,
        )
        return self.send(RequestCode.REGISTER_BROKER, header, body, channel=channel)

    def route(self, topic: str, *, version: int = MQVersion.V5_3_3) -> RemotingCommand:
        return self.send(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic), version=version
        )


@pytest.mark.parametrize("profile", PROFILES)
def test_register_then_route(profile: ApacheProfile) -> None:
    server = Server(profile)
    reply = server.register("TopicA", "TopicB")
    assert (reply.code, reply.fields(), reply.body) == (ResponseCode.SUCCESS, {}, b"")
    response = server.route("TopicA")
    assert response.code == ResponseCode.SUCCESS
    route = TopicRouteData.from_json(response.body)
    assert [b.broker_addrs for b in route.broker_datas] == [{0: "10.0.0.1:10911"}]
    assert route.queue_datas[0].write_queue_nums == 4


@pytest.mark.parametrize("profile", PROFILES)
def test_unknown_topic_is_topic_not_exist_with_apaches_remark(profile: ApacheProfile) -> None:
    response = Server(profile).route("NoSuchTopic")
    faq = FAQ_5 if profile.is_5x else FAQ_4
    assert response.code == 17
    assert response.remark == "No topic route info in name server for the topic: NoSuchTopic" + faq
    assert response.body == b""


def test_route_dialect_follows_the_client_version() -> None:
    server = Server()
    server.register("TopicA", "TopicB")
    strict = server.route("TopicA", version=MQVersion.V4_9_8).body
    bare = server.route("TopicA", version=63).body  # the C++ client announces an old version
    assert b'"brokerAddrs":{"0":"10.0.0.1:10911"}' in strict
    assert b'"brokerAddrs":{0:"10.0.0.1:10911"}' in bare
    asked = server.send(
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        GetRouteInfoRequestHeader(topic="TopicA", accept_standard_json_only=True),
        version=63,
    )
    assert asked.body == strict


@pytest.mark.parametrize("profile", PROFILES)
def test_crc_mismatch_is_refused(profile: ApacheProfile) -> None:
    server = Server(profile)
    reply = server.register("TopicA", "TopicB", crc=12345)
    assert (reply.code, reply.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert server.route("TopicA").code == ResponseCode.TOPIC_NOT_EXIST
    # A zero CRC means "not computed" and is not checked.
    assert server.register("TopicA", "TopicB", crc=0).code == ResponseCode.SUCCESS


@pytest.mark.parametrize("profile", PROFILES)
def test_compressed_registration(profile: ApacheProfile) -> None:
    server = Server(profile)
    assert server.register("TopicA", "TopicB", compressed=True).code == ResponseCode.SUCCESS
    assert server.route("TopicB").code == ResponseCode.SUCCESS


def test_undecodable_registration_body_is_a_system_error() -> None:
    server = Server()
    body = b"\x78\x9c not really zlib"
    header = RegisterBrokerRequestHeader(
        broker_name="b",
        broker_addr="1.1.1.1:1",
        cluster_name="c",
        ha_server_addr="1.1.1.1:2",
        broker_id=0,
        compressed=True,
        body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
    )
    reply = server.send(RequestCode.REGISTER_BROKER, header, body)
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark is not None and "Failed to decode RegisterBrokerBody" in reply.remark


def test_old_broker_sends_a_bare_topic_table() -> None:
    server = Server(APACHE_4_9_8)
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table={"Old": TopicConfig(topic_name="Old")},
        data_version=DataVersion(timestamp=1, counter=1),
    )
    header = RegisterBrokerRequestHeader(
        broker_name="b", broker_addr="1.1.1.1:1", cluster_name="c", ha_server_addr="1.1.1.1:2", broker_id=0
    )
    reply = server.send(
        RequestCode.REGISTER_BROKER, header, wrapper.to_json(), version=MQVersion.value_of("V3_0_10")
    )
    assert reply.code == ResponseCode.SUCCESS
    assert server.route("Old").code == ResponseCode.SUCCESS


@pytest.mark.parametrize("profile", PROFILES)
def test_slave_registration_answer_names_master_and_ha_address(profile: ApacheProfile) -> None:
    server = Server(profile)
    server.register("TopicA", "TopicB")
    reply = server.register("TopicA", "TopicB", broker_id=1, addr="10.0.0.2:10911", channel="slave")
    assert reply.fields() == {"masterAddr": "10.0.0.1:10911", "haServerAddr": "10.0.0.1:10912"}


@pytest.mark.parametrize("profile", PROFILES)
def test_registration_answer_carries_the_order_topic_namespace(profile: ApacheProfile) -> None:
    server = Server(profile)
    assert server.register("TopicA", "TopicB").body == b""
    put = PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key="GoldenOrdered", value="broker-a:4")
    assert server.send(RequestCode.PUT_KV_CONFIG, put).code == ResponseCode.SUCCESS
    assert server.register("TopicA", "TopicB").body == b'{"table":{"GoldenOrdered":"broker-a:4"}}'


def test_5x_can_be_told_not_to_return_order_topics_to_brokers() -> None:
    server = Server(APACHE_5_3_3, NamesrvConfig(return_order_topic_config_to_broker=False))
    server.send(
        RequestCode.PUT_KV_CONFIG,
        PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key="k", value="v"),
    )
    assert server.register("TopicA", "TopicB").body == b""


def test_5x_refuses_single_topic_first_registration() -> None:
    reply = Server(APACHE_5_3_3).register("Only")
    assert (reply.code, reply.remark) == (ResponseCode.SYSTEM_ERROR, "register broker failed")


def test_order_topic_conf_in_routes_only_when_enabled() -> None:
    for enabled in (False, True):
        server = Server(config=NamesrvConfig(order_message_enable=enabled))
        server.register("TopicA", "TopicB")
        put = PutKVConfigRequestHeader(namespace="ORDER_TOPIC_CONFIG", key="TopicA", value="broker-a:4")
        server.send(RequestCode.PUT_KV_CONFIG, put)
        route = TopicRouteData.from_json(server.route("TopicA").body)
        assert route.order_topic_conf == ("broker-a:4" if enabled else None)


def test_kv_config_requests() -> None:
    server = Server()
    get = GetKVConfigRequestHeader(namespace="ns", key="k")
    missing = server.send(RequestCode.GET_KV_CONFIG, get)
    assert (missing.code, missing.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        "No config item, Namespace: ns Key: k",
    )
    assert int(missing.code) == 22
    listing = server.send(
        RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader(namespace="ns")
    )
    assert (listing.code, listing.remark) == (ResponseCode.QUERY_NOT_FOUND, "No config item, Namespace: ns")
    server.send(RequestCode.PUT_KV_CONFIG, PutKVConfigRequestHeader(namespace="ns", key="k", value="v"))
    found = server.send(RequestCode.GET_KV_CONFIG, get)
    assert (found.code, found.fields()) == (ResponseCode.SUCCESS, {"value": "v"})
    listing = server.send(
        RequestCode.GET_KVLIST_BY_NAMESPACE, GetKVListByNamespaceRequestHeader(namespace="ns")
    )
    assert KVTable.from_json(listing.body).table == {"k": "v"}
    deleted = server.send(RequestCode.DELETE_KV_CONFIG, DeleteKVConfigRequestHeader(namespace="ns", key="k"))
    assert deleted.code == ResponseCode.SUCCESS
    assert server.send(RequestCode.GET_KV_CONFIG, get).code == ResponseCode.QUERY_NOT_FOUND


def test_missing_required_header_field_is_a_system_error() -> None:
    server = Server()
    request = RemotingCommand.request(RequestCode.PUT_KV_CONFIG, ext_fields={"namespace": "ns", "key": "k"})
    reply = server.processor.process(request, "client")
    assert reply.code == ResponseCode.SYSTEM_ERROR
    assert reply.remark is not None and "<value> is null" in reply.remark


def test_unknown_code_is_not_supported() -> None:
    reply = Server().processor.process(RemotingCommand.request(RequestCode.SEND_MESSAGE), "client")
    assert (reply.code, reply.remark) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        " request type 10 not supported",
    )


@pytest.mark.parametrize("profile", PROFILES)
def test_write_permission_requests_and_the_route_cache(profile: ApacheProfile) -> None:
    server = Server(profile)
    server.register("TopicA", "TopicB")
    assert TopicRouteData.from_json(server.route("TopicA").body).queue_datas[0].perm == 6
    wiped = server.send(
        RequestCode.WIPE_WRITE_PERM_OF_BROKER, WipeWritePermOfBrokerRequestHeader(broker_name="broker-a")
    )
    assert wiped.fields() == {"wipeTopicCount": "2"}
    assert TopicRouteData.from_json(server.route("TopicA").body).queue_datas[0].perm == 4
    added = server.send(
        RequestCode.ADD_WRITE_PERM_OF_BROKER, AddWritePermOfBrokerRequestHeader(broker_name="broker-a")
    )
    assert added.fields() == {"addTopicCount": "2"}
    assert TopicRouteData.from_json(server.route("TopicA").body).queue_datas[0].perm == 6


@pytest.mark.parametrize("profile", PROFILES)
def test_query_data_version(profile: ApacheProfile) -> None:
    server = Server(profile)
    header = QueryDataVersionRequestHeader(
        broker_name="broker-a", broker_addr="10.0.0.1:10911", cluster_name="DefaultCluster", broker_id=0
    )
    unknown = server.send(
        RequestCode.QUERY_DATA_VERSION, header, DataVersion(timestamp=5, counter=1).to_json()
    )
    assert (unknown.fields(), unknown.body) == ({"changed": "true"}, b"")
    server.register("TopicA", "TopicB", counter=1)
    server.now = 100.0
    same = server.send(RequestCode.QUERY_DATA_VERSION, header, DataVersion(timestamp=5, counter=1).to_json())
    assert same.fields() == {"changed": "false"}
    assert DataVersion.from_json(same.body).counter == 1
    # An unchanged version counts as a heartbeat: the broker survives past 120 s from its registration.
    assert server.routes.scan_not_active_brokers(150.0) == []
    newer = server.send(RequestCode.QUERY_DATA_VERSION, header, DataVersion(timestamp=5, counter=2).to_json())
    assert newer.fields() == {"changed": "true"}


@pytest.mark.parametrize("profile", PROFILES)
def test_cluster_info_and_unregister(profile: ApacheProfile) -> None:
    server = Server(profile)
    server.register("TopicA", "TopicB")
    info = ClusterInfo.from_json(server.send(RequestCode.GET_BROKER_CLUSTER_INFO).body)
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    header = UnRegisterBrokerRequestHeader(
        broker_name="broker-a", broker_addr="10.0.0.1:10911", cluster_name="DefaultCluster", broker_id=0
    )
    assert server.send(RequestCode.UNREGISTER_BROKER, header).code == ResponseCode.SUCCESS
    assert (
        server.send(RequestCode.GET_BROKER_CLUSTER_INFO).body
        == b'{"brokerAddrTable":{},"clusterAddrTable":{}}'
    )
    assert server.route("TopicA").code == ResponseCode.TOPIC_NOT_EXIST


@pytest.mark.parametrize("profile", PROFILES)
def test_topic_list_requests(profile: ApacheProfile) -> None:
    server = Server(profile)
    server.register("TopicA", "TopicB")
    everything = TopicList.from_json(server.send(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body)
    assert sorted(everything.topic_list) == ["TopicA", "TopicB"]
    by_cluster = server.send(
        RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster="DefaultCluster")
    )
    assert sorted(TopicList.from_json(by_cluster.body).topic_list) == ["TopicA", "TopicB"]
    system = TopicList.from_json(server.send(RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS).body)
    assert (
        sorted(system.topic_list) == ["DefaultCluster", "broker-a"] and system.broker_addr == "10.0.0.1:10911"
    )
    for code in (
        RequestCode.GET_UNIT_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST,
        RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
    ):
        assert server.send(code).body == b'{"topicList":[]}'
    deleted = server.send(
        RequestCode.DELETE_TOPIC_IN_NAMESRV, DeleteTopicFromNamesrvRequestHeader(topic="TopicA")
    )
    assert deleted.code == ResponseCode.SUCCESS
    assert server.route("TopicA").code == ResponseCode.TOPIC_NOT_EXIST


def test_5x_topic_lists_can_be_disabled() -> None:
    server = Server(APACHE_5_3_3, NamesrvConfig(enable_all_topic_list=False, enable_topic_list=False))
    for code, header in (
        (RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER, None),
        (RequestCode.GET_TOPICS_BY_CLUSTER, GetTopicsByClusterRequestHeader(cluster="c")),
        (RequestCode.GET_UNIT_TOPIC_LIST, None),
    ):
        reply = server.send(code, header)
        assert (reply.code, reply.remark) == (ResponseCode.SYSTEM_ERROR, "disable")


def test_namesrv_config_update_and_get() -> None:
    server = Server()
    reply = server.send(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"orderMessageEnable=true\nunknownKey=1\n")
    assert reply.code == ResponseCode.SUCCESS and server.config.order_message_enable is True
    refused = server.send(RequestCode.UPDATE_NAMESRV_CONFIG, body=b"kvConfigPath=/etc/passwd\n")
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, "Can not update config path")
    assert server.config.kv_config_path is None
    shown = parse_properties(server.send(RequestCode.GET_NAMESRV_CONFIG).body.decode())
    assert shown["orderMessageEnable"] == "true"
    assert shown["scanNotActiveBrokerInterval"] == "5000"


def test_broker_heartbeat_keeps_a_5x_broker_alive() -> None:
    server = Server(APACHE_5_3_3)
    server.register("TopicA", "TopicB")
    heartbeat = RemotingCommand.request(
        RequestCode.BROKER_HEARTBEAT,
        ext_fields={
            "clusterName": "DefaultCluster",
            "brokerAddr": "10.0.0.1:10911",
            "brokerName": "broker-a",
        },
    )
    server.now = 100.0
    assert server.processor.process(heartbeat, "broker").code == ResponseCode.SUCCESS
    assert server.routes.scan_not_active_brokers(200.0) == []
    assert server.routes.scan_not_active_brokers(221.0) == ["broker"]


def test_properties_parsing() -> None:
    text = "# comment\n! other\n a = 1\nb:2\nc 3\nd=multi\\\n    line\ne=tab\\tand\\u0041\nf\n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": "multiline",
        "e": "tab\tandA",
        "f": "",
    }


def test_config_update_types() -> None:
    config = NamesrvConfig()
    applied = config.update(
        {"scanNotActiveBrokerInterval": "7000", "clusterTest": "TRUE", "productEnvName": "x"}
    )
    assert applied == ["scanNotActiveBrokerInterval", "clusterTest", "productEnvName"]
    assert (config.scan_not_active_broker_interval, config.cluster_test, config.product_env_name) == (
        7000,
        True,
        "x",
    )
    assert config.update({"scanNotActiveBrokerInterval": "soon"}) == []
    assert config.scan_not_active_broker_interval == 7000


def test_register_topic_in_namesrv_adds_queues_of_known_brokers_in_5x() -> None:
    server = Server(APACHE_5_3_3)
    server.register("TopicA", "TopicB")
    known = TopicRouteData(
        queue_datas=[QueueData(broker_name="broker-a", read_queue_nums=2, write_queue_nums=2, perm=6)]
    )
    header = RegisterTopicRequestHeader(topic="Static")
    assert (
        server.send(RequestCode.REGISTER_TOPIC_IN_NAMESRV, header, known.to_json()).code
        == ResponseCode.SUCCESS
    )
    assert TopicRouteData.from_json(server.route("Static").body).queue_datas[0].read_queue_nums == 2
    unknown = TopicRouteData(
        queue_datas=[QueueData(broker_name="broker-z", read_queue_nums=2, write_queue_nums=2)]
    )
    header = RegisterTopicRequestHeader(topic="Nowhere")
    assert (
        server.send(RequestCode.REGISTER_TOPIC_IN_NAMESRV, header, unknown.to_json()).code
        == ResponseCode.SUCCESS
    )
    assert server.route("Nowhere").code == ResponseCode.TOPIC_NOT_EXIST
    # 4.9.8 has no such request.
    old = Server(APACHE_4_9_8).send(RequestCode.REGISTER_TOPIC_IN_NAMESRV, header, unknown.to_json())
    assert old.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


def test_cached_routes_follow_kv_and_setting_changes_made_outside_requests() -> None:
    server = Server()
    server.register("TopicA", "TopicB")
    assert TopicRouteData.from_json(server.route("TopicA").body).order_topic_conf is None
    server.processor.kv.put("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:4")
    server.config.order_message_enable = True
    assert TopicRouteData.from_json(server.route("TopicA").body).order_topic_conf == "broker-a:4"
    server.processor.kv.put("ORDER_TOPIC_CONFIG", "TopicA", "broker-a:8")
    assert TopicRouteData.from_json(server.route("TopicA").body).order_topic_conf == "broker-a:8"
