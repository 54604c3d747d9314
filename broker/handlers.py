"""The broker's handler table: which processor answers which request code, built from the broker's parts.

Each processor is given, by name, the parts it uses and nothing else, so this module is the one place where
the wiring is visible. The broker wraps every handler of the table (bad-request answers, ACL, the send gate)
and registers it; nothing here knows about servers or lifecycles.
"""

from __future__ import annotations

from broker.parts import BrokerParts
from broker.processors.acl_admin import (
    DeleteAccessConfigProcessor,
    GetAclConfigProcessor,
    GetAclVersionProcessor,
    UpdateAccessConfigProcessor,
    UpdateGlobalWhiteAddrsProcessor,
)
from broker.processors.auth_admin import (
    CreateAclProcessor,
    CreateUserProcessor,
    DeleteAclProcessor,
    DeleteUserProcessor,
    GetAclProcessor,
    GetUserProcessor,
    ListAclsProcessor,
    ListUsersProcessor,
    UpdateAclProcessor,
    UpdateUserProcessor,
)
from broker.processors.broker_admin import (
    GetBrokerConfigProcessor,
    GetBrokerRuntimeInfoProcessor,
    UpdateBrokerConfigProcessor,
)
from broker.processors.client_manage import (
    CheckClientConfigProcessor,
    HeartbeatProcessor,
    UnregisterClientProcessor,
)
from broker.processors.consume_queue_view import QueryConsumeQueueProcessor
from broker.processors.consumer_admin import (
    GetConsumerConnectionListProcessor,
    GetConsumeStatsProcessor,
    QueryTopicConsumeByWhoProcessor,
)
from broker.processors.consumer_manage import (
    GetConsumerListByGroupProcessor,
    QueryConsumerOffsetProcessor,
    UpdateConsumerOffsetProcessor,
)
from broker.processors.consumer_relay import ConsumerRelayProcessor
from broker.processors.end_transaction import EndTransactionProcessor
from broker.processors.group_admin import (
    CloneGroupOffsetProcessor,
    DeleteSubscriptionGroupProcessor,
    GetBrokerConsumeStatsProcessor,
    GetSubscriptionGroupConfigProcessor,
    UpdateAndCreateSubscriptionGroupProcessor,
)
from broker.processors.ha_status import GetBrokerHaStatusProcessor
from broker.processors.offset_export import (
    GetAllConsumerOffsetProcessor,
    GetAllDelayOffsetProcessor,
    GetAllSubscriptionGroupProcessor,
)
from broker.processors.pop import (
    AckMessageProcessor,
    ChangeInvisibleTimeProcessor,
    NotificationProcessor,
    PopMessageProcessor,
)
from broker.processors.pop_assignment import (
    GetAllMessageRequestModeProcessor,
    QueryAssignmentProcessor,
    SetMessageRequestModeProcessor,
)
from broker.processors.producer_admin import GetAllProducerInfoProcessor, GetProducerConnectionListProcessor
from broker.processors.pull import PullMessageProcessor
from broker.processors.query import QueryMessageProcessor, ViewMessageByIdProcessor
from broker.processors.queue_lock import LockBatchMqProcessor, UnlockBatchMqProcessor
from broker.processors.queue_offsets import (
    GetEarliestMsgStoretimeProcessor,
    GetMaxOffsetProcessor,
    GetMinOffsetProcessor,
    SearchOffsetProcessor,
)
from broker.processors.recall import RecallMessageProcessor
from broker.processors.reply import ReplyMessageProcessor
from broker.processors.reset_offset import ResetOffsetProcessor
from broker.processors.send import SendMessageProcessor
from broker.processors.send_back import ConsumerSendMsgBackProcessor
from broker.processors.stats_view import ViewBrokerStatsDataProcessor
from broker.processors.store_admin import (
    CleanExpiredConsumeQueueProcessor,
    CleanUnusedTopicProcessor,
    DeleteExpiredCommitLogProcessor,
)
from broker.processors.timer_admin import GetTimerCheckPointProcessor, GetTimerMetricsProcessor
from broker.processors.topic_admin import (
    DeleteTopicProcessor,
    GetAllTopicConfigProcessor,
    GetTopicConfigProcessor,
    GetTopicStatsInfoProcessor,
    UpdateAndCreateTopicProcessor,
)
from rocketmq_wire import RequestCode
from rocketmq_wire.transport import Handler


