"""One handler per request code, each turning a request into a response over the route and KV tables.

This is the NameServer minus the network: :meth:`NamesrvProcessor.process` takes a decoded request and the
channel it came over and returns the answer, so it can be driven in-process (tests, golden replays) or by
the transport (:class:`nameserver.server.NameServer`). Answers follow Apache's ``DefaultRequestProcessor``:
same codes, same remarks, same header fields and bodies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Hashable

from nameserver.config import PATH_SETTINGS, NamesrvConfig, parse_properties
from nameserver.kvconfig import NAMESPACE_ORDER_TOPIC_CONFIG, KVConfigManager
from nameserver.profile import DEFAULT_PROFILE, ApacheProfile
from nameserver.route_table import RouteInfoManager, same_data_version
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.bodies.topic_config import (
    DataVersion,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
    TopicList,
)
from rocketmq_wire.codes import MQVersion, RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers import BrokerHeartbeatRequestHeader, RegisterTopicRequestHeader
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketmq_wire.message.stored import body_crc
from rocketmq_wire.transport.dispatch import describe_exception

logger = logging.getLogger("nameserver.processor")

#: Brokers older than this send a bare topic table as REGISTER_BROKER body.
_V3_0_11 = MQVersion.value_of("V3_0_11")
#: Clients from this version on get routes as strict JSON (quoted, sorted map keys).
_V4_9_4 = MQVersion.value_of("V4_9_4")

Clock = Callable[[], float]
RequestHandler = Callable[[RemotingCommand, Hashable], RemotingCommand]


class NamesrvProcessor:
    """The request handlers of one NameServer, sharing its tables, settings and clock."""

    def __init__(
        self,
        routes: RouteInfoManager,
        kv: KVConfigManager,
        clock: Clock,
        config: NamesrvConfig | None = None,
        profile: ApacheProfile = DEFAULT_PROFILE,
    ) -> None:
        self.routes = routes
        self.kv = kv
        self.clock = clock
        self.config = config or routes.config
        self.profile = profile
        self.handlers: dict[int, RequestHandler] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm_of_broker,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm_of_broker,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_config,
            RequestCode.GET_NAMESRV_CONFIG: self.get_config,
        }
        if profile.is_5x:
            self.handlers[RequestCode.BROKER_HEARTBEAT] = self.broker_heartbeat
            self.handlers[RequestCode.REGISTER_TOPIC_IN_NAMESRV] = self.register_topic_in_namesrv
        #: Route bodies by (topic, strict JSON), valid while tables and settings stay at ``_cache_key``.
        self._route_cache: dict[tuple[str, bool], bytes] = {}
        self._cache_key: tuple[int, int, bool] = (-1, -1, False)

    def process(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        """Answer one request; undecodable input becomes SYSTEM_ERROR as Java's remoting layer answers it."""
        handler = self.handlers.get(request.code)
        if handler is None:
            return self._respond(
                request,
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
                f" request type {request.code} not supported",
            )
        try:
            return handler(request, channel)
        except CodecError as exc:
            logger.warning("request code %d (opaque %d) refused: %s", request.code, request.opaque, exc)
            return self._respond(request, ResponseCode.SYSTEM_ERROR, describe_exception(exc))

    def _respond(
        self,
        request: RemotingCommand,
        code: int = ResponseCode.SUCCESS,
        remark: str | None = None,
        header: CommandHeader | None = None,
        body: bytes = b"",
    ) -> RemotingCommand:
        response = request.make_response(code, remark, header, body)
        response.version = self.profile.version
        return response

    def _disabled(self, request: RemotingCommand) -> RemotingCommand:
        return self._respond(request, ResponseCode.SYSTEM_ERROR, "disable")

    def _topic_list(self, request: RemotingCommand, topics: TopicList) -> RemotingCommand:
        return self._respond(request, body=topics.to_json())

    # -- KV config -------------------------------------------------------------------------------------

    def put_kv_config(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(PutKVConfigRequestHeader)
        self.kv.put(str(header.namespace), str(header.key), str(header.value))
        return self._respond(request)

    def get_kv_config(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(GetKVConfigRequestHeader)
        value = self.kv.get(str(header.namespace), str(header.key))
        if value is not None:
            return self._respond(request, header=GetKVConfigResponseHeader(value=value))
        return self._respond(
            request,
            ResponseCode.QUERY_NOT_FOUND,
            f"No config item, Namespace: {header.namespace} Key: {header.key}",
        )

    def delete_kv_config(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(DeleteKVConfigRequestHeader)
        self.kv.delete(str(header.namespace), str(header.key))
        return self._respond(request)

    def get_kv_list_by_namespace(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(GetKVListByNamespaceRequestHeader)
        table = self.kv.kv_table(str(header.namespace))
        if table is not None:
            return self._respond(request, body=table.to_json())
        return self._respond(
            request, ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {header.namespace}"
        )

    # -- brokers ---------------------------------------------------------------------------------------

    def register_broker(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(RegisterBrokerRequestHeader)
        body = request.body
        expected_crc = header.body_crc32 or 0
        if expected_crc != 0 and body_crc(body) != expected_crc:
            logger.warning("receive registerBroker request, crc32 not match, from %s", _peer(channel))
            return self._respond(request, ResponseCode.SYSTEM_ERROR, "crc32 not match")

        wrapper: TopicConfigSerializeWrapper
        filter_servers: list[str] | None = None
        if request.version >= _V3_0_11:
            registration = self._registration_body(body, bool(header.compressed))
            wrapper = registration.topic_config_serialize_wrapper
            filter_servers = registration.filter_server_list
        elif body:
            wrapper = TopicConfigSerializeWrapper.from_json(body)
        else:
            wrapper = TopicConfigSerializeWrapper(data_version=self._zero_version())

        result = self.routes.register_broker(
            cluster_name=str(header.cluster_name),
            broker_addr=str(header.broker_addr),
            broker_name=str(header.broker_name),
            broker_id=int(header.broker_id or 0),
            ha_server_addr=header.ha_server_addr,
            topic_config_wrapper=wrapper,
            filter_server_list=filter_servers,
            channel=channel,
            now=self.clock(),
            zone_name=request.fields().get("zoneName"),
            heartbeat_timeout_ms=header.heartbeat_timeout_millis,
            enable_acting_master=header.enable_acting_master,
        )
        if result is None:
            return self._respond(request, ResponseCode.SYSTEM_ERROR, "register broker failed")
        reply = RegisterBrokerResponseHeader(
            ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
        )
        order_conf = b""
        if not self.profile.is_5x or self.config.return_order_topic_config_to_broker:
            table = self.kv.kv_table(NAMESPACE_ORDER_TOPIC_CONFIG)
            order_conf = b"" if table is None else table.to_json()
        return self._respond(request, header=reply, body=order_conf)

    def _zero_version(self) -> DataVersion:
        return DataVersion(timestamp=0, counter=0, state_version=0 if self.profile.is_5x else None)

    def _registration_body(self, body: bytes, compressed: bool) -> RegisterBrokerBody:
        if not body:
            wrapper: TopicConfigSerializeWrapper
            if self.profile.is_5x:
                wrapper = TopicConfigAndMappingSerializeWrapper(data_version=self._zero_version())
            else:
                wrapper = TopicConfigSerializeWrapper(data_version=self._zero_version())
            return RegisterBrokerBody(topic_config_serialize_wrapper=wrapper)
        try:
            return RegisterBrokerBody.decode(body, compressed=compressed)
        except CodecError as exc:
            raise CodecError(f"Failed to decode RegisterBrokerBody: {exc}") from exc

    def unregister_broker(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(UnRegisterBrokerRequestHeader)
        self.routes.unregister_broker(
            str(header.cluster_name),
            str(header.broker_addr),
            str(header.broker_name),
            int(header.broker_id or 0),
        )
        return self._respond(request)

    def query_data_version(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(QueryDataVersionRequestHeader)
        cluster, addr = str(header.cluster_name), str(header.broker_addr)
        offered = DataVersion.from_json(request.body) if request.body else None
        known = self.routes.query_broker_topic_config(cluster, addr)
        changed = known is None or offered is None or not same_data_version(known, offered)
        if self.profile.is_5x or not changed:
            self.routes.update_broker_info_update_timestamp(cluster, addr, self.clock())
        body = b"" if known is None else known.to_json()
        return self._respond(request, header=QueryDataVersionResponseHeader(changed=changed), body=body)

    def broker_heartbeat(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(BrokerHeartbeatRequestHeader)
        self.routes.update_broker_info_update_timestamp(
            str(header.cluster_name), str(header.broker_addr), self.clock()
        )
        return self._respond(request)

    def wipe_write_perm_of_broker(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(WipeWritePermOfBrokerRequestHeader)
        count = self.routes.wipe_write_perm_of_broker(str(header.broker_name))
        logger.info(
            "wipe write perm of broker[%s], client: %s, %d", header.broker_name, _peer(channel), count
        )
        return self._respond(request, header=WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count))

    def add_write_perm_of_broker(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(AddWritePermOfBrokerRequestHeader)
        count = self.routes.add_write_perm_of_broker(str(header.broker_name))
        logger.info("add write perm of broker[%s], client: %s, %d", header.broker_name, _peer(channel), count)
        return self._respond(request, header=AddWritePermOfBrokerResponseHeader(add_topic_count=count))

    # -- routes and topics -----------------------------------------------------------------------------

    def get_route_info_by_topic(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(GetRouteInfoRequestHeader)
        topic = str(header.topic)
        strict = request.version >= _V4_9_4 or bool(header.accept_standard_json_only)
        key = (self.routes.generation, self.kv.generation, self.config.order_message_enable)
        if key != self._cache_key:
            self._route_cache.clear()
            self._cache_key = key
        body = self._route_cache.get((topic, strict))
        if body is None:
            route = self.routes.pickup_topic_route_data(topic)
            if route is None:
                return self._respond(
                    request,
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"No topic route info in name server for the topic: {topic}"
                    + self.profile.faq_suggestion(self.profile.apply_topic_faq_url),
                )
            if self.config.order_message_enable:
                route.order_topic_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
            body = route.to_json(standard_json=strict)
            if len(self._route_cache) < 4096:
                self._route_cache[(topic, strict)] = body
        return self._respond(request, body=body)

    def get_broker_cluster_info(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        return self._respond(request, body=self.routes.cluster_info().to_json())

    def get_all_topic_list(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        if self.profile.is_5x and not self.config.enable_all_topic_list:
            return self._disabled(request)
        return self._topic_list(request, self.routes.all_topics())

    def delete_topic_in_namesrv(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(DeleteTopicFromNamesrvRequestHeader)
        self.routes.delete_topic(str(header.topic), header.cluster_name)
        return self._respond(request)

    def register_topic_in_namesrv(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(RegisterTopicRequestHeader)
        if request.body:
            route = TopicRouteData.from_json(request.body)
            if route.queue_datas:
                self.routes.register_topic(str(header.topic), route.queue_datas)
        return self._respond(request)

    def get_topics_by_cluster(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        header = request.read_header(GetTopicsByClusterRequestHeader)
        if self.profile.is_5x and not self.config.enable_topic_list:
            return self._disabled(request)
        return self._topic_list(request, self.routes.topics_by_cluster(str(header.cluster)))

    def get_system_topic_list(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        return self._topic_list(request, self.routes.system_topics())

    def get_unit_topic_list(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        if self.profile.is_5x and not self.config.enable_topic_list:
            return self._disabled(request)
        return self._topic_list(request, self.routes.unit_topics())

    def get_has_unit_sub_topic_list(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        if self.profile.is_5x and not self.config.enable_topic_list:
            return self._disabled(request)
        return self._topic_list(request, self.routes.has_unit_sub_topics())

    def get_has_unit_sub_ununit_topic_list(
        self, request: RemotingCommand, channel: Hashable
    ) -> RemotingCommand:
        if self.profile.is_5x and not self.config.enable_topic_list:
            return self._disabled(request)
        return self._topic_list(request, self.routes.has_unit_sub_ununit_topics())

    # -- settings --------------------------------------------------------------------------------------

    def update_config(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        logger.info("updateConfig called by %s", _peer(channel))
        if not request.body:
            return self._respond(request)
        try:
            text = request.body.decode("utf-8")
        except UnicodeDecodeError:
            return self._respond(request, ResponseCode.SYSTEM_ERROR, "string2Properties error")
        properties = parse_properties(text)
        # Refused in both profiles: naming files remotely is how 4.x servers got their files overwritten.
        if PATH_SETTINGS & properties.keys():
            return self._respond(request, ResponseCode.NO_PERMISSION, "Can not update config path")
        applied = self.config.update(properties)
        if applied:
            self.routes.generation += 1
            logger.info("namesrv config updated: %s", ", ".join(applied))
        return self._respond(request)

    def get_config(self, request: RemotingCommand, channel: Hashable) -> RemotingCommand:
        return self._respond(request, body=self.config.to_properties_text().encode("utf-8"))


def _peer(channel: Hashable) -> str:
    """The remote address of a transport connection, or the token itself when driven in-process."""
    return str(getattr(channel, "remote_address", channel))
