"""The asyncio admin client: one object holding the connections, with a method per mqadmin operation.

Each operation lives in a module of its own (``cluster``, ``topics``, ``brokers``, ``consumers``,
``messages``) as a function of the request layer; this class owns that layer (one remoting client, so one
connection per server, and its signing credentials) and gives the functions a stable home.
"""

from __future__ import annotations

import ssl as ssl_module
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

from admin import (
    acl,
    auth,
    brokers,
    cluster,
    consumers,
    export,
    groups,
    lite,
    messages,
    namesrv,
    rt,
    stats,
    topics,
)
from admin.acl import AclVersionInfo
from admin.errors import AdminError
from admin.groups import GroupConfigOnBroker, GroupDeleted, OffsetCloned
from admin.lite import BrokerAnswer, LiteGroupLag
from admin.models import (
    BrokerAddress,
    ClientConnection,
    ConsumerConnections,
    ConsumerProgress,
    OffsetReset,
    PullResult,
    TopicDeleted,
    TopicStatus,
)
from admin.namesrv import WritePermChange
from admin.rpc import AdminRpc
from admin.rt import BrokerRt, SendCredentials, SendRtReport
from admin.stats import TopicGroupStats
from client.namesrv import parse_namesrv_list
from rocketmq_wire.bodies import (
    AclInfo,
    BrokerStatsData,
    ClusterInfo,
    ConsumerRunningInfo,
    ConsumeStatsList,
    GetBrokerClusterAclConfigResponseBody,
    GetBrokerLiteInfoResponseBody,
    GetLiteClientInfoResponseBody,
    GetLiteTopicInfoResponseBody,
    GetParentTopicInfoResponseBody,
    MessageQueue,
    PlainAccessConfig,
    ProducerTableInfo,
    SubscriptionGroupConfig,
    TopicConfig,
    TopicRouteData,
    UserInfo,
)
from rocketmq_wire.bodies.pop import MessageRequestMode, SetMessageRequestModeRequestBody
from rocketmq_wire.codes import SerializeType
from rocketmq_wire.headers.base import JAVA_LONG_MAX as LONG_MAX
from rocketmq_wire.message import MessageExt
from rocketmq_wire.topics import TOOLS_CONSUMER_GROUP, TRACE_TOPIC
from rocketmq_wire.trace import TraceContext

#: Timeout of each request, as the brief of the command line tools has it (mqadmin itself waits 20 s).
DEFAULT_TIMEOUT_MS = 3000