def build_handlers(parts: BrokerParts, *, pull: PullMessageProcessor) -> dict[int, Handler]:
    """Request code -> handler for every code the broker serves.

    ``pull`` is made by the broker beforehand: it and the long-polling service refer to each other (the
    processor holds pulls there, the service hands them back to it), so it exists before the table does.
    """
    config, storage, metadata = parts.config, parts.storage, parts.metadata
    clients, services = parts.clients, parts.services
    store, topics, groups, offsets = storage.store, metadata.topics, metadata.groups, metadata.offsets
    consumers, producers = clients.consumers, clients.producers
    announcer = services.announcer
    send = SendMessageProcessor(
        config=config,
        topics=topics,
        groups=groups,
        messages=storage.messages,
        schedule=storage.schedule,
        transactions=storage.transactions,
        unique_ids=services.unique_ids,
        announcer=announcer,
        timer=storage.timer,
        stats=parts.stats,
    )
    ack = AckMessageProcessor(topics=topics, store=store, pop=services.pop)
    reply = ReplyMessageProcessor(
        config=config,
        clock=parts.clock,
        topics=topics,
        messages=storage.messages,
        producers=producers,
        channel=clients.channel,
    )
    relay = ConsumerRelayProcessor(config=config, consumers=consumers, store=store, channel=clients.channel)
    return {
        # producing and consuming
        RequestCode.SEND_MESSAGE: send,
        RequestCode.SEND_MESSAGE_V2: send,
        RequestCode.SEND_BATCH_MESSAGE: send,
        RequestCode.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackProcessor(
            config=config,
            topics=topics,
            groups=groups,
            store=store,
            messages=storage.messages,
            schedule=storage.schedule,
            announcer=announcer,
            stats=parts.stats,
        ),
        RequestCode.SEND_REPLY_MESSAGE: reply,
        RequestCode.SEND_REPLY_MESSAGE_V2: reply,
        RequestCode.PULL_MESSAGE: pull,
        RequestCode.LITE_PULL_MESSAGE: pull,
        RequestCode.RECALL_MESSAGE: RecallMessageProcessor(
            config=config, topics=topics, messages=storage.messages, timer=storage.timer
        ),
        RequestCode.POP_MESSAGE: PopMessageProcessor(
            config=config,
            clock=parts.clock,
            topics=topics,
            groups=groups,
            pop=services.pop,
            filters=services.filters,
            stats=parts.stats,
        ),
        RequestCode.NOTIFICATION: NotificationProcessor(
            config=config, topics=topics, groups=groups, pop=services.pop
        ),
        RequestCode.SET_MESSAGE_REQUEST_MODE: SetMessageRequestModeProcessor(
            topics=topics, groups=groups, request_modes=services.request_modes
        ),
        RequestCode.QUERY_ASSIGNMENT: QueryAssignmentProcessor(
            config=config, topics=topics, consumers=consumers, request_modes=services.request_modes
        ),
        RequestCode.ACK_MESSAGE: ack,
        RequestCode.BATCH_ACK_MESSAGE: ack,
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME: ChangeInvisibleTimeProcessor(
            clock=parts.clock, topics=topics, store=store, pop=services.pop
        ),
        RequestCode.END_TRANSACTION: EndTransactionProcessor(
            config=config, transactions=storage.transactions, timer=storage.timer
        ),
        # consumer groups and their offsets
        RequestCode.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetProcessor(offsets=offsets, store=store),
        RequestCode.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetProcessor(offsets=offsets),
        RequestCode.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupProcessor(consumers=consumers),
        RequestCode.LOCK_BATCH_MQ: LockBatchMqProcessor(locks=clients.locks),
        RequestCode.UNLOCK_BATCH_MQ: UnlockBatchMqProcessor(locks=clients.locks),
        RequestCode.HEART_BEAT: HeartbeatProcessor(
            config=config,
            clock=parts.clock,
            topics=topics,
            groups=groups,
            consumers=consumers,
            producers=producers,
            announcer=announcer,
        ),
        RequestCode.UNREGISTER_CLIENT: UnregisterClientProcessor(
            config=config, groups=groups, consumers=consumers, producers=producers
        ),
        RequestCode.CHECK_CLIENT_CONFIG: CheckClientConfigProcessor(config=config, filters=services.filters),
        # queue bounds and stored messages
        RequestCode.GET_MIN_OFFSET: GetMinOffsetProcessor(store=store),
        RequestCode.GET_MAX_OFFSET: GetMaxOffsetProcessor(store=store),
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetProcessor(store=store),
        RequestCode.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeProcessor(store=store),
        RequestCode.QUERY_MESSAGE: QueryMessageProcessor(config=config, store=store),
        RequestCode.VIEW_MESSAGE_BY_ID: ViewMessageByIdProcessor(store=store),
        RequestCode.QUERY_CONSUME_QUEUE: QueryConsumeQueueProcessor(consumers=consumers, store=store),
        # topic administration
        RequestCode.UPDATE_AND_CREATE_TOPIC: UpdateAndCreateTopicProcessor(
            config=config, topics=topics, announcer=announcer, stats=parts.stats
        ),
        RequestCode.DELETE_TOPIC_IN_BROKER: DeleteTopicProcessor(config=config, topics=topics, store=store),
        RequestCode.GET_ALL_TOPIC_CONFIG: GetAllTopicConfigProcessor(topics=topics),
        RequestCode.GET_TOPIC_CONFIG: GetTopicConfigProcessor(topics=topics),
        RequestCode.GET_TOPIC_STATS_INFO: GetTopicStatsInfoProcessor(
            config=config, topics=topics, store=store
        ),
        # the broker itself
        RequestCode.GET_BROKER_RUNTIME_INFO: GetBrokerRuntimeInfoProcessor(
            config=config,
            stats=parts.stats,
            store=store,
            send_flow_control=services.send_flow_control,
            pull_holder=services.pull_holder,
        ),
        RequestCode.GET_BROKER_CONFIG: GetBrokerConfigProcessor(
            config=config, config_version=parts.config_version
        ),
        RequestCode.UPDATE_BROKER_CONFIG: UpdateBrokerConfigProcessor(
            config=config, announcer=announcer, on_config_changed=parts.on_config_changed
        ),
        RequestCode.GET_BROKER_HA_STATUS: GetBrokerHaStatusProcessor(ha=services.ha),
        RequestCode.VIEW_BROKER_STATS_DATA: ViewBrokerStatsDataProcessor(),
        RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: CleanExpiredConsumeQueueProcessor(store=store),
        RequestCode.DELETE_EXPIRED_COMMITLOG: DeleteExpiredCommitLogProcessor(store=store),
        RequestCode.CLEAN_UNUSED_TOPIC: CleanUnusedTopicProcessor(topics=topics, store=store),
        # who consumes and produces, as admin tools ask
        RequestCode.GET_CONSUME_STATS: GetConsumeStatsProcessor(
            config=config, topics=topics, offsets=offsets, consumers=consumers, store=store
        ),
        RequestCode.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListProcessor(consumers=consumers),
        RequestCode.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListProcessor(producers=producers),
        RequestCode.GET_ALL_PRODUCER_INFO: GetAllProducerInfoProcessor(producers=producers),
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: QueryTopicConsumeByWhoProcessor(
            consumers=consumers, offsets=offsets
        ),
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetProcessor(
            config=config,
            topics=topics,
            offsets=offsets,
            consumers=consumers,
            store=store,
            channel=clients.channel,
        ),
        RequestCode.GET_CONSUMER_RUNNING_INFO: relay,
        RequestCode.CONSUME_MESSAGE_DIRECTLY: relay,
        # subscription groups
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: UpdateAndCreateSubscriptionGroupProcessor(
            config=config, groups=groups, stats=parts.stats
        ),
        RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: GetSubscriptionGroupConfigProcessor(groups=groups),
        RequestCode.DELETE_SUBSCRIPTIONGROUP: DeleteSubscriptionGroupProcessor(
            config=config, groups=groups, offsets=offsets
        ),
        RequestCode.CLONE_GROUP_OFFSET: CloneGroupOffsetProcessor(
            topics=topics, offsets=offsets, consumers=consumers
        ),
        RequestCode.GET_BROKER_CONSUME_STATS: GetBrokerConsumeStatsProcessor(
            config=config, topics=topics, groups=groups, offsets=offsets, consumers=consumers, store=store
        ),
        # whole tables, as admin tools and slaves fetch them
        RequestCode.GET_ALL_CONSUMER_OFFSET: GetAllConsumerOffsetProcessor(offsets=offsets),
        RequestCode.GET_ALL_DELAY_OFFSET: GetAllDelayOffsetProcessor(schedule=storage.schedule),
        RequestCode.GET_TIMER_CHECK_POINT: GetTimerCheckPointProcessor(timer=storage.timer),
        RequestCode.GET_TIMER_METRICS: GetTimerMetricsProcessor(timer=storage.timer),
        RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: GetAllSubscriptionGroupProcessor(groups=groups),
        RequestCode.GET_ALL_MESSAGE_REQUEST_MODE: GetAllMessageRequestModeProcessor(
            request_modes=services.request_modes
        ),
        # ACL administration
        RequestCode.UPDATE_AND_CREATE_ACL_CONFIG: UpdateAccessConfigProcessor(acl=services.acl),
        RequestCode.DELETE_ACL_CONFIG: DeleteAccessConfigProcessor(acl=services.acl),
        RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG: UpdateGlobalWhiteAddrsProcessor(acl=services.acl),
        RequestCode.GET_BROKER_CLUSTER_ACL_INFO: GetAclVersionProcessor(acl=services.acl, config=config),
        RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: GetAclConfigProcessor(acl=services.acl),
        # ACL 2.0 administration (users and policies)
        RequestCode.AUTH_CREATE_USER: CreateUserProcessor(auth=services.auth),
        RequestCode.AUTH_UPDATE_USER: UpdateUserProcessor(auth=services.auth),
        RequestCode.AUTH_DELETE_USER: DeleteUserProcessor(auth=services.auth),
        RequestCode.AUTH_GET_USER: GetUserProcessor(auth=services.auth),
        RequestCode.AUTH_LIST_USER: ListUsersProcessor(auth=services.auth),
        RequestCode.AUTH_CREATE_ACL: CreateAclProcessor(auth=services.auth),
        RequestCode.AUTH_UPDATE_ACL: UpdateAclProcessor(auth=services.auth),
        RequestCode.AUTH_DELETE_ACL: DeleteAclProcessor(auth=services.auth),
        RequestCode.AUTH_GET_ACL: GetAclProcessor(auth=services.auth),
        RequestCode.AUTH_LIST_ACL: ListAclsProcessor(auth=services.auth),
    }
