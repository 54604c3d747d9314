"""The admin client for code that is not async: :class:`~admin.Admin` on its own loop in a thread.

Same construction arguments, same methods, same results and errors; each call blocks until the answer is
in. It runs on a loop thread of its own (``rocketmq_wire.transport.loop_thread``), so it works whether or
not the caller runs a loop of its own.
"""

from __future__ import annotations

import ssl as ssl_module
from collections.abc import Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from admin.acl import AclVersionInfo
from admin.admin import DEFAULT_TIMEOUT_MS, Admin
from admin.errors import AdminError
from admin.groups import GroupConfigOnBroker, GroupDeleted, OffsetCloned
from admin.lite import BrokerAnswer, LiteGroupLag
from admin.messages import ConsumeQueueAnswer
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
from admin.rt import BrokerRt, SendRtReport
from admin.stats import TopicGroupStats
from admin.topics import DEFAULT_PERM, DEFAULT_QUEUE_NUMS
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
from rocketmq_wire.headers.base import JAVA_LONG_MAX as LONG_MAX
from rocketmq_wire.message import MessageExt
from rocketmq_wire.topics import TOOLS_CONSUMER_GROUP, TRACE_TOPIC
from rocketmq_wire.trace import TraceContext
from rocketmq_wire.transport.loop_thread import BlockingRunner

T = TypeVar("T")