class Admin:
    """Administers a RocketMQ cluster through its NameServers: ``async with Admin("ns:9876") as admin``.

    ``namesrv`` is Java's ``namesrvAddr`` (``"host:port;host:port"``) or a list. With ``access_key`` and
    ``secret_key`` every request is signed for brokers with ACL enabled. Every request waits at most
    ``timeout_ms``. Failures raise :class:`~admin.errors.AdminError` subclasses.
    """

    def __init__(
        self,
        namesrv: str | Sequence[str],
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        ssl: ssl_module.SSLContext | None = None,
        serialize_type: SerializeType = SerializeType.JSON,
    ) -> None:
        try:
            self.namesrv_addresses = parse_namesrv_list(
                namesrv if isinstance(namesrv, str) else list(namesrv)
            )
        except ValueError as exc:
            raise AdminError(str(exc)) from None
        if timeout_ms <= 0:
            raise AdminError("timeout_ms must be positive")
        self._settings = (access_key, secret_key, security_token, timeout_ms, ssl, serialize_type)
        self._rpc: AdminRpc | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Set up the request layer; nothing connects until the first request."""
        if self._closed:
            raise AdminError("this admin client was closed; create a new one")
        if self._rpc is None:
            access_key, secret_key, token, timeout_ms, ssl, serialize_type = self._settings
            try:
                self._rpc = AdminRpc(
                    self.namesrv_addresses,
                    timeout_ms=timeout_ms,
                    access_key=access_key,
                    secret_key=secret_key,
                    security_token=token,
                    ssl=ssl,
                    serialize_type=serialize_type,
                )
            except ValueError as exc:
                raise AdminError(str(exc)) from None

    async def close(self) -> None:
        """Close every connection; idempotent."""
        self._closed = True
        if self._rpc is not None:
            await self._rpc.close()

    @property
    def rpc(self) -> AdminRpc:
        """The request layer, for requests this class has no method for."""
        if self._rpc is None:
            raise AdminError("the admin client is not started (use `async with Admin(...)` or start())")
        return self._rpc

    # -- NameServer ------------------------------------------------------------------------------------

    async def cluster_info(self) -> ClusterInfo:
        return await cluster.cluster_info(self.rpc)

    async def brokers(
        self, cluster_name: str | None = None, *, masters_only: bool = False
    ) -> list[BrokerAddress]:
        """Every broker process of a cluster (of all clusters when ``None``)."""
        return await cluster.cluster_brokers(self.rpc, cluster_name, masters_only=masters_only)

    async def topic_route(self, topic: str) -> TopicRouteData:
        """Raises :class:`~admin.errors.TopicNotFoundError` when no NameServer knows the topic."""
        return await cluster.topic_route(self.rpc, topic)

    async def topic_list(self) -> list[str]:
        return await cluster.topic_list(self.rpc)

    async def kv_get(self, namespace: str, key: str) -> str | None:
        return await cluster.kv_get(self.rpc, namespace, key)

    async def kv_list(self, namespace: str) -> dict[str, str]:
        return await cluster.kv_list(self.rpc, namespace)

    async def kv_put(self, namespace: str, key: str, value: str) -> list[str]:
        return await cluster.kv_put(self.rpc, namespace, key, value)

    async def kv_delete(self, namespace: str, key: str) -> list[str]:
        return await cluster.kv_delete(self.rpc, namespace, key)

    async def wipe_write_perm(self, broker_name: str) -> list[WritePermChange]:
        return await namesrv.wipe_write_perm(self.rpc, broker_name)

    async def add_write_perm(self, broker_name: str) -> list[WritePermChange]:
        return await namesrv.add_write_perm(self.rpc, broker_name)

    async def namesrv_config(self, addrs: Sequence[str] | None = None) -> dict[str, dict[str, str]]:
        return await namesrv.namesrv_config(self.rpc, addrs)

    async def update_namesrv_config(self, settings: Mapping[str, str]) -> list[str]:
        return await namesrv.update_namesrv_config(self.rpc, settings)

    async def order_conf(self, topic: str) -> str | None:
        return await namesrv.order_conf(self.rpc, topic)

    async def update_order_conf(self, topic: str, layout: str | None) -> list[str]:
        """Set the ordered topic's layout (``broker-a:4;broker-b:4``) everywhere; ``None`` deletes it."""
        return await namesrv.update_order_conf(self.rpc, topic, layout)

    async def topic_clusters(self, topic: str) -> list[str]:
        return await namesrv.topic_clusters(self.rpc, topic)

    # -- topics ----------------------------------------------------------------------------------------

    async def create_topic(
        self,
        topic: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        read_queue_nums: int = topics.DEFAULT_QUEUE_NUMS,
        write_queue_nums: int = topics.DEFAULT_QUEUE_NUMS,
        perm: int = topics.DEFAULT_PERM,
        order: bool = False,
        attributes: Mapping[str, str] | None = None,
        remove_attributes: Sequence[str] = (),
    ) -> list[str]:
        """Create or update on every master of ``cluster`` or on ``broker_addr``; returns the addresses.

        ``attributes`` set 5.x topic attributes (``{"message.type": "FIFO"}``), ``remove_attributes``
        drop some; a broker older than 5.0 is refused first (:class:`BrokerVersionError`)."""
        return await topics.create_topic(
            self.rpc,
            topic,
            cluster=cluster,
            broker_addr=broker_addr,
            read_queue_nums=read_queue_nums,
            write_queue_nums=write_queue_nums,
            perm=perm,
            order=order,
            attributes=attributes,
            remove_attributes=remove_attributes,
        )

    async def topic_config(self, topic: str, broker_addr: str) -> TopicConfig:
        """One broker's config of ``topic``, with its 5.x attributes (``attributes`` is None on 4.x)."""
        return await topics.topic_config(self.rpc, topic, broker_addr)

    async def delete_topic(self, topic: str, *, cluster: str | None = None) -> TopicDeleted:
        return await topics.delete_topic(self.rpc, topic, cluster=cluster)

    async def topic_status(self, topic: str) -> TopicStatus:
        return await topics.topic_status(self.rpc, topic)

    async def update_topic_perm(
        self, topic: str, perm: int, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return await topics.update_topic_perm(self.rpc, topic, perm, cluster=cluster, broker_addr=broker_addr)

    # -- brokers ---------------------------------------------------------------------------------------

    async def broker_runtime_stats(self, broker_addr: str) -> dict[str, str]:
        return await brokers.runtime_stats(self.rpc, broker_addr)

    async def broker_config(self, broker_addr: str) -> dict[str, str]:
        return await brokers.broker_config(self.rpc, broker_addr)

    async def update_broker_config(self, broker_addr: str, settings: Mapping[str, str]) -> None:
        await brokers.update_broker_config(self.rpc, broker_addr, settings)

    # -- ACL (plain ACL, 4.9.x) -------------------------------------------------------------------------

    async def update_acl_account(self, broker_addr: str, account: PlainAccessConfig) -> None:
        """Create or update an ACL account on one broker (mqadmin updateAclConfig)."""
        await acl.update_account(self.rpc, broker_addr, account)

    async def delete_acl_account(self, broker_addr: str, access_key: str) -> None:
        """Delete an ACL account on one broker (mqadmin deleteAclConfig)."""
        await acl.delete_account(self.rpc, broker_addr, access_key)

    async def update_global_white_addrs(
        self, broker_addr: str, addresses: Sequence[str], acl_file: str | None = None
    ) -> str:
        """Replace a broker's global white list (mqadmin updateGlobalWhiteAddr); returns the file named."""
        return await acl.update_global_white(self.rpc, broker_addr, addresses, acl_file)

    async def acl_version(self, broker_addr: str) -> AclVersionInfo:
        """A broker's ACL file versions (mqadmin clusterAclConfigVersion)."""
        return await acl.acl_version(self.rpc, broker_addr)

    async def acl_config(self, broker_addr: str) -> GetBrokerClusterAclConfigResponseBody:
        """A broker's white list and accounts (4.9.7's mqadmin getAclConfig)."""
        return await acl.acl_config(self.rpc, broker_addr)

    # -- users and ACLs (ACL 2.0, 5.3+; see admin.auth) ---------------------------------------------------

    async def create_user(self, broker_addr: str, user: UserInfo) -> None:
        """Create a user on one broker (mqadmin createUser)."""
        await auth.create_user(self.rpc, broker_addr, user)

    async def update_user(self, broker_addr: str, user: UserInfo) -> None:
        """Change a user's password, type or status on one broker (mqadmin updateUser)."""
        await auth.update_user(self.rpc, broker_addr, user)

    async def delete_user(self, broker_addr: str, username: str) -> None:
        """Delete a user (and its ACL) on one broker (mqadmin deleteUser)."""
        await auth.delete_user(self.rpc, broker_addr, username)

    async def get_user(self, broker_addr: str, username: str) -> UserInfo | None:
        """One broker's user of that name, or ``None`` (mqadmin getUser)."""
        return await auth.get_user(self.rpc, broker_addr, username)

    async def list_users(self, broker_addr: str, name_filter: str | None = None) -> list[UserInfo]:
        """One broker's users, those whose name contains ``name_filter`` if given (mqadmin listUser)."""
        return await auth.list_users(self.rpc, broker_addr, name_filter)

    async def create_acl(self, broker_addr: str, acl_info: AclInfo) -> None:
        """Add entries to a subject's ACL on one broker (mqadmin createAcl)."""
        await auth.create_acl(self.rpc, broker_addr, acl_info)

    async def update_acl(self, broker_addr: str, acl_info: AclInfo) -> None:
        """Change entries of a subject's ACL on one broker (mqadmin updateAcl)."""
        await auth.update_acl(self.rpc, broker_addr, acl_info)

    async def delete_acl(self, broker_addr: str, subject: str, resource: str | None = None) -> None:
        """Delete a subject's ACL, or its entry for one resource, on one broker (mqadmin deleteAcl)."""
        await auth.delete_acl(self.rpc, broker_addr, subject, resource)

    async def get_acl(self, broker_addr: str, subject: str) -> AclInfo | None:
        """One broker's ACL of a subject, or ``None`` (mqadmin getAcl)."""
        return await auth.get_acl(self.rpc, broker_addr, subject)

    async def list_acls(
        self, broker_addr: str, subject_filter: str | None = None, resource_filter: str | None = None
    ) -> list[AclInfo]:
        """One broker's ACLs, filtered by subject and resource if asked (mqadmin listAcl)."""
        return await auth.list_acls(self.rpc, broker_addr, subject_filter, resource_filter)

    async def clean_expired_consume_queue(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return await brokers.clean_expired_consume_queue(self.rpc, cluster=cluster, broker_addr=broker_addr)

    async def delete_expired_commit_log(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return await brokers.delete_expired_commit_log(self.rpc, cluster=cluster, broker_addr=broker_addr)

    async def clean_unused_topic(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return await brokers.clean_unused_topic(self.rpc, cluster=cluster, broker_addr=broker_addr)

    # -- groups ----------------------------------------------------------------------------------------

    async def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        return await consumers.consumer_progress(self.rpc, group, topic)

    async def consumer_connections(self, group: str) -> ConsumerConnections:
        return await consumers.consumer_connections(self.rpc, group)

    async def consumer_running_info(
        self, group: str, client_id: str, jstack: bool = False
    ) -> ConsumerRunningInfo:
        """One member's own report (GET_CONSUMER_RUNNING_INFO, relayed by a broker of the group)."""
        return await consumers.consumer_running_info(self.rpc, group, client_id, jstack=jstack)

    async def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        return await consumers.producer_connections(self.rpc, group, topic)

    async def producer_table(self, broker_addr: str) -> ProducerTableInfo:
        """Every producer group on one broker with its connected producers (mqadmin ``producer``)."""
        return await consumers.producer_table(self.rpc, broker_addr)

    async def update_subscription_group(
        self, config: SubscriptionGroupConfig, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return await groups.update_subscription_group(
            self.rpc, config, cluster=cluster, broker_addr=broker_addr
        )

    async def delete_subscription_group(
        self,
        group: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        remove_offset: bool = False,
    ) -> GroupDeleted:
        return await groups.delete_subscription_group(
            self.rpc, group, cluster=cluster, broker_addr=broker_addr, remove_offset=remove_offset
        )

    async def set_consume_mode(
        self,
        topic: str,
        group: str,
        mode: MessageRequestMode | str,
        *,
        pop_share_queue_num: int = 0,
        cluster: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        """PULL or POP for the group's push consumers on ``topic`` (mqadmin ``setConsumeMode``)."""
        try:
            chosen = MessageRequestMode(mode.upper() if isinstance(mode, str) else mode)
        except ValueError:
            raise AdminError(f"unknown consume mode {mode!r}; choose PULL or POP") from None
        return await groups.set_consume_mode(
            self.rpc,
            topic,
            group,
            chosen,
            pop_share_queue_num=pop_share_queue_num,
            cluster=cluster,
            broker_addr=broker_addr,
        )

    async def consume_modes(self, broker_addr: str) -> dict[str, dict[str, SetMessageRequestModeRequestBody]]:
        """Topic -> group -> consume mode, as one broker holds them."""
        return await groups.consume_modes(self.rpc, broker_addr)

    async def subscription_group_configs(self, group: str) -> list[GroupConfigOnBroker]:
        return await groups.subscription_group_configs(self.rpc, group)

    async def broker_consume_stats(self, broker_addr: str, *, order_only: bool = False) -> ConsumeStatsList:
        return await groups.broker_consume_stats(self.rpc, broker_addr, order_only=order_only)

    async def clone_group_offset(self, src_group: str, dest_group: str, topic: str) -> list[OffsetCloned]:
        return await groups.clone_group_offset(self.rpc, src_group, dest_group, topic)

    async def allocate_queues(
        self, topic: str, client_ids: Sequence[str], strategy: str = "averagely"
    ) -> dict[str, list[MessageQueue]]:
        return await groups.allocate_queues(self.rpc, topic, client_ids, strategy)

    async def skip_accumulated(self, group: str, topic: str, *, force: bool = True) -> list[OffsetReset]:
        """Move the group to the end of every queue of ``topic`` (mqadmin ``skipAccumulatedMessage``)."""
        return await consumers.reset_offset_by_time(
            self.rpc, group, topic, consumers.RESET_TO_LATEST, force=force
        )

    async def update_consumer_offset(
        self, group: str, topic: str, queue_id: int, offset: int, *, broker_name: str | None = None
    ) -> str:
        return await consumers.update_consumer_offset(
            self.rpc, group, topic, queue_id, offset, broker_name=broker_name
        )

    async def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> list[OffsetReset]:
        return await consumers.reset_offset_by_time(self.rpc, group, topic, timestamp_ms, force=force)

    # -- lite topics (5.5; see admin.lite) ---------------------------------------------------------------

    async def broker_lite_info(self, broker_addr: str) -> GetBrokerLiteInfoResponseBody:
        """One broker's lite figures (mqadmin ``getBrokerLiteInfo -b``)."""
        return await lite.broker_lite_info(self.rpc, broker_addr)

    async def cluster_lite_info(self, cluster: str) -> list[BrokerAnswer[GetBrokerLiteInfoResponseBody]]:
        """Every master's lite figures (mqadmin ``getBrokerLiteInfo -c``)."""
        return await lite.cluster_lite_info(self.rpc, cluster)

    async def parent_topic_info(self, topic: str) -> list[BrokerAnswer[GetParentTopicInfoResponseBody]]:
        """A LITE parent topic on each broker of its route (mqadmin ``getParentTopicInfo``)."""
        return await lite.parent_topic_info(self.rpc, topic)

    async def lite_topic_info(
        self, parent_topic: str, lite_topic: str
    ) -> list[BrokerAnswer[GetLiteTopicInfoResponseBody]]:
        """One lite topic's offsets and subscribers on each broker (mqadmin ``getLiteTopicInfo``)."""
        return await lite.lite_topic_info(self.rpc, parent_topic, lite_topic)

    async def lite_group_info(
        self,
        parent_topic: str,
        group: str,
        lite_topic: str | None = None,
        top_k: int = lite.DEFAULT_TOP_K,
    ) -> LiteGroupLag:
        """A lite group's lag, per broker and in sum (mqadmin ``getLiteGroupInfo``)."""
        return await lite.lite_group_info(self.rpc, parent_topic, group, lite_topic, top_k)

    async def lite_client_info(
        self, parent_topic: str, group: str, client_id: str, max_count: int = lite.DEFAULT_CLIENT_LITE_TOPICS
    ) -> list[BrokerAnswer[GetLiteClientInfoResponseBody]]:
        """One client's lite subscriptions on each broker (mqadmin ``getLiteClientInfo``)."""
        return await lite.lite_client_info(self.rpc, parent_topic, group, client_id, max_count)

    async def trigger_lite_dispatch(
        self, parent_topic: str, group: str, client_id: str | None = None, broker_name: str | None = None
    ) -> list[BrokerAnswer[None]]:
        """Offer a lite group's ready lite topics to its clients again (mqadmin ``triggerLiteDispatch``)."""
        return await lite.trigger_lite_dispatch(self.rpc, parent_topic, group, client_id, broker_name)

    # -- messages --------------------------------------------------------------------------------------

    async def view_message(self, offset_msg_id: str, topic: str | None = None) -> MessageExt:
        return await messages.view_message(self.rpc, offset_msg_id, topic)

    async def get_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return await messages.get_message(self.rpc, msg_id, topic)

    async def query_by_key(
        self, topic: str, key: str, *, max_num: int | None = None, begin_ms: int = 0, end_ms: int = LONG_MAX
    ) -> list[MessageExt]:
        return await messages.query_messages(
            self.rpc, topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms
        )

    async def query_trace(self, msg_id: str, trace_topic: str = TRACE_TOPIC) -> list[TraceContext]:
        """Message trace records (Pub, SubBefore, SubAfter, EndTransaction) of ``msg_id``, oldest first."""
        return await messages.query_trace(self.rpc, msg_id, trace_topic)

    async def query_by_unique_key(self, topic: str, unique_key: str) -> list[MessageExt]:
        return await messages.query_messages(self.rpc, topic, unique_key, unique=True)

    async def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        broker_name: str | None = None,
        max_nums: int = 32,
        group: str = TOOLS_CONSUMER_GROUP,
    ) -> PullResult:
        return await messages.pull(
            self.rpc, topic, queue_id, offset, broker_name=broker_name, max_nums=max_nums, group=group
        )

    async def message_at(
        self, topic: str, queue_id: int, offset: int, *, broker_name: str | None = None
    ) -> MessageExt:
        return await messages.message_at(self.rpc, topic, queue_id, offset, broker_name=broker_name)

    async def consume_messages(
        self,
        topic: str,
        *,
        broker_name: str | None = None,
        queue_id: int | None = None,
        offset: int | None = None,
        begin_ms: int | None = None,
        end_ms: int | None = None,
        count: int = 128,
        on_queue: Callable[[int, int], None] | None = None,
    ) -> list[MessageExt]:
        return await messages.consume_messages(
            self.rpc,
            topic,
            broker_name=broker_name,
            queue_id=queue_id,
            offset=offset,
            begin_ms=begin_ms,
            end_ms=end_ms,
            count=count,
            on_queue=on_queue,
        )

    async def query_consume_queue(
        self,
        topic: str,
        queue_id: int,
        *,
        index: int = 0,
        count: int = 10,
        group: str | None = None,
        broker_addr: str | None = None,
    ) -> list[messages.ConsumeQueueAnswer]:
        return await messages.query_consume_queue(
            self.rpc, topic, queue_id, index=index, count=count, group=group, broker_addr=broker_addr
        )

    async def messages_in_range(
        self,
        topic: str,
        queue_id: int,
        begin: int,
        end: int | None = None,
        *,
        broker_name: str | None = None,
        expression: str = "*",
    ) -> list[MessageExt]:
        return await messages.messages_in_range(
            self.rpc, topic, queue_id, begin, end, broker_name=broker_name, expression=expression
        )

    # -- export -----------------------------------------------------------------------------------------

    async def export_metadata(
        self,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        topics: bool = True,
        groups: bool = True,
        special_topics: bool = False,
    ) -> dict[str, Any]:
        """User topics and groups as mqadmin ``exportMetadata`` writes them (a JSON-ready document)."""
        return await export.export_metadata(
            self.rpc,
            cluster=cluster,
            broker_addr=broker_addr,
            topics=topics,
            groups=groups,
            special_topics=special_topics,
        )

    async def export_configs(self, cluster: str) -> dict[str, Any]:
        """Broker settings and cluster scale as mqadmin ``exportConfigs`` writes them."""
        return await export.export_configs(self.rpc, cluster)

    async def export_metrics(self, cluster: str) -> dict[str, Any]:
        """Per-master figures and cluster totals as mqadmin ``exportMetrics`` writes them."""
        return await export.export_metrics(self.rpc, cluster)

    # -- statistics -------------------------------------------------------------------------------------

    async def view_broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        return await stats.view_broker_stats(self.rpc, broker_addr, stats_name, stats_key)

    async def topic_stats(self, topic: str, *, active_only: bool = False) -> list[TopicGroupStats]:
        """mqadmin ``statsAll``'s lines for one topic: rates in and out per consuming group, backlog."""
        return await stats.topic_stats(self.rpc, topic, active_only=active_only)

    # -- send round trips --------------------------------------------------------------------------------

    def _credentials(self) -> rt.SendCredentials:
        access_key, secret_key, _token, timeout_ms, _ssl, _serialize = self._settings
        return SendCredentials(self.namesrv_addresses, access_key, secret_key, timeout_ms)

    async def check_send_rt(self, topic: str, amount: int = 100, size: int = 128) -> SendRtReport:
        """Timed sends to the topic's queues in turn (mqadmin ``checkMsgSendRT``); they are real messages."""
        return await rt.check_send_rt(self._credentials(), topic, amount, size)

    async def send_status(self, broker_name: str, count: int = 1, size: int = 128) -> SendRtReport:
        return await rt.send_status(self._credentials(), broker_name, count, size)

    async def cluster_rt(
        self, cluster: str | None = None, amount: int = 100, size: int = 128
    ) -> list[BrokerRt]:
        return await rt.cluster_rt(self.rpc, self._credentials(), cluster, amount, size)