class BlockingAdmin:
    """:class:`~admin.Admin` with blocking methods: ``with BlockingAdmin("ns:9876") as admin: ...``."""

    def __init__(
        self,
        namesrv: str | Sequence[str],
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        security_token: str | None = None,
        timeout_ms: float = DEFAULT_TIMEOUT_MS,
        ssl: ssl_module.SSLContext | None = None,
    ) -> None:
        self._admin = Admin(
            namesrv,
            access_key=access_key,
            secret_key=secret_key,
            security_token=security_token,
            timeout_ms=timeout_ms,
            ssl=ssl,
        )
        self._runner = BlockingRunner("rocketmq-admin", lambda why: AdminError(f"the admin client: {why}"))

    @property
    def admin(self) -> Admin:
        """The asyncio client underneath (use it only from its own loop)."""
        return self._admin

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        self._runner.start(self._admin.start)

    def close(self) -> None:
        """Close the connections and stop the thread; idempotent."""
        self._runner.stop(self._admin.close)

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._runner.run(coro)

    # -- NameServer ------------------------------------------------------------------------------------

    def cluster_info(self) -> ClusterInfo:
        return self._run(self._admin.cluster_info())

    def brokers(self, cluster_name: str | None = None, *, masters_only: bool = False) -> list[BrokerAddress]:
        return self._run(self._admin.brokers(cluster_name, masters_only=masters_only))

    def topic_route(self, topic: str) -> TopicRouteData:
        return self._run(self._admin.topic_route(topic))

    def topic_list(self) -> list[str]:
        return self._run(self._admin.topic_list())

    def kv_get(self, namespace: str, key: str) -> str | None:
        return self._run(self._admin.kv_get(namespace, key))

    def kv_list(self, namespace: str) -> dict[str, str]:
        return self._run(self._admin.kv_list(namespace))

    def kv_put(self, namespace: str, key: str, value: str) -> list[str]:
        return self._run(self._admin.kv_put(namespace, key, value))

    def kv_delete(self, namespace: str, key: str) -> list[str]:
        return self._run(self._admin.kv_delete(namespace, key))

    def wipe_write_perm(self, broker_name: str) -> list[WritePermChange]:
        return self._run(self._admin.wipe_write_perm(broker_name))

    def add_write_perm(self, broker_name: str) -> list[WritePermChange]:
        return self._run(self._admin.add_write_perm(broker_name))

    def namesrv_config(self, addrs: Sequence[str] | None = None) -> dict[str, dict[str, str]]:
        return self._run(self._admin.namesrv_config(addrs))

    def update_namesrv_config(self, settings: Mapping[str, str]) -> list[str]:
        return self._run(self._admin.update_namesrv_config(settings))

    def order_conf(self, topic: str) -> str | None:
        return self._run(self._admin.order_conf(topic))

    def update_order_conf(self, topic: str, layout: str | None) -> list[str]:
        return self._run(self._admin.update_order_conf(topic, layout))

    def topic_clusters(self, topic: str) -> list[str]:
        return self._run(self._admin.topic_clusters(topic))

    # -- topics ----------------------------------------------------------------------------------------

    def create_topic(
        self,
        topic: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        read_queue_nums: int = DEFAULT_QUEUE_NUMS,
        write_queue_nums: int = DEFAULT_QUEUE_NUMS,
        perm: int = DEFAULT_PERM,
        order: bool = False,
        attributes: Mapping[str, str] | None = None,
        remove_attributes: Sequence[str] = (),
    ) -> list[str]:
        return self._run(
            self._admin.create_topic(
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
        )

    def delete_topic(self, topic: str, *, cluster: str | None = None) -> TopicDeleted:
        return self._run(self._admin.delete_topic(topic, cluster=cluster))

    def topic_status(self, topic: str) -> TopicStatus:
        return self._run(self._admin.topic_status(topic))

    def update_topic_perm(
        self, topic: str, perm: int, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return self._run(self._admin.update_topic_perm(topic, perm, cluster=cluster, broker_addr=broker_addr))

    # -- brokers ---------------------------------------------------------------------------------------

    def broker_runtime_stats(self, broker_addr: str) -> dict[str, str]:
        return self._run(self._admin.broker_runtime_stats(broker_addr))

    def broker_config(self, broker_addr: str) -> dict[str, str]:
        return self._run(self._admin.broker_config(broker_addr))

    def update_broker_config(self, broker_addr: str, settings: Mapping[str, str]) -> None:
        self._run(self._admin.update_broker_config(broker_addr, settings))

    def clean_expired_consume_queue(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return self._run(self._admin.clean_expired_consume_queue(cluster=cluster, broker_addr=broker_addr))

    def delete_expired_commit_log(
        self, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return self._run(self._admin.delete_expired_commit_log(cluster=cluster, broker_addr=broker_addr))

    def clean_unused_topic(self, *, cluster: str | None = None, broker_addr: str | None = None) -> list[str]:
        return self._run(self._admin.clean_unused_topic(cluster=cluster, broker_addr=broker_addr))

    # -- groups ----------------------------------------------------------------------------------------

    def consumer_progress(self, group: str, topic: str | None = None) -> ConsumerProgress:
        return self._run(self._admin.consumer_progress(group, topic))

    def consumer_connections(self, group: str) -> ConsumerConnections:
        return self._run(self._admin.consumer_connections(group))

    def consumer_running_info(self, group: str, client_id: str, jstack: bool = False) -> ConsumerRunningInfo:
        return self._run(self._admin.consumer_running_info(group, client_id, jstack))

    def producer_connections(self, group: str, topic: str) -> list[ClientConnection]:
        return self._run(self._admin.producer_connections(group, topic))

    def producer_table(self, broker_addr: str) -> ProducerTableInfo:
        return self._run(self._admin.producer_table(broker_addr))

    def update_subscription_group(
        self, config: SubscriptionGroupConfig, *, cluster: str | None = None, broker_addr: str | None = None
    ) -> list[str]:
        return self._run(
            self._admin.update_subscription_group(config, cluster=cluster, broker_addr=broker_addr)
        )

    def delete_subscription_group(
        self,
        group: str,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        remove_offset: bool = False,
    ) -> GroupDeleted:
        return self._run(
            self._admin.delete_subscription_group(
                group, cluster=cluster, broker_addr=broker_addr, remove_offset=remove_offset
            )
        )

    def subscription_group_configs(self, group: str) -> list[GroupConfigOnBroker]:
        return self._run(self._admin.subscription_group_configs(group))

    def broker_consume_stats(self, broker_addr: str, *, order_only: bool = False) -> ConsumeStatsList:
        return self._run(self._admin.broker_consume_stats(broker_addr, order_only=order_only))

    def clone_group_offset(self, src_group: str, dest_group: str, topic: str) -> list[OffsetCloned]:
        return self._run(self._admin.clone_group_offset(src_group, dest_group, topic))

    def allocate_queues(
        self, topic: str, client_ids: Sequence[str], strategy: str = "averagely"
    ) -> dict[str, list[MessageQueue]]:
        return self._run(self._admin.allocate_queues(topic, client_ids, strategy))

    def skip_accumulated(self, group: str, topic: str, *, force: bool = True) -> list[OffsetReset]:
        return self._run(self._admin.skip_accumulated(group, topic, force=force))

    def update_consumer_offset(
        self, group: str, topic: str, queue_id: int, offset: int, *, broker_name: str | None = None
    ) -> str:
        return self._run(
            self._admin.update_consumer_offset(group, topic, queue_id, offset, broker_name=broker_name)
        )

    def reset_offset_by_time(
        self, group: str, topic: str, timestamp_ms: int, *, force: bool = True
    ) -> list[OffsetReset]:
        return self._run(self._admin.reset_offset_by_time(group, topic, timestamp_ms, force=force))

    # -- messages --------------------------------------------------------------------------------------

    def view_message(self, offset_msg_id: str, topic: str | None = None) -> MessageExt:
        return self._run(self._admin.view_message(offset_msg_id, topic))

    def get_message(self, msg_id: str, topic: str | None = None) -> MessageExt:
        return self._run(self._admin.get_message(msg_id, topic))

    def query_by_key(
        self, topic: str, key: str, *, max_num: int | None = None, begin_ms: int = 0, end_ms: int = LONG_MAX
    ) -> list[MessageExt]:
        return self._run(
            self._admin.query_by_key(topic, key, max_num=max_num, begin_ms=begin_ms, end_ms=end_ms)
        )

    def query_by_unique_key(self, topic: str, unique_key: str) -> list[MessageExt]:
        return self._run(self._admin.query_by_unique_key(topic, unique_key))

    def query_trace(self, msg_id: str, trace_topic: str = TRACE_TOPIC) -> list[TraceContext]:
        return self._run(self._admin.query_trace(msg_id, trace_topic))

    def pull(
        self,
        topic: str,
        queue_id: int,
        offset: int,
        *,
        broker_name: str | None = None,
        max_nums: int = 32,
        group: str = TOOLS_CONSUMER_GROUP,
    ) -> PullResult:
        return self._run(
            self._admin.pull(topic, queue_id, offset, broker_name=broker_name, max_nums=max_nums, group=group)
        )

    def message_at(
        self, topic: str, queue_id: int, offset: int, *, broker_name: str | None = None
    ) -> MessageExt:
        return self._run(self._admin.message_at(topic, queue_id, offset, broker_name=broker_name))

    def consume_messages(
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
        """``on_queue`` is called on the client's loop thread (keep it short)."""
        return self._run(
            self._admin.consume_messages(
                topic,
                broker_name=broker_name,
                queue_id=queue_id,
                offset=offset,
                begin_ms=begin_ms,
                end_ms=end_ms,
                count=count,
                on_queue=on_queue,
            )
        )

    def query_consume_queue(
        self,
        topic: str,
        queue_id: int,
        *,
        index: int = 0,
        count: int = 10,
        group: str | None = None,
        broker_addr: str | None = None,
    ) -> list[ConsumeQueueAnswer]:
        return self._run(
            self._admin.query_consume_queue(
                topic, queue_id, index=index, count=count, group=group, broker_addr=broker_addr
            )
        )

    def messages_in_range(
        self,
        topic: str,
        queue_id: int,
        begin: int,
        end: int | None = None,
        *,
        broker_name: str | None = None,
        expression: str = "*",
    ) -> list[MessageExt]:
        return self._run(
            self._admin.messages_in_range(
                topic, queue_id, begin, end, broker_name=broker_name, expression=expression
            )
        )

    # -- export -----------------------------------------------------------------------------------------

    def export_metadata(
        self,
        *,
        cluster: str | None = None,
        broker_addr: str | None = None,
        topics: bool = True,
        groups: bool = True,
        special_topics: bool = False,
    ) -> dict[str, Any]:
        return self._run(
            self._admin.export_metadata(
                cluster=cluster,
                broker_addr=broker_addr,
                topics=topics,
                groups=groups,
                special_topics=special_topics,
            )
        )

    def export_configs(self, cluster: str) -> dict[str, Any]:
        return self._run(self._admin.export_configs(cluster))

    def export_metrics(self, cluster: str) -> dict[str, Any]:
        return self._run(self._admin.export_metrics(cluster))

    # -- statistics -------------------------------------------------------------------------------------

    def view_broker_stats(self, broker_addr: str, stats_name: str, stats_key: str) -> BrokerStatsData:
        return self._run(self._admin.view_broker_stats(broker_addr, stats_name, stats_key))

    def topic_stats(self, topic: str, *, active_only: bool = False) -> list[TopicGroupStats]:
        return self._run(self._admin.topic_stats(topic, active_only=active_only))

    # -- send round trips --------------------------------------------------------------------------------

    def check_send_rt(self, topic: str, amount: int = 100, size: int = 128) -> SendRtReport:
        return self._run(self._admin.check_send_rt(topic, amount, size))

    def send_status(self, broker_name: str, count: int = 1, size: int = 128) -> SendRtReport:
        return self._run(self._admin.send_status(broker_name, count, size))

    def cluster_rt(self, cluster: str | None = None, amount: int = 100, size: int = 128) -> list[BrokerRt]:
        return self._run(self._admin.cluster_rt(cluster, amount, size))

    # -- RocketMQ 5: consume modes, LiteTopic, ACL 2.0 users and policies; the 4.9 plain ACL --------------

    def acl_config(self, broker_addr: str) -> GetBrokerClusterAclConfigResponseBody:
        return self._run(self._admin.acl_config(broker_addr))

    def acl_version(self, broker_addr: str) -> AclVersionInfo:
        return self._run(self._admin.acl_version(broker_addr))

    def broker_lite_info(self, broker_addr: str) -> GetBrokerLiteInfoResponseBody:
        return self._run(self._admin.broker_lite_info(broker_addr))

    def cluster_lite_info(self, cluster: str) -> list[BrokerAnswer[GetBrokerLiteInfoResponseBody]]:
        return self._run(self._admin.cluster_lite_info(cluster))

    def consume_modes(self, broker_addr: str) -> dict[str, dict[str, SetMessageRequestModeRequestBody]]:
        return self._run(self._admin.consume_modes(broker_addr))

    def create_acl(self, broker_addr: str, acl_info: AclInfo) -> None:
        self._run(self._admin.create_acl(broker_addr, acl_info))

    def create_user(self, broker_addr: str, user: UserInfo) -> None:
        self._run(self._admin.create_user(broker_addr, user))

    def delete_acl(self, broker_addr: str, subject: str, resource: str | None = None) -> None:
        self._run(self._admin.delete_acl(broker_addr, subject, resource))

    def delete_acl_account(self, broker_addr: str, access_key: str) -> None:
        self._run(self._admin.delete_acl_account(broker_addr, access_key))

    def delete_user(self, broker_addr: str, username: str) -> None:
        self._run(self._admin.delete_user(broker_addr, username))

    def get_acl(self, broker_addr: str, subject: str) -> AclInfo | None:
        return self._run(self._admin.get_acl(broker_addr, subject))

    def get_user(self, broker_addr: str, username: str) -> UserInfo | None:
        return self._run(self._admin.get_user(broker_addr, username))

    def list_acls(
        self, broker_addr: str, subject_filter: str | None = None, resource_filter: str | None = None
    ) -> list[AclInfo]:
        return self._run(self._admin.list_acls(broker_addr, subject_filter, resource_filter))

    def list_users(self, broker_addr: str, name_filter: str | None = None) -> list[UserInfo]:
        return self._run(self._admin.list_users(broker_addr, name_filter))

    def lite_client_info(
        self, parent_topic: str, group: str, client_id: str, max_count: int = 1000
    ) -> list[BrokerAnswer[GetLiteClientInfoResponseBody]]:
        return self._run(self._admin.lite_client_info(parent_topic, group, client_id, max_count))

    def lite_group_info(
        self, parent_topic: str, group: str, lite_topic: str | None = None, top_k: int = 20
    ) -> LiteGroupLag:
        return self._run(self._admin.lite_group_info(parent_topic, group, lite_topic, top_k))

    def lite_topic_info(
        self, parent_topic: str, lite_topic: str
    ) -> list[BrokerAnswer[GetLiteTopicInfoResponseBody]]:
        return self._run(self._admin.lite_topic_info(parent_topic, lite_topic))

    def parent_topic_info(self, topic: str) -> list[BrokerAnswer[GetParentTopicInfoResponseBody]]:
        return self._run(self._admin.parent_topic_info(topic))

    def set_consume_mode(
        self,
        topic: str,
        group: str,
        mode: MessageRequestMode | str,
        *,
        pop_share_queue_num: int = 0,
        cluster: str | None = None,
        broker_addr: str | None = None,
    ) -> list[str]:
        return self._run(
            self._admin.set_consume_mode(
                topic,
                group,
                mode,
                pop_share_queue_num=pop_share_queue_num,
                cluster=cluster,
                broker_addr=broker_addr,
            )
        )

    def topic_config(self, topic: str, broker_addr: str) -> TopicConfig:
        return self._run(self._admin.topic_config(topic, broker_addr))

    def trigger_lite_dispatch(
        self, parent_topic: str, group: str, client_id: str | None = None, broker_name: str | None = None
    ) -> list[BrokerAnswer[None]]:
        return self._run(self._admin.trigger_lite_dispatch(parent_topic, group, client_id, broker_name))

    def update_acl(self, broker_addr: str, acl_info: AclInfo) -> None:
        self._run(self._admin.update_acl(broker_addr, acl_info))

    def update_acl_account(self, broker_addr: str, account: PlainAccessConfig) -> None:
        self._run(self._admin.update_acl_account(broker_addr, account))

    def update_global_white_addrs(
        self, broker_addr: str, addresses: Sequence[str], acl_file: str | None = None
    ) -> str:
        return self._run(self._admin.update_global_white_addrs(broker_addr, addresses, acl_file))

    def update_user(self, broker_addr: str, user: UserInfo) -> None:
        self._run(self._admin.update_user(broker_addr, user))
